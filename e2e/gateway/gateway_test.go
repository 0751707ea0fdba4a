package gateway

import (
	"net/http"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

var _ = Describe("the built-in add-ons", func() {
	It("become Available on every cluster once enabled", func(ctx SpecContext) {
		for _, cluster := range []string{cluster1, cluster2} {
			for _, name := range builtin.Names() {
				Eventually(mcaAvailable(ctx, cluster, name)).WithContext(ctx).WithTimeout(2*time.Minute).
					Should(Equal(metav1.ConditionTrue), "ManagedClusterAddOn %s/%s Available", cluster, name)
			}
		}
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("the cluster gateway", func() {
	It("answers the managed cluster's /healthz through the hub API server (seeds: kubectl get --raw .../proxy/healthz)", func(ctx SpecContext) {
		for _, cluster := range []string{cluster1, cluster2} {
			Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(3*time.Minute).
				Should(Equal("ok"), "GET %s/healthz through the gateway", cluster)
		}
	}, SpecTimeout(7*time.Minute))

	It("acts as the ServiceAccount cluster-gateway: Forbidden until a ManifestWork grants it read on namespaces", func(ctx SpecContext) {
		// cluster2 only: no other spec grants anything there.
		const cluster = cluster2
		Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(3*time.Minute).
			Should(Equal("ok"), "cluster %s reachable through the gateway", cluster)
		kube := kubernetes.NewForConfigOrDie(gatewayConfig(cluster))

		_, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing namespaces as the gateway's ServiceAccount before any grant: %v", err)
		// The seeds' message (scenarios.txt:982), from the managed API server.
		Expect(err.Error()).To(Equal(`namespaces is forbidden: User "system:serviceaccount:` + authv1beta1.AgentInstallNamespace + `:` +
			clustergatewayv1alpha1.ManagedServiceAccountName + `" cannot list resource "namespaces" in API group "" at the cluster scope`))

		By("a ManifestWork binds a ClusterRole reading namespaces to the ServiceAccount")
		const role = "e2e-gateway-read-namespaces"
		work := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "e2e-gateway-rbac"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				{RawExtension: rawJSON(&rbacv1.ClusterRole{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
					ObjectMeta: metav1.ObjectMeta{Name: role},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}}},
				})},
				{RawExtension: rawJSON(&rbacv1.ClusterRoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: role},
					RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
					Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: authv1beta1.AgentInstallNamespace,
						Name: clustergatewayv1alpha1.ManagedServiceAccountName}},
				})},
			}}},
		}
		Expect(hubClient.Create(ctx, work)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, work))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(work), &workv1.ManifestWork{}))
			}).WithContext(ctx).Should(BeTrue(), "ManifestWork %s/%s deleted", cluster, work.Name)
		}, NodeTimeout(2*time.Minute))

		Eventually(func() error {
			_, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			return err
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "listing namespaces of %s through the gateway after the grant", cluster)
	}, SpecTimeout(8*time.Minute))

	It("answers 503 naming the cluster while its agent is down, and 200 once it is back", func(ctx SpecContext) {
		// cluster1 only: the other specs' clusters keep their tunnels.
		const cluster = cluster1
		Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(3*time.Minute).
			Should(Equal("ok"), "cluster %s reachable through the gateway", cluster)

		By("stopping the klusterlet of " + cluster)
		restart := stopKlusterlet(cluster)
		Eventually(func(g Gomega) {
			_, err := healthz(ctx, cluster)
			g.Expect(err).To(HaveOccurred())
			status, ok := err.(apierrors.APIStatus)
			g.Expect(ok).To(BeTrue(), "an API status, got %v", err)
			g.Expect(status.Status().Code).To(BeEquivalentTo(http.StatusServiceUnavailable), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("cluster " + cluster + ": cluster-proxy tunnel not connected"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "GET %s/healthz through the gateway with its agent down", cluster)
		// The other cluster is unaffected.
		Expect(healthz(ctx, cluster2)).To(Equal("ok"))

		By("starting it again")
		restart()
		Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(2*time.Minute).
			Should(Equal("ok"), "GET %s/healthz through the gateway after the agent restarted", cluster)
	}, SpecTimeout(8*time.Minute))
})

var _ = Describe("hub RBAC on clustergateways/proxy", func() {
	It("lets a user with a ClusterRole naming cluster1 reach cluster1 and not cluster2", func(ctx SpecContext) {
		for _, cluster := range []string{cluster1, cluster2} {
			Eventually(func() (string, error) { return healthz(ctx, cluster) }).WithContext(ctx).WithTimeout(3*time.Minute).
				Should(Equal("ok"), "cluster %s reachable through the gateway", cluster)
		}
		const user, name = "e2e-gateway-bob", "e2e-gateway-cluster1-only"
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{clustergatewayv1alpha1.GroupVersion.Group}, Resources: []string{"clustergateways/proxy"},
			ResourceNames: []string{cluster1}, Verbs: []string{"get", "create", "update", "patch", "delete"},
		}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		for _, o := range []client.Object{role, binding} {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed()) }, NodeTimeout(time.Minute))
		}
		cfg := rest.CopyConfig(env.Fleet.Hub.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		bob := kubernetes.NewForConfigOrDie(cfg)
		get := func(cluster string) error {
			return bob.Discovery().RESTClient().Get().AbsPath(admin.GatewayPath(cluster) + "/healthz").Do(ctx).Error()
		}
		Eventually(func() error { return get(cluster1) }).WithContext(ctx).WithTimeout(time.Minute).
			Should(Succeed(), "%s reaching cluster1 through the gateway", user)
		err := get(cluster2)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s reaching cluster2: %v", user, err)
		Expect(err.Error()).To(ContainSubstring(`clustergateways.cluster.core.oam.dev "` + cluster2 + `" is forbidden: User "` + user +
			`" cannot get resource "clustergateways/proxy" in API group "cluster.core.oam.dev" at the cluster scope`))
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("flotilla kubeconfig --cluster", func() {
	It("writes a kubeconfig that reaches the cluster through the gateway, and refuses a cluster without one", func(ctx SpecContext) {
		Eventually(func() (string, error) { return healthz(ctx, cluster2) }).WithContext(ctx).WithTimeout(3*time.Minute).
			Should(Equal("ok"), "cluster %s reachable through the gateway", cluster2)
		flotilla := func(args ...string) error {
			root := commands.NewRoot()
			root.SetArgs(args)
			root.SetOut(GinkgoWriter)
			root.SetErr(GinkgoWriter)
			return root.ExecuteContext(ctx)
		}
		out := filepath.Join(GinkgoT().TempDir(), cluster2+".kubeconfig")
		Expect(flotilla("kubeconfig", "--kubeconfig", env.Fleet.Hub.KubeconfigPath, "--cluster", cluster2, "-o", out)).To(Succeed())
		cfg, err := clientcmd.BuildConfigFromFlags("", out)
		Expect(err).NotTo(HaveOccurred())
		kube := kubernetes.NewForConfigOrDie(cfg)
		body, err := kube.Discovery().RESTClient().Get().AbsPath("/healthz").Do(ctx).Raw()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal("ok"))

		err = flotilla("kubeconfig", "--kubeconfig", env.Fleet.Hub.KubeconfigPath, "--cluster", "e2e-gateway-nope")
		Expect(err).To(MatchError("cluster e2e-gateway-nope has no ClusterGateway: enable the add-ons with flotilla addon enable " +
			"cluster-proxy managed-serviceaccount cluster-gateway --clusters e2e-gateway-nope"))
	}, SpecTimeout(5*time.Minute))
})
