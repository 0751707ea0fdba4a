package mwrs

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

var _ = Describe("Rollout type Progressive", func() {
	It("keeps at most maxConcurrency works in flight", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-prog", "mwrs-prog", "prog"
		cs := names("prog", 5)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "prog")...)
		placement(ctx, ns, "p", set, []string{"app", "prog"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, hold, nil)
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 2}}}"}, "")

		// Held by the agent, the first two clusters (by name) are in flight, and no more.
		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:2]))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:2]))
		hash := hashes(ctx, ns, rs)[0]
		Eventually(func() string { return rolledOut(ctx, ns, rs).Message }).Should(ContainSubstring("2 progressing, 3 to apply (0 now)"))

		// One succeeds: one more starts.
		a.set(succeed, cs[0])
		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:3]))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:3]))

		// All succeed as soon as they get their work: the rest goes through, two at a time.
		a.set(succeed, cs...)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
			g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 5, Applied: 5, Available: 5, DesiredTotal: 5, Updated: 5}))
		}).Should(Succeed())
		// In name order, but the works one reconcile admits together are written in parallel.
		got := a.appeared(hash)
		Expect(got).To(HaveLen(len(cs)))
		Expect(got[:2]).To(ConsistOf(cs[:2]))
		Expect(got[2]).To(Equal(cs[2]))
		Expect(got[3:]).To(ConsistOf(cs[3:]))
		Expect(a.maxInFlight(hash)).To(Equal(2), "the agent saw more than maxConcurrency works in flight")
	}, SpecTimeout(5*time.Minute))

	It("holds the next cluster for minSuccessTime after a success", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-soak", "mwrs-soak", "soak"
		cs := names("soak", 2)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "soak")...)
		placement(ctx, ns, "p", set, []string{"app", "soak"}, "")
		decided(ctx, ns, "p", cs)
		startAgent(ns, rs, succeed, nil)
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 3s}}}"}, "")

		var first *workv1.ManifestWork
		Eventually(func(g Gomega) {
			first = works(ctx, ns, rs)[cs[0]]
			g.Expect(first).NotTo(BeNil())
			g.Expect(succeeded(first)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func() string { return rolledOut(ctx, ns, rs).Message }).Should(ContainSubstring("1 within minSuccessTime, 1 to apply (0 now)"))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:1]))
		var second *workv1.ManifestWork
		Eventually(func() *workv1.ManifestWork { second = works(ctx, ns, rs)[cs[1]]; return second }).ShouldNot(BeNil())
		availableAt := meta.FindStatusCondition(first.Status.Conditions, workv1.WorkAvailable).LastTransitionTime.Time
		Expect(second.CreationTimestamp.Time.Sub(availableAt)).To(BeNumerically(">=", 3*time.Second),
			"the second cluster started before the first one soaked for minSuccessTime")
		Eventually(func() metav1.Condition { return rolledOut(ctx, ns, rs) }).Should(
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
	}, SpecTimeout(5*time.Minute))

	It("soaks an updated cluster for minSuccessTime from when it reported, not from when its template was written", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-resoak", "mwrs-resoak", "resoak"
		cs := names("resoak", 2)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "resoak")...)
		placement(ctx, ns, "p", set, []string{"app", "resoak"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, succeed, nil)
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}"}, "")
		Eventually(func() metav1.Condition { return rolledOut(ctx, ns, rs) }).Should(
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
		v1 := hashes(ctx, ns, rs)

		// A new template with a soak; the first cluster's agent takes longer than the soak to
		// apply it. Its conditions stay True throughout, so they keep their transition times.
		a.set(hold, cs[0])
		Eventually(func() error {
			r := getRS(ctx, ns, rs)
			r.Spec.ManifestWorkTemplate.Workload.Manifests[0].Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"resoak","namespace":"default"},"data":{"version":"v2"}}`)
			r.Spec.ManifestWorkTemplate.Workload.Manifests[0].Object = nil
			r.Spec.PlacementRefs[0].RolloutStrategy.Progressive.MinSuccessTime.Duration = 3 * time.Second
			return hubClient.Update(ctx, r)
		}).Should(Succeed())
		Eventually(func() []string { return hashes(ctx, ns, rs) }).Should(HaveLen(2))
		Consistently(func() []string { return workClusters(ctx, ns, rs, v1[0]) }, "3500ms").Should(Equal(cs[1:]))
		a.set(succeed, cs[0])
		Eventually(func() bool { return succeeded(works(ctx, ns, rs)[cs[0]]) }).Should(BeTrue())
		Consistently(func() []string { return workClusters(ctx, ns, rs, v1[0]) }).Should(Equal(cs[1:]),
			"the second cluster was updated without the first one soaking")
		Eventually(func() []string { return hashes(ctx, ns, rs) }).Should(HaveLen(1))
		first := works(ctx, ns, rs)[cs[0]]
		h, seen, ok := strings.Cut(first.Annotations[mwrs.SucceededAtAnnotation], ",")
		Expect(ok).To(BeTrue(), "the controller records when it saw the update succeed")
		Expect(h).To(Equal(first.Annotations[mwrs.TemplateHashAnnotation]))
		succeededAt, err := time.Parse(time.RFC3339, seen)
		Expect(err).NotTo(HaveOccurred())
		// Counted from the condition's transition, the soak would have been over before the
		// cluster even reported.
		Expect(meta.FindStatusCondition(first.Status.Conditions, workv1.WorkAvailable).LastTransitionTime.Time).To(
			BeTemporally("<=", succeededAt.Add(-3*time.Second)))
		startedAt, err := time.Parse(time.RFC3339, works(ctx, ns, rs)[cs[1]].Annotations[mwrs.UpdatedAtAnnotation])
		Expect(err).NotTo(HaveOccurred())
		Expect(startedAt.Sub(succeededAt)).To(BeNumerically(">=", 3*time.Second))
	}, SpecTimeout(5*time.Minute))

	It("times out a stuck cluster after progressDeadline and counts it as a failure", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-deadline", "mwrs-deadline", "deadline"
		cs := names("deadline", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "deadline")...)
		placement(ctx, ns, "p", set, []string{"app", "deadline"}, "")
		decided(ctx, ns, "p", cs)
		// The first never gets applied (Applied=False is "not yet", not a failure), the second
		// never reports; one failure is tolerated.
		startAgent(ns, rs, hold, map[string]outcome{cs[0]: failApply})
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, progressDeadline: 2s, maxFailures: 1}}}"}, "")

		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:1]))
		// Past its deadline the first is a failure within maxFailures: the second starts.
		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:2]))
		ws := works(ctx, ns, rs)
		startedAt, err := time.Parse(time.RFC3339, ws[cs[0]].Annotations[mwrs.UpdatedAtAnnotation])
		Expect(err).NotTo(HaveOccurred())
		Expect(ws[cs[1]].CreationTimestamp.Time.Sub(startedAt)).To(BeNumerically(">=", 2*time.Second))
		Eventually(func() string { return rolledOut(ctx, ns, rs).Message }).Should(ContainSubstring("1 failed or timed out within maxFailures (" + cs[0] + ")"))
		// The second times out too: two failures are more than maxFailures, the rollout stops.
		Eventually(func() metav1.Condition { return rolledOut(ctx, ns, rs) }).Should(And(
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "False", workv1alpha1.ReasonProgressing),
			HaveField("Message", ContainSubstring("stopped: 2 of 3 clusters failed or timed out ("+cs[0]+", "+cs[1]+"), more than maxFailures 1"))))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:2]))
	}, SpecTimeout(5*time.Minute))
})
