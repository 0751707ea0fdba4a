package mwrs

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

var _ = Describe("Rollout type ProgressivePerGroup", func() {
	It("rolls out the mandatory group first, then one decision group at a time", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ppg", "mwrs-ppg", "ppg"
		tierA, canary, rest := names("ppg-a", 2), names("ppg-canary", 2), names("ppg-rest", 4)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, append(append(sims(tierA, "app", "ppg", "tier", "a"), sims(canary, "app", "ppg", "tier", "canary")...),
			sims(rest, "app", "ppg")...)...)
		// Group 0 is tier-a, group 1 the canaries, then the rest in groups of two.
		placement(ctx, ns, "p", set, []string{"app", "ppg"}, `decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 2, decisionGroups: [
    {groupName: tier-a, groupClusterSelector: {labelSelector: {matchLabels: {tier: a}}}},
    {groupName: canary, groupClusterSelector: {labelSelector: {matchLabels: {tier: canary}}}}]}}`)
		groups := decided(ctx, ns, "p", sorted(tierA, canary, rest))
		Expect(groups).To(HaveLen(4))
		Expect(groups[0]).To(Equal(tierA))
		Expect(groups[1]).To(Equal(canary))
		Expect(sorted(groups[2], groups[3])).To(Equal(rest))

		a := startAgent(ns, rs, hold, nil)
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: ProgressivePerGroup, progressivePerGroup: {mandatoryDecisionGroups: [{groupName: canary}]}}}"}, "")

		// Each step: exactly the groups released so far plus the next one have works.
		steps := [][]string{groups[1], groups[0], groups[2], groups[3]}
		var reached []string
		for i, g := range steps {
			reached = sorted(reached, g)
			Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(reached), "step %d", i)
			if i == 0 {
				Eventually(func() string { return rolledOut(ctx, ns, rs).Message }).Should(HaveSuffix(`; rolling out decision group 1 "canary"`))
			}
			if i < len(steps)-1 {
				Consistently(func() []string { return workClusters(ctx, ns, rs) }, "700ms").Should(Equal(reached), "step %d", i)
			}
			a.set(succeed, g...)
		}
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			g.Expect(condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
			g.Expect(r.Status.PlacementsSummary).To(ConsistOf(HaveField("AvailableDecisionGroups", "4 (8 / 8 clusters applied)")))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("stops at a failure in a mandatory group", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-ppg-mand", "mwrs-ppg-mand", "ppg"
		canary, rest := names("ppgm-canary", 2), names("ppgm-rest", 2)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, append(sims(canary, "app", "ppgm", "tier", "canary"), sims(rest, "app", "ppgm")...)...)
		placement(ctx, ns, "p", set, []string{"app", "ppgm"}, `decisionStrategy: {groupStrategy: {decisionGroups: [
    {groupName: canary, groupClusterSelector: {labelSelector: {matchLabels: {tier: canary}}}}]}}`)
		decided(ctx, ns, "p", sorted(canary, rest))
		startAgent(ns, rs, succeed, map[string]outcome{canary[1]: degrade})
		// maxFailures 1 would tolerate it elsewhere; a mandatory group tolerates none.
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: ProgressivePerGroup, progressivePerGroup: {maxFailures: 1, mandatoryDecisionGroups: [{groupName: canary}]}}}"}, "")
		Eventually(func() metav1.Condition { return rolledOut(ctx, ns, rs) }).Should(HaveField("Message",
			`p: stopped: mandatory decision group 0 "canary": 1 cluster failed or timed out (`+canary[1]+`); mandatory decision groups tolerate no failures; no further clusters are updated`))
		Consistently(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(canary))
	}, SpecTimeout(5*time.Minute))
})
