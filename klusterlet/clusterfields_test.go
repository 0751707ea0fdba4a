package klusterlet_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

var _ = Describe("the registration agent's Klusterlet-field options", func() {
	It("sets the ManagedCluster's annotations (agent prefix only), labels and client configs, and reports the reserved claims", func(ctx SpecContext) {
		const (
			cluster = "cluster-fields"
			ns      = "fields-agent"
		)
		for name, value := range map[string]string{
			"region.fields.infra.example.com": "eu", // reserved by its suffix
			"a-fields.custom.example.com":     "1",
			"b-fields.custom.example.com":     "2", // past the custom cap of 1
		} {
			c := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
			Expect(managedAdmin.Create(ctx, c)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { _ = managedAdmin.Delete(ctx, c) })
		}
		startReplica(klusterlet.Options{
			Registration: registration.Config{
				ClusterName: cluster, AgentNamespace: ns, BootstrapKubeconfig: bootstrapKubeconfig,
				ClusterAnnotations: map[string]string{"agent.open-cluster-management.io/owner": "team-a", "example.com/owner": "team-b"},
				ClusterLabels:      map[string]string{"env": "fields-test"},
				ExternalServers: []registration.ExternalServer{
					{URL: "https://a.example.com:6443", CABundle: []byte("ca-of-a")},
					{URL: "https://b.example.com"},
				},
				ReservedClusterClaimSuffixes: []string{".infra.example.com"},
				HostingClusterClaim:          "management-1",
				MaxCustomClusterClaims:       1,
			},
			Work:  klusterlet.WorkOptions{Disabled: true},
			AddOn: klusterlet.AddOnOptions{Disabled: true},
		})

		Eventually(func(g Gomega) {
			mc := managedCluster(g, cluster)
			g.Expect(mc.Annotations).To(HaveKeyWithValue("agent.open-cluster-management.io/owner", "team-a"))
			g.Expect(mc.Annotations).NotTo(HaveKey("example.com/owner"), "annotations without the agent prefix are dropped")
			g.Expect(mc.Labels).To(HaveKeyWithValue("env", "fields-test"))
			g.Expect(mc.Spec.ManagedClusterClientConfigs).To(Equal([]clusterv1.ClientConfig{
				{URL: "https://a.example.com:6443", CABundle: []byte("ca-of-a")},
				{URL: "https://b.example.com", CABundle: fleet.Managed[0].CAData},
			}))
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "ManagedCluster %s created with the options' fields", cluster)

		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "accepting ManagedCluster %s", cluster)
		Eventually(func(g Gomega) []string {
			var claims []string
			for _, c := range managedCluster(g, cluster).Status.ClusterClaims {
				claims = append(claims, fmt.Sprintf("%s=%s", c.Name, c.Value))
			}
			return claims
		}).WithContext(ctx).WithTimeout(90*time.Second).Should(And(
			ContainElement(registration.HostingClusterClaimName+"=management-1"),
			ContainElement("region.fields.infra.example.com=eu"),
			ContainElement("a-fields.custom.example.com=1"),
			Not(ContainElement("b-fields.custom.example.com=2")),
		), "claims of ManagedCluster %s: the hosting cluster, the suffix-reserved claim, one custom claim", cluster)
	}, SpecTimeout(4*time.Minute))
})
