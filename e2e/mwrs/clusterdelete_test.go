package mwrs

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// The suite's hub runs the add-on manager too, and its simulated clusters have no agent: what
// a cluster deletion needs when nothing on the cluster answers any more.
var _ = Describe("Deleting a cluster with a template add-on", func() {
	It("finishes: the add-on's works are not rendered again while the hub cleans the cluster up", func(ctx SpecContext) {
		const set, addon, cluster = "cluster-delete", "cd-addon", "cd-cluster"
		clusters(ctx, set, sim{Name: cluster})
		apply(ctx, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: cd-template}
spec:
  addonName: cd-addon
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: cd-level, namespace: default}
        data: {level: "1"}
`, `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: cd-addon}
spec:
  supportedConfigs:
  - group: addon.open-cluster-management.io
    resource: addontemplates
    defaultConfig: {name: cd-template}
`, fmt.Sprintf(`
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: %s, namespace: %s}
spec: {}
`, addon, cluster))
		Eventually(func() []string {
			list := &workv1.ManifestWorkList{}
			Expect(hubClient.List(ctx, list, client.InNamespace(cluster))).To(Succeed())
			var out []string
			for _, w := range list.Items {
				out = append(out, w.Name)
			}
			return out
		}).WithTimeout(60*time.Second).Should(ContainElement("addon-cd-addon-deploy-0"), "the add-on's work on %s", cluster)

		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{}))
		}).WithTimeout(90*time.Second).Should(BeTrue(), "ManagedCluster %s to be deleted (its cleanup waits for its works)", cluster)
	}, SpecTimeout(5*time.Minute))
})
