package placement

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// PlacementDecisions, pages and decision groups: concepts "Placement: PlacementDecisions" and
// "Decision strategy" (the 310-cluster example).
var _ = Describe("Placement decisions", Ordered, func() {
	const ns, set = "decision-groups", "dg-global"
	// 310 clusters: 10 labelled prod-canary-west, 10 prod-canary-east, 290 others, shared by
	// the specs of this container.
	var west, east, rest []string
	BeforeAll(func(ctx SpecContext) {
		namespace(ctx, ns)
		bind(ctx, ns, set)
		var sims []sim
		for i := 1; i <= 10; i++ {
			w, e := fmt.Sprintf("dg-west-%02d", i), fmt.Sprintf("dg-east-%02d", i)
			sims = append(sims, sim{Name: w, Labels: inSet(set, "prod-canary-west", "true")}, sim{Name: e, Labels: inSet(set, "prod-canary-east", "true")})
			west, east = append(west, w), append(east, e)
		}
		for i := 1; i <= 290; i++ {
			n := fmt.Sprintf("dg-%03d", i)
			sims = append(sims, sim{Name: n, Labels: inSet(set)})
			rest = append(rest, n)
		}
		clusters(ctx, sims...)
	}, NodeTimeout(5*time.Minute))

	It("groups 310 clusters as the seeds' decision strategy shows and pages decisions by 100", func(ctx SpecContext) {
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: decision-groups
spec:
  clusterSets:
    - dg-global
  decisionStrategy:
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
                operator: Exists
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement2
  namespace: decision-groups
spec:
  clusterSets:
    - dg-global
`)
		Eventually(func(g Gomega) {
			p := placementOf(ctx, ns, "placement1")
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(310))
			g.Expect(p.Status.DecisionGroups).To(Equal([]clusterv1beta1.DecisionGroupStatus{
				{ClustersCount: 10, DecisionGroupIndex: 0, DecisionGroupName: "prod-canary-west", Decisions: []string{"placement1-decision-1"}},
				{ClustersCount: 10, DecisionGroupIndex: 1, DecisionGroupName: "prod-canary-east", Decisions: []string{"placement1-decision-2"}},
				{ClustersCount: 150, DecisionGroupIndex: 2, DecisionGroupName: "", Decisions: []string{"placement1-decision-3", "placement1-decision-4"}},
				{ClustersCount: 140, DecisionGroupIndex: 3, DecisionGroupName: "", Decisions: []string{"placement1-decision-5", "placement1-decision-6"}},
			}))
		}, "60s").Should(Succeed())
		Eventually(func(g Gomega) {
			type page struct {
				Name, Index, Group string
				Clusters           []string
			}
			var pages []page
			for _, d := range decisionList(ctx, ns, "placement1") {
				var cs []string
				for _, cd := range d.Status.Decisions {
					cs = append(cs, cd.ClusterName)
				}
				g.Expect(d.Labels).To(HaveKeyWithValue(clusterv1beta1.PlacementLabel, "placement1"))
				pages = append(pages, page{d.Name, d.Labels[clusterv1beta1.DecisionGroupIndexLabel], d.Labels[clusterv1beta1.DecisionGroupNameLabel], cs})
			}
			g.Expect(pages).To(Equal([]page{
				{"placement1-decision-1", "0", "prod-canary-west", west},
				{"placement1-decision-2", "1", "prod-canary-east", east},
				{"placement1-decision-3", "2", "", rest[:100]},
				{"placement1-decision-4", "2", "", rest[100:150]},
				{"placement1-decision-5", "3", "", rest[150:250]},
				{"placement1-decision-6", "3", "", rest[250:]},
			}))
		}, "60s").Should(Succeed())
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("True AllDecisionsScheduled"))

		By("without a decision strategy: one group, pages of 100")
		Eventually(func(g Gomega) {
			p := placementOf(ctx, ns, "placement2")
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(310))
			g.Expect(p.Status.DecisionGroups).To(Equal([]clusterv1beta1.DecisionGroupStatus{
				{ClustersCount: 310, DecisionGroupIndex: 0, DecisionGroupName: "",
					Decisions: []string{"placement2-decision-1", "placement2-decision-2", "placement2-decision-3", "placement2-decision-4"}},
			}))
			var sizes []int
			for _, d := range decisionList(ctx, ns, "placement2") {
				g.Expect(d.Labels).To(HaveKeyWithValue(clusterv1beta1.DecisionGroupIndexLabel, "0"))
				g.Expect(d.Labels).To(HaveKeyWithValue(clusterv1beta1.DecisionGroupNameLabel, ""))
				sizes = append(sizes, len(d.Status.Decisions))
			}
			g.Expect(sizes).To(Equal([]int{100, 100, 100, 10}))
		}, "60s").Should(Succeed())
		// Ordered by name across pages (concepts: "ordered by names").
		all := decided(ctx, ns, "placement2")
		Expect(all).To(HaveLen(310))
		Expect(all).To(BeEquivalentTo(sortedCopy(all)))

	}, SpecTimeout(5*time.Minute))

	It("records an event for each PlacementDecision created and deleted", func(ctx SpecContext) {
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement3
  namespace: decision-groups
spec:
  clusterSets:
    - dg-global
`)
		Eventually(func() []string { return decided(ctx, ns, "placement3") }, "60s").Should(HaveLen(310))
		created := func(n int) placementEvent {
			return placementEvent{Type: "Normal", Reason: "DecisionCreate", From: "placementController",
				Note: fmt.Sprintf("Decision placement3-decision-%d is created with placement placement3 in namespace %s", n, ns)}
		}
		Eventually(func() []placementEvent { return events(ctx, ns, "placement3") }).Should(ContainElements(created(1), created(2), created(3), created(4)))

		By("fewer clusters: surplus pages go")
		patchPlacement(ctx, ns, "placement3", `{"spec": {"numberOfClusters": 150}}`)
		Eventually(func(g Gomega) {
			var names []string
			for _, d := range decisionList(ctx, ns, "placement3") {
				names = append(names, d.Name)
			}
			g.Expect(names).To(Equal([]string{"placement3-decision-1", "placement3-decision-2"}))
			g.Expect(decided(ctx, ns, "placement3")).To(HaveLen(150))
		}).Should(Succeed())
		Eventually(func() []placementEvent { return events(ctx, ns, "placement3") }).Should(ContainElements(
			placementEvent{Type: "Normal", Reason: "DecisionDelete", From: "placementController",
				Note: "Decision placement3-decision-3 is deleted with placement placement3 in namespace " + ns},
			placementEvent{Type: "Normal", Reason: "DecisionDelete", From: "placementController",
				Note: "Decision placement3-decision-4 is deleted with placement placement3 in namespace " + ns},
		))
	}, SpecTimeout(5*time.Minute))
})
