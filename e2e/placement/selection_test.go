package placement

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// Predicates, numberOfClusters and cluster sets: concepts "Placement" (Predicates, Label/Claim
// selection, Troubleshooting) and scenarios §2.
var _ = Describe("Placement selection", func() {
	It("selects by label and claim, within spec.clusterSets (concepts: Label/Claim selection)", func(ctx SpecContext) {
		const ns = "select-claims"
		namespace(ctx, ns)
		bind(ctx, ns, "claims-prod", "claims-dev")
		aws := map[string]string{"platform.open-cluster-management.io": "aws"}
		clusters(ctx,
			sim{Name: "claims-1", Labels: inSet("claims-prod", "purpose", "test"), Claims: aws},
			sim{Name: "claims-2", Labels: inSet("claims-prod", "purpose", "test"), Claims: map[string]string{"platform.open-cluster-management.io": "gcp"}},
			sim{Name: "claims-3", Labels: inSet("claims-prod", "purpose", "dev"), Claims: aws},
			sim{Name: "claims-4", Labels: inSet("claims-prod", "purpose", "test"), Claims: aws},
			sim{Name: "claims-5", Labels: inSet("claims-dev", "purpose", "test"), Claims: aws}, // a bound set, not in spec.clusterSets
			sim{Name: "claims-6", Labels: inSet("claims-prod", "purpose", "test"), Claims: aws},
			sim{Name: "claims-7", Labels: inSet("claims-prod", "purpose", "test")}, // no claim
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: select-claims
spec:
  numberOfClusters: 3
  clusterSets:
    - claims-prod
  predicates:
    - requiredClusterSelector:
        labelSelector:
          matchLabels:
            purpose: test
        claimSelector:
          matchExpressions:
            - key: platform.open-cluster-management.io
              operator: In
              values:
                - aws
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"claims-1", "claims-4", "claims-6"}))
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("True AllDecisionsScheduled"))
		Expect(placementOf(ctx, ns, "placement1").Status.NumberOfSelectedClusters).To(BeEquivalentTo(3))

		By("a fourth matching cluster joins: three are asked for, the selected ones stay")
		clusters(ctx, sim{Name: "claims-0", Labels: inSet("claims-prod", "purpose", "test"), Claims: aws})
		Consistently(func() []string { return decided(ctx, ns, "placement1") }, "1s").Should(Equal([]string{"claims-1", "claims-4", "claims-6"}))
	}, SpecTimeout(5*time.Minute))

	It("selects with CEL: a label regex, the semver of a version label and a claim (celSelector)", func(ctx SpecContext) {
		const ns = "select-cel"
		namespace(ctx, ns)
		bind(ctx, ns, "cel")
		kube := func(v string) map[string]string {
			return map[string]string{"kubeversion.open-cluster-management.io": v}
		}
		clusters(ctx,
			sim{Name: "cel-1", Labels: inSet("cel", "version", "1.14.5"), Claims: kube("v1.28.0")},
			sim{Name: "cel-2", Labels: inSet("cel", "version", "1.14.2"), Claims: kube("v1.28.0")}, // not > 1.14.3
			sim{Name: "cel-3", Labels: inSet("cel", "version", "1.15.0"), Claims: kube("v1.28.0")},
			sim{Name: "cel-4", Labels: inSet("cel", "version", "1.16.0"), Claims: kube("v1.28.0")}, // not 1.14/1.15
			sim{Name: "cel-5", Labels: inSet("cel", "version", "1.15.1"), Claims: kube("v1.27.0")}, // other claim
			sim{Name: "cel-6", Labels: inSet("cel"), Claims: kube("v1.28.0")},                      // no version label
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: select-cel
spec:
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions:
            - managedCluster.metadata.labels["version"].matches('^1\\.(14|15)\\.\\d+$')
            - semver(managedCluster.metadata.labels["version"]).isGreaterThan(semver("1.14.3"))
            - managedCluster.status.clusterClaims.exists(c, c.name == "kubeversion.open-cluster-management.io" && c.value == "v1.28.0")
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"cel-1", "cel-3"}))
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("True AllDecisionsScheduled"))
	}, SpecTimeout(5*time.Minute))

	It("selects numberOfClusters, follows a change of it, and reports NotAllDecisionsScheduled when too few (scenarios §2)", func(ctx SpecContext) {
		const ns = "select-number"
		namespace(ctx, ns)
		bind(ctx, ns, "number-default")
		clusters(ctx,
			sim{Name: "number-cluster1", Labels: inSet("number-default")},
			sim{Name: "number-cluster2", Labels: inSet("number-default")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: select-number
spec:
  numberOfClusters: 2
  clusterSets:
    - number-default
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"number-cluster1", "number-cluster2"}))
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("True AllDecisionsScheduled"))
		d := decisionList(ctx, ns, "placement1")
		Expect(d).To(HaveLen(1))
		Expect(d[0].Name).To(Equal("placement1-decision-1"))
		Expect(d[0].Labels).To(HaveKeyWithValue(clusterv1beta1.PlacementLabel, "placement1"))
		Expect(d[0].OwnerReferences).To(ContainElement(And(
			HaveField("Kind", "Placement"), HaveField("Name", "placement1"), HaveField("Controller", HaveValue(BeTrue())))))

		By(`kubectl patch placement placement1 --patch '{"spec": {"clusterSets": ["default"],"numberOfClusters": 1}}' --type=merge`)
		patchPlacement(ctx, ns, "placement1", `{"spec": {"clusterSets": ["number-default"],"numberOfClusters": 1}}`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"number-cluster1"}))
		Eventually(func(g Gomega) {
			p := placementOf(ctx, ns, "placement1")
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(1))
		}).Should(Succeed())

		By("asking for more clusters than there are")
		patchPlacement(ctx, ns, "placement1", `{"spec": {"numberOfClusters": 3}}`)
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("False NotAllDecisionsScheduled"))
		Expect(condition(ctx, ns, "placement1", clusterv1beta1.PlacementConditionSatisfied).Message).To(Equal("1 cluster decisions unscheduled"))
		Expect(decided(ctx, ns, "placement1")).To(Equal([]string{"number-cluster1", "number-cluster2"}))
		Expect(placementOf(ctx, ns, "placement1").Status.NumberOfSelectedClusters).To(BeEquivalentTo(2))
	}, SpecTimeout(5*time.Minute))

	It("restricts to bound sets and spec.clusterSets, with the reasons NoManagedClusterSetBindings, NoIntersection and AllManagedClusterSetsEmpty", func(ctx SpecContext) {
		const ns = "select-sets"
		namespace(ctx, ns)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: restricted, namespace: select-sets}
spec:
  clusterSets: [sets-a]
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: unrestricted, namespace: select-sets}
spec: {}
`)
		By("no binding in the namespace (concepts: Troubleshooting)")
		Eventually(func(g Gomega) {
			p := placementOf(ctx, ns, "restricted")
			sat := findCondition(p, clusterv1beta1.PlacementConditionSatisfied)
			g.Expect(sat.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(sat.Reason).To(Equal("NoManagedClusterSetBindings"))
			g.Expect(sat.Message).To(HavePrefix("No valid ManagedClusterSetBindings found in placement namespace"))
			mis := findCondition(p, clusterv1beta1.PlacementConditionMisconfigured)
			g.Expect(mis.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(mis.Reason).To(Equal("Succeedconfigured"))
			g.Expect(mis.Message).To(Equal("Placement configurations check pass"))
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(0))
		}).Should(Succeed())

		By("a binding to a set that does not exist is no valid binding")
		binding(ctx, ns, "sets-missing")
		Consistently(func() string { return satisfied(ctx, ns, "restricted") }, "1s").Should(Equal("False NoManagedClusterSetBindings"))

		By("a bound set that is not in spec.clusterSets")
		clusterSet(ctx, "sets-a")
		bind(ctx, ns, "sets-b")
		Eventually(func() string { return satisfied(ctx, ns, "restricted") }).Should(Equal("False NoIntersection"))
		Expect(condition(ctx, ns, "restricted", clusterv1beta1.PlacementConditionSatisfied).Message).To(HavePrefix("None of ManagedClusterSets [sets-a] is bound to placement namespace"))
		Eventually(func() string { return satisfied(ctx, ns, "unrestricted") }).Should(Equal("False AllManagedClusterSetsEmpty"))

		By("the set of spec.clusterSets bound, without members")
		binding(ctx, ns, "sets-a")
		Eventually(func() string { return satisfied(ctx, ns, "restricted") }).Should(Equal("False AllManagedClusterSetsEmpty"))
		Expect(condition(ctx, ns, "restricted", clusterv1beta1.PlacementConditionSatisfied).Message).To(Equal("All ManagedClusterSets [sets-a] have no member ManagedCluster"))

		By("members in the bound sets and in an unbound one")
		clusterSet(ctx, "sets-c")
		clusters(ctx,
			sim{Name: "sets-a1", Labels: inSet("sets-a")},
			sim{Name: "sets-b1", Labels: inSet("sets-b")},
			sim{Name: "sets-c1", Labels: inSet("sets-c")},
			sim{Name: "sets-none"},
		)
		Eventually(func() []string { return decided(ctx, ns, "restricted") }).Should(Equal([]string{"sets-a1"}))
		Eventually(func() []string { return decided(ctx, ns, "unrestricted") }).Should(Equal([]string{"sets-a1", "sets-b1"}))
		Eventually(func() string { return satisfied(ctx, ns, "restricted") }).Should(Equal("True AllDecisionsScheduled"))
		Eventually(func() string { return satisfied(ctx, ns, "unrestricted") }).Should(Equal("True AllDecisionsScheduled"))

		By("no cluster matching the predicates")
		patchPlacement(ctx, ns, "restricted", `{"spec": {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"nothing": "matches"}}}}]}}`)
		Eventually(func() string { return satisfied(ctx, ns, "restricted") }).Should(Equal("False NoManagedClusterMatched"))
		Eventually(func() []string { return decided(ctx, ns, "restricted") }).Should(BeEmpty())
		Expect(decisionList(ctx, ns, "restricted")).To(HaveLen(1), "an empty PlacementDecision stays to be watched")
	}, SpecTimeout(5*time.Minute))
})
