package mwrs

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

var _ = Describe("Rollout type All", func() {
	It("gives every cluster its work at once", func(ctx SpecContext) {
		const ns, set = "mwrs-all", "mwrs-all"
		cs := names("all", 4)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "web")...)
		placement(ctx, ns, "web", set, []string{"app", "web"}, "")
		decided(ctx, ns, "web", cs)
		// The agent holds every work: nothing succeeds, yet All admits every cluster.
		a := startAgent(ns, "web-config", hold, nil)
		replicaSet(ctx, ns, "web-config", "v1", []string{"{name: web, rolloutStrategy: {type: All}}"}, "")

		Eventually(func() []string { return workClusters(ctx, ns, "web-config") }).Should(Equal(cs))
		ws := works(ctx, ns, "web-config")
		rs := getRS(ctx, ns, "web-config")
		hash := ws[cs[0]].Annotations[mwrs.TemplateHashAnnotation]
		Expect(hash).NotTo(BeEmpty())
		for _, c := range cs {
			w := ws[c]
			Expect(w.Name).To(Equal("web-config"))
			Expect(w.Labels).To(HaveKeyWithValue(workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey, ns+".web-config"))
			Expect(w.Labels).To(HaveKeyWithValue(workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey, "web"))
			Expect(w.Annotations).To(HaveKeyWithValue(mwrs.TemplateHashAnnotation, hash))
			Expect(w.Spec.Workload.Manifests).To(HaveLen(1))
			Expect(w.Spec.Workload.Manifests[0].Raw).To(MatchJSON(rs.Spec.ManifestWorkTemplate.Workload.Manifests[0].Raw))
		}
		Eventually(func() int { return a.maxInFlight(hash) }).Should(Equal(4))
		Eventually(func(g Gomega) {
			rs := getRS(ctx, ns, "web-config")
			g.Expect(rs.Status.Conditions).To(ContainElements(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, "True", workv1alpha1.ReasonAsExpected),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "False", workv1alpha1.ReasonProgressing),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "False", workv1alpha1.ReasonProcessing),
			))
			g.Expect(rs.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 4, DesiredTotal: 4, Updated: 4}))
		}).Should(Succeed())

		a.set(succeed, cs...)
		Eventually(func(g Gomega) {
			rs := getRS(ctx, ns, "web-config")
			g.Expect(rs.Status.Conditions).To(ContainElements(
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete),
				conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "True", workv1alpha1.ReasonAsExpected),
			))
			g.Expect(rs.Status.Summary).To(Equal(workv1alpha1.ManifestWorkReplicaSetSummary{Total: 4, Applied: 4, Available: 4, DesiredTotal: 4, Updated: 4}))
			g.Expect(rs.Status.PlacementsSummary).To(Equal([]workv1alpha1.PlacementSummary{{Name: "web",
				AvailableDecisionGroups: "1 (4 / 4 clusters applied)", Summary: rs.Status.Summary}}))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})
