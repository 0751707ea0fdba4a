package placement

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

var _ = Describe("Placement", func() {
	It("selects the clusters of a bound set that match its label selector", func(ctx SpecContext) {
		namespace(ctx, "select-labels")
		cluster(ctx, "l-a", map[string]string{"cluster.open-cluster-management.io/clusterset": "labels", "vendor": "OpenShift"}, nil, nil)
		cluster(ctx, "l-b", map[string]string{"cluster.open-cluster-management.io/clusterset": "labels", "vendor": "EKS"}, nil, nil)
		cluster(ctx, "l-c", map[string]string{"cluster.open-cluster-management.io/clusterset": "labels", "vendor": "OpenShift"}, nil, nil)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: labels}
`, `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: labels, namespace: select-labels}
spec: {clusterSet: labels}
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: placement1, namespace: select-labels}
spec:
  prioritizerPolicy: {mode: Exact}
  predicates:
  - requiredClusterSelector:
      labelSelector:
        matchLabels: {vendor: OpenShift}
`)
		Eventually(func() []string { return decided(ctx, "select-labels", "placement1") }).Should(Equal([]string{"l-a", "l-c"}))
		Eventually(func(g Gomega) {
			p := placementOf(ctx, "select-labels", "placement1")
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(2))
			c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(clusterv1beta1.PlacementReasonAllDecisionsScheduled))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})
