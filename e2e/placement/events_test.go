package placement

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Events and misconfiguration: concepts "Placement: Troubleshooting", scenarios §3 (the events
// of a placement selecting by an AddOnPlacementScore).
var _ = Describe("Placement events and conditions", func() {
	// eventsScenario is scenarios §3's "select 1 cluster with the highest cpuAvailable score":
	// two clusters both scoring 12, in namespace ns; it returns the cluster names.
	eventsScenario := func(ctx context.Context, ns string) (string, string) {
		GinkgoHelper()
		c1, c2 := ns+"-cluster1", ns+"-cluster2"
		namespace(ctx, ns)
		bind(ctx, ns, ns+"-default")
		clusters(ctx, sim{Name: c1, Labels: inSet(ns + "-default")}, sim{Name: c2, Labels: inSet(ns + "-default")})
		score(ctx, c1, "resource-usage-score", nil, map[string]int32{"cpuAvailable": 12, "memAvailable": 4})
		score(ctx, c2, "resource-usage-score", nil, map[string]int32{"cpuAvailable": 12, "memAvailable": 4})
		apply(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: %s
spec:
  numberOfClusters: 1
  clusterSets:
    - %s-default
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: resource-usage-score
            scoreName: cpuAvailable
        weight: 1
`, ns, ns))
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{c1}))
		return c1, c2
	}

	It("records DecisionCreate and ScoreUpdate as OCM does (scenarios §3)", func(ctx SpecContext) {
		const ns = "events-create"
		c1, c2 := eventsScenario(ctx, ns)
		Eventually(func() []placementEvent { return events(ctx, ns, "placement1") }).Should(ContainElements(
			placementEvent{Type: "Normal", Reason: "DecisionCreate", From: "placementController",
				Note: "Decision placement1-decision-1 is created with placement placement1 in namespace " + ns},
			placementEvent{Type: "Normal", Reason: "ScoreUpdate", From: "placementController",
				Note: fmt.Sprintf("%s:12 %s:12", c1, c2)},
		))
	}, SpecTimeout(5*time.Minute))

	It("records DecisionUpdate and the new scores when a score change moves the decision", func(ctx SpecContext) {
		const ns = "events-update"
		c1, c2 := eventsScenario(ctx, ns)
		Eventually(func() []placementEvent { return events(ctx, ns, "placement1") }).Should(ContainElement(HaveField("Reason", "ScoreUpdate")))

		setScore(ctx, c2, "resource-usage-score", nil, map[string]int32{"cpuAvailable": 50, "memAvailable": 4})
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{c2}))
		Eventually(func() []placementEvent { return events(ctx, ns, "placement1") }).Should(ContainElement(
			placementEvent{Type: "Normal", Reason: "DecisionUpdate", From: "placementController",
				Note: "Decision placement1-decision-1 is updated with placement placement1 in namespace " + ns},
		))
		// concepts, Troubleshooting: "When the cluster score changes, a new event will generate."
		Eventually(func() []placementEvent { return events(ctx, ns, "placement1") }, "10s").Should(ContainElement(
			placementEvent{Type: "Normal", Reason: "ScoreUpdate", From: "placementController", Note: fmt.Sprintf("%s:12 %s:50", c1, c2)},
		))
	}, SpecTimeout(5*time.Minute))

	It("is PlacementMisconfigured for an unknown builtIn prioritizer, naming it, until it is fixed", func(ctx SpecContext) {
		const ns = "misconfigured-builtin"
		namespace(ctx, ns)
		bind(ctx, ns, "misconfigured-builtin")
		clusters(ctx, sim{Name: "misconfigured-builtin-1", Labels: inSet("misconfigured-builtin")})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: misconfigured-builtin
spec:
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          builtIn: ResourceAllocatableGPU
`)
		Eventually(func(g Gomega) {
			c := condition(ctx, ns, "placement1", "PlacementMisconfigured")
			g.Expect(string(c.Status) + " " + c.Reason).To(Equal("True Misconfigured"))
			g.Expect(c.Message).To(ContainSubstring("ResourceAllocatableGPU"))
		}).Should(Succeed())
		Expect(decided(ctx, ns, "placement1")).To(BeEmpty())

		patchPlacement(ctx, ns, "placement1", `{"spec": {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}]}}}`)
		Eventually(func(g Gomega) {
			c := condition(ctx, ns, "placement1", "PlacementMisconfigured")
			g.Expect(string(c.Status) + " " + c.Reason + " " + c.Message).To(Equal("False Succeedconfigured Placement configurations check pass"))
		}).Should(Succeed())
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"misconfigured-builtin-1"}))
	}, SpecTimeout(5*time.Minute))

	It("is PlacementMisconfigured for a Plugin prioritizer whose WasmPlugin does not exist, naming it", func(ctx SpecContext) {
		const ns = "misconfigured-plugin"
		namespace(ctx, ns)
		bind(ctx, ns, "misconfigured-plugin")
		clusters(ctx, sim{Name: "misconfigured-plugin-1", Labels: inSet("misconfigured-plugin")})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: misconfigured-plugin
spec:
  prioritizerPolicy:
    configurations:
      - scoreCoordinate:
          type: Plugin
          plugin:
            name: no-such-prioritizer
        weight: 2
`)
		Eventually(func(g Gomega) {
			c := condition(ctx, ns, "placement1", "PlacementMisconfigured")
			g.Expect(string(c.Status) + " " + c.Reason).To(Equal("True Misconfigured"))
			g.Expect(c.Message).To(ContainSubstring("no-such-prioritizer"))
		}).Should(Succeed())
		Expect(decided(ctx, ns, "placement1")).To(BeEmpty())
	}, SpecTimeout(5*time.Minute))
})
