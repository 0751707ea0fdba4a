package addon_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// An agent of its own cluster (cluster2, its klusterlet's agent namespace agent-ns2), which the
// spec stops and starts again as a klusterlet restart would.
var _ = Describe("A klusterlet restart", func() {
	const (
		cluster2, agent2, agentNS = "cluster2", "agent2", "agent-ns2"
		ns                        = "addon-restart"
	)
	var run func() (stop func())

	BeforeEach(func() {
		for _, o := range []client.Object{
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster2}},
		} {
			Expect(admin.Create(suiteCtx, o)).To(Succeed())
		}
		for _, o := range []client.Object{rbac.ClusterRole(cluster2, true), rbac.ClusterRoleBinding(cluster2), rbac.RegistrationRoleBinding(cluster2)} {
			Expect(rbac.Apply(suiteCtx, admin, o)).To(Succeed())
		}
		ensureNamespace(ns)
		hubCfg, err := fleet.Hub.UserConfig("system:open-cluster-management:"+cluster2+":"+agent2,
			"system:open-cluster-management:"+cluster2, clusterv1.ManagedClustersGroup)
		Expect(err).NotTo(HaveOccurred())
		run = func() func() {
			a, err := addon.New(addon.Config{
				ClusterName: cluster2, AgentName: agent2, AgentNamespace: agentNS, HubConfig: hubCfg,
				HubEndpoint:   registration.HubEndpoint{Server: fleet.Hub.Config.Host, CAData: fleet.Hub.Config.CAData},
				ManagedConfig: fleet.Hub.Config, RetryMax: 2 * time.Second,
			})
			Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithCancel(suiteCtx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer GinkgoRecover()
				Expect(a.Run(ctx)).To(Succeed())
			}()
			return func() { cancel(); <-done }
		}
	})

	It("deletes the hub kubeconfig Secret of an add-on removed while the klusterlet was down, and only that", func() {
		enable := func(name string) {
			mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster2, Name: name},
				Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: ns}}
			Expect(admin.Create(suiteCtx, mca)).To(Succeed())
			Eventually(func() error {
				if err := admin.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca); err != nil {
					return err
				}
				mca.Status.Namespace = ns
				mca.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
				mca.Status.Registrations = hubaddon.Registrations(cluster2, name, []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}})
				return admin.Status().Update(suiteCtx, mca)
			}).Should(Succeed())
		}
		labelled := func(name string) func(Gomega) map[string]string {
			return func(g Gomega) map[string]string {
				s, err := kube.CoreV1().Secrets(ns).Get(suiteCtx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.Data).To(HaveKey(addon.TLSCertKey))
				return s.Labels
			}
		}

		stop := run()
		enable("gone")
		enable("stays")
		for _, name := range []string{"gone", "stays"} {
			Eventually(labelled(name + "-hub-kubeconfig")).Should(And(HaveKeyWithValue(addon.SecretAddOnLabel, name),
				HaveKeyWithValue(addon.SecretKlusterletLabel, agentNS)))
		}
		// Another klusterlet's Secret (another hub's) for an add-on of the same name is not this one's.
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone-other-hub",
			Labels: map[string]string{addon.SecretAddOnLabel: "gone", addon.SecretKlusterletLabel: "agent-other"}}}
		Expect(admin.Create(suiteCtx, other)).To(Succeed())

		stop()
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster2, Name: "gone"}}
		Expect(admin.Delete(suiteCtx, mca)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(admin.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca)) }).
			Should(BeTrue(), "ManagedClusterAddOn gone is deleted")
		Expect(secretGone(ns, "gone-hub-kubeconfig")()).To(BeFalse(), "nobody removed it while the klusterlet was down")

		defer run()()
		Eventually(secretGone(ns, "gone-hub-kubeconfig")).Should(BeTrue(), "the klusterlet removes the Secret of the add-on gone while it was down")
		Expect(secretGone(ns, "stays-hub-kubeconfig")()).To(BeFalse(), "an enabled add-on keeps its Secret")
		Expect(secretGone(ns, other.Name)()).To(BeFalse(), "another klusterlet's Secret stays")
	})
})
