package mwrs

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

var _ = Describe("Failures", func() {
	It("stops beyond maxFailures, as a count or a percentage rounded up, and goes on within it", func(ctx SpecContext) {
		const ns, set = "mwrs-fail", "mwrs-fail"
		cs := names("fail", 5)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "fail")...)
		placement(ctx, ns, "p", set, []string{"app", "fail"}, "")
		decided(ctx, ns, "p", cs)
		// One at a time, in name order: the first two fail (Degraded), the rest succeed.
		outcomes := map[string]outcome{cs[0]: degrade, cs[1]: degrade}
		strategy := func(maxFailures string) []string {
			return []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1, maxFailures: " + maxFailures + "}}}"}
		}
		for name, mf := range map[string]string{"count-1": "1", "count-2": "2", "pct-20": `"20%"`, "pct-30": `"30%"`} {
			startAgent(ns, name, succeed, outcomes)
			replicaSet(ctx, ns, name, "v1", strategy(mf), "")
		}

		stopped := map[string]string{"count-1": "more than maxFailures 1;", "pct-20": "more than maxFailures 1 (20% of 5);"}
		for name, limit := range stopped {
			Eventually(func() metav1.Condition { return rolledOut(ctx, ns, name) }).Should(And(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "False", workv1alpha1.ReasonProgressing),
				HaveField("Message", "p: stopped: 2 of 5 clusters failed or timed out ("+cs[0]+", "+cs[1]+"), "+limit+" no further clusters are updated")),
				name)
			r := getRS(ctx, ns, name)
			Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 2, Applied: 2, Degraded: 2, DesiredTotal: 5, Updated: 2}), name)
			Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied)).To(And(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "False", workv1alpha1.ReasonNotAsExpected),
				HaveField("Message", "2 of 2 ManifestWorks are degraded")), name)
		}
		// 2 and 30% of 5 (1.5, rounded up to 2) tolerate the two failures: every cluster is reached.
		for _, name := range []string{"count-2", "pct-30"} {
			Eventually(func(g Gomega) {
				r := getRS(ctx, ns, name)
				g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 5, Applied: 5, Available: 3, Degraded: 2, DesiredTotal: 5, Updated: 5}))
				g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(And(
					conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "False", workv1alpha1.ReasonProgressing),
					HaveField("Message", "p: progressing: 3 of 5 clusters succeeded, 2 failed or timed out within maxFailures ("+cs[0]+", "+cs[1]+")")))
			}).Should(Succeed(), name)
		}
		// The stopped ones start no further cluster.
		Consistently(func(g Gomega) {
			for name := range stopped {
				g.Expect(workClusters(ctx, ns, name)).To(Equal(cs[:2]), name)
			}
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("resumes from the start with a fixed template after a broken one stopped it", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-fix", "mwrs-fix", "app"
		cs := names("fix", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "fix")...)
		placement(ctx, ns, "p", set, []string{"app", "fix"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, hold, nil)
		// The agent degrades the broken template wherever it lands.
		a.setDecide(func(w *workv1.ManifestWork) outcome {
			if strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), `"broken"`) {
				return degrade
			}
			return succeed
		})
		replicaSet(ctx, ns, rs, "broken", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}"}, "")

		Eventually(func() metav1.Condition { return rolledOut(ctx, ns, rs) }).Should(
			HaveField("Message", "p: stopped: 1 of 3 clusters failed or timed out ("+cs[0]+"), more than maxFailures 0; no further clusters are updated"))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs[:1]))
		broken := hashes(ctx, ns, rs)
		Expect(broken).To(HaveLen(1))

		setVersion(ctx, ns, rs, "fixed")
		var fixed string
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied)).To(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "True", workv1alpha1.ReasonAsExpected))
			g.Expect(r.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, Applied: 3, Available: 3, DesiredTotal: 3, Updated: 3}))
			hs := hashes(ctx, ns, rs)
			g.Expect(hs).To(HaveLen(1))
			fixed = hs[0]
		}).Should(Succeed())
		Expect(fixed).NotTo(Equal(broken[0]))
		for _, w := range works(ctx, ns, rs) {
			Expect(string(w.Spec.Workload.Manifests[0].Raw)).To(ContainSubstring(`"fixed"`))
		}
		// The broken template reached only the first cluster; the fixed one started over from it.
		Expect(a.appeared(broken[0])).To(Equal(cs[:1]))
		Expect(a.appeared(fixed)).To(Equal(cs))
		Expect(a.maxInFlight(fixed)).To(Equal(1))
	}, SpecTimeout(5*time.Minute))
})
