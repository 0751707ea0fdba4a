package mwrs

import (
	"os"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// seedFile is the documented replica set (concepts.txt §3.2) as written: it spells the rollout
// type "rolloutType:", which Flotilla reads when type is All or unset (OCM's field is "type").
const seedFile = "../testdata/seeds/work-concepts-13-manifestworkreplicaset.yaml"

var _ = Describe("The seeds' ManifestWorkReplicaSet", func() {
	It("rolls out over three placements with the status the seeds show", func(ctx SpecContext) {
		const ns, set, rs = "ocm-ns", "mwrs-seeds", "mwrset-cronjob"
		const all, prog, ppg = "placement-rollout-all", "placement-rollout-progressive", "placement-rollout-progressive-per-group"
		seed, err := os.ReadFile(seedFile)
		Expect(err).NotTo(HaveOccurred())

		namespace(ctx, ns)
		bind(ctx, ns, set)
		// The seeds' numbers: 10 clusters for All, 30 for Progressive (10 prod-canary-west,
		// 10 prod-canary-east, 10 more), 20 for ProgressivePerGroup (groups of 5).
		allCs, west, east, others, ppgCs := names("seed-all", 10), names("seed-west", 10), names("seed-east", 10), names("seed-prog", 10), names("seed-ppg", 20)
		clusters(ctx, set, slices.Concat(sims(allCs, "rollout", "all"),
			sims(west, "rollout", "progressive", "prod-canary-west", "true"), sims(east, "rollout", "progressive", "prod-canary-east", "true"),
			sims(others, "rollout", "progressive"), sims(ppgCs, "rollout", "per-group"))...)
		placement(ctx, ns, all, set, []string{"rollout", "all"}, "")
		// The decision strategy of concepts.txt §4.1.
		placement(ctx, ns, prog, set, []string{"rollout", "progressive"}, `decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 150
      decisionGroups:
      - groupName: prod-canary-west
        groupClusterSelector:
          labelSelector:
            matchExpressions:
              - key: prod-canary-west
                operator: Exists
      - groupName: prod-canary-east
        groupClusterSelector:
          labelSelector:
            matchExpressions:
              - key: prod-canary-east
                operator: Exists`)
		placement(ctx, ns, ppg, set, []string{"rollout", "per-group"}, `decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 5}}`)
		decided(ctx, ns, all, allCs)
		Expect(decided(ctx, ns, prog, sorted(west, east, others))).To(Equal(map[int][]string{0: west, 1: east, 2: others}))
		ppgGroups := decided(ctx, ns, ppg, ppgCs)
		Expect(ppgGroups).To(HaveLen(4))

		By("accepting the seed as written, with strict field validation as kubectl applies it")
		verbatim := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(seed, &verbatim.Object)).To(Succeed())
		Expect(hubClient.Create(ctx, verbatim.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))).To(Succeed())
		refs, _, _ := unstructured.NestedSlice(verbatim.Object, "spec", "placementRefs")
		Expect(refs).To(HaveLen(3))
		for _, r := range refs {
			Expect(r).To(HaveKeyWithValue("rolloutStrategy", HaveKey("rolloutType")))
		}

		By("creating the seed")
		a := startAgent(ns, rs, succeed, nil)
		apply(ctx, string(seed))

		By("holding the progressive placement after its first mandatory group for minSuccessTime (5m)")
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(r.Status.PlacementsSummary).To(Equal([]workv1alpha1.PlacementSummary{
				{Name: all, AvailableDecisionGroups: "1 (10 / 10 clusters applied)", Summary: workv1alpha1.ManifestWorkReplicaSetSummary{Total: 10, Applied: 10, Available: 10, DesiredTotal: 10, Updated: 10}},
				{Name: prog, AvailableDecisionGroups: "3 (10 / 30 clusters applied)", Summary: workv1alpha1.ManifestWorkReplicaSetSummary{Total: 10, Applied: 10, Available: 10, DesiredTotal: 30, Updated: 10}},
				{Name: ppg, AvailableDecisionGroups: "4 (20 / 20 clusters applied)", Summary: workv1alpha1.ManifestWorkReplicaSetSummary{Total: 20, Applied: 20, Available: 20, DesiredTotal: 20, Updated: 20}},
			}))
			g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 40, Applied: 40, Available: 40, DesiredTotal: 60, Updated: 40}))
			g.Expect(r.Status.Conditions).To(ConsistOf(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, "True", workv1alpha1.ReasonAsExpected),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "False", workv1alpha1.ReasonProgressing),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "True", workv1alpha1.ReasonAsExpected),
			))
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut).Message).To(Equal(
				prog + `: progressing: 0 of 30 clusters succeeded, 10 within minSuccessTime, 20 to apply (0 now); rolling out decision group 0 "prod-canary-west"`))
		}).Should(Succeed())
		// The status as the seeds write it (field names and counts).
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(workv1alpha1.GroupVersion.WithKind("ManifestWorkReplicaSet"))
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: rs}, u)).To(Succeed())
		summaries, _, _ := unstructured.NestedSlice(u.Object, "status", "placementSummary")
		Expect(summaries).To(HaveLen(3))
		Expect(summaries[1]).To(And(HaveKeyWithValue("name", prog), HaveKeyWithValue("availableDecisionGroups", "3 (10 / 30 clusters applied)"),
			HaveKeyWithValue("summary", And(HaveKeyWithValue("applied", BeEquivalentTo(10)), HaveKeyWithValue("available", BeEquivalentTo(10)),
				HaveKeyWithValue("progressing", BeEquivalentTo(0)), HaveKeyWithValue("degraded", BeEquivalentTo(0)), HaveKeyWithValue("total", BeEquivalentTo(10))))))
		total, _, _ := unstructured.NestedMap(u.Object, "status", "summary")
		Expect(total).To(And(HaveKeyWithValue("applied", BeEquivalentTo(40)), HaveKeyWithValue("total", BeEquivalentTo(40))))
		Consistently(func() []string {
			var out []string
			for c, w := range works(ctx, ns, rs) {
				if w.Labels[workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey] == prog {
					out = append(out, c)
				}
			}
			return sorted(out)
		}).Should(Equal(west))

		By("going on once minSuccessTime is relaxed")
		Eventually(func() error {
			r := getRS(ctx, ns, rs)
			r.Spec.PlacementRefs[1].RolloutStrategy.Progressive.MinSuccessTime.Duration = 0
			return hubClient.Update(ctx, r)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(r.Status.Conditions).To(ConsistOf(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, "True", workv1alpha1.ReasonAsExpected),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "True", workv1alpha1.ReasonAsExpected),
			))
			g.Expect(r.Status.PlacementsSummary).To(HaveExactElements(
				HaveField("AvailableDecisionGroups", "1 (10 / 10 clusters applied)"),
				HaveField("AvailableDecisionGroups", "3 (30 / 30 clusters applied)"),
				HaveField("AvailableDecisionGroups", "4 (20 / 20 clusters applied)")))
			g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 60, Applied: 60, Available: 60, DesiredTotal: 60, Updated: 60}))
		}).Should(Succeed())

		By("having rolled out group by group")
		hs := hashes(ctx, ns, rs)
		Expect(hs).To(HaveLen(1))
		order := a.appeared(hs[0])
		before := func(first, then []string) {
			GinkgoHelper()
			last := -1
			for _, c := range first {
				last = max(last, slices.Index(order, c))
			}
			for _, c := range then {
				Expect(slices.Index(order, c)).To(BeNumerically(">", last), "%s got its work before %v were done", c, first)
			}
		}
		before(west, east)
		before(east, others)
		for i := range 3 {
			before(ppgGroups[i], ppgGroups[i+1])
		}
	}, SpecTimeout(5*time.Minute))
})
