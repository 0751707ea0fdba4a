package addon

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
)

// agentKubeconfig loads the hub kubeconfig Secret the klusterlet wrote for addon on cluster,
// as the agent would mount it.
func agentKubeconfig(g Gomega, cluster, addon string) (*rest.Config, []byte) {
	sec := &corev1.Secret{}
	g.Expect(managed[cluster].client.Get(suiteCtx, client.ObjectKey{Namespace: addonNS, Name: addon + "-hub-kubeconfig"}, sec)).To(Succeed())
	dir := GinkgoT().TempDir()
	for k, v := range sec.Data {
		g.Expect(os.WriteFile(filepath.Join(dir, k), v, 0o600)).To(Succeed())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())
	return cfg, sec.Data["kubeconfig"]
}

func forbidden(err error) bool { return apierrors.IsForbidden(err) }

var _ = Describe("add-on registration and Lease health", Ordered, func() {
	const (
		name     = "reg-agent"
		sharedNS = "reg-shared"
	)

	BeforeAll(func(ctx SpecContext) {
		create(
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-role"}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{"addon.open-cluster-management.io"}, Resources: []string{"managedclusteraddons"}, Verbs: []string{"get"}},
			}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sharedNS}},
		)
		create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: sharedNS, Name: "reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"list"}}}})
		tmpl := agentTemplate(name)
		tmpl.Spec.Registration = []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient,
			KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: []addonv1alpha1.HubPermissionConfig{
				{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: name + "-role"}},
				{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{
					Namespace: sharedNS, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}}},
			}}}}
		create(tmpl, &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"addon.flotilla.dev/health-check": "Lease"}},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: name}}},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			}})
		enable(cluster1, name)
		enable(cluster2, name)
	}, NodeTimeout(5*time.Minute))

	It("gives the agent a hub kubeconfig with exactly the declared rights", func(ctx SpecContext) {
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)).Should(cond(metav1.ConditionTrue, addonv1alpha1.RegistrationAppliedSetPermissionApplied))
		Eventually(func(g Gomega) []addonv1alpha1.RegistrationConfig { return mca(g, cluster1, name).Status.Registrations }).Should(ConsistOf(And(
			HaveField("SignerName", "kubernetes.io/kube-apiserver-client"),
			HaveField("Subject.User", "system:open-cluster-management:cluster:cluster1:addon:reg-agent:agent:reg-agent-agent"),
			HaveField("Subject.Groups", ContainElement("system:open-cluster-management:cluster:cluster1:addon:reg-agent")))))

		var cfg *rest.Config
		Eventually(func(g Gomega) { cfg, _ = agentKubeconfig(g, cluster1, name) }).Should(Succeed())
		kube := kubernetes.NewForConfigOrDie(cfg)
		Eventually(func() error {
			_, err := kube.CoreV1().ConfigMaps(cluster1).List(ctx, metav1.ListOptions{})
			return err
		}).Should(Succeed(), "CurrentCluster: the cluster's namespace")
		Eventually(func() error {
			_, err := kube.CoreV1().ServiceAccounts(sharedNS).List(ctx, metav1.ListOptions{})
			return err
		}).Should(Succeed(), "SingleNamespace: the role in its namespace")
		_, err := kube.CoreV1().ConfigMaps(cluster2).List(ctx, metav1.ListOptions{})
		Expect(forbidden(err)).To(BeTrue(), "another cluster's namespace: %v", err)
		_, err = kube.CoreV1().Secrets(cluster1).List(ctx, metav1.ListOptions{})
		Expect(forbidden(err)).To(BeTrue(), "a resource not granted: %v", err)
		_, err = kube.CoreV1().ConfigMaps(cluster1).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		Expect(forbidden(err)).To(BeTrue(), "a verb not granted: %v", err)
		_, err = kube.CoreV1().ServiceAccounts("default").List(ctx, metav1.ListOptions{})
		Expect(forbidden(err)).To(BeTrue(), "SingleNamespace is one namespace: %v", err)
	}, SpecTimeout(5*time.Minute))

	It("carries the bootstrap kubeconfig's proxy into the agent's kubeconfig (cluster2), which works through it", func(ctx SpecContext) {
		var cfg *rest.Config
		var raw []byte
		Eventually(func(g Gomega) { cfg, raw = agentKubeconfig(g, cluster2, name) }).Should(Succeed())
		Expect(string(raw)).To(ContainSubstring("proxy-url: " + proxy.URL))
		before := proxy.Tunnels()
		cfg.DisableCompression = true
		Eventually(func() error {
			_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(cluster2).List(ctx, metav1.ListOptions{})
			return err
		}).Should(Succeed())
		Expect(proxy.Tunnels()).To(BeNumerically(">", before))
	}, SpecTimeout(5*time.Minute))

	It("reports Lease health: available while the agent renews its Lease, not once it stops", func(ctx SpecContext) {
		Eventually(func() string { return string(mca(Default, cluster1, name).Status.HealthCheck.Mode) }).Should(Equal("Lease"))
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionUnknown, addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound))

		// The agent, its own process (e2e/addon/leaseagent): it reads its ManagedClusterAddOn
		// on the hub with the kubeconfig the klusterlet wrote and renews its Lease on the
		// managed cluster.
		dir := GinkgoT().TempDir()
		Eventually(func(g Gomega) {
			sec := &corev1.Secret{}
			g.Expect(managed[cluster1].client.Get(ctx, client.ObjectKey{Namespace: addonNS, Name: name + "-hub-kubeconfig"}, sec)).To(Succeed())
			for k, v := range sec.Data {
				g.Expect(os.WriteFile(filepath.Join(dir, k), v, 0o600)).To(Succeed())
			}
		}).Should(Succeed())
		managedKC := filepath.Join(dir, "managed.kubeconfig")
		Expect(environment.WriteKubeconfig(managedKC, cluster1, fleet.Managed[0].Config)).To(Succeed())
		bin := filepath.Join(dir, "leaseagent")
		build := exec.Command("go", "build", "-o", bin, "./leaseagent")
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		agent := exec.Command(bin, "--hub-kubeconfig", filepath.Join(dir, "kubeconfig"), "--kubeconfig", managedKC,
			"--cluster-name", cluster1, "--addon-name", name, "--interval", "300ms", "--lease-duration-seconds", strconv.Itoa(addonLeaseSeconds))
		agent.Stdout, agent.Stderr = GinkgoWriter, GinkgoWriter
		Expect(agent.Start()).To(Succeed())
		stopAgent := func() {
			if agent.ProcessState == nil {
				_ = agent.Process.Signal(syscall.SIGTERM)
				_ = agent.Wait()
			}
		}
		DeferCleanup(stopAgent)
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated))
		stopAgent()
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionFalse, addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped))
	}, SpecTimeout(5*time.Minute))

	It("revokes the agent's rights and removes its kubeconfig when the add-on is disabled", func(ctx SpecContext) {
		var cfg *rest.Config
		Eventually(func(g Gomega) { cfg, _ = agentKubeconfig(g, cluster1, name) }).Should(Succeed())
		kube := kubernetes.NewForConfigOrDie(cfg)
		deleteAndWait(&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: name}})
		Eventually(func() bool {
			_, err := kube.CoreV1().ConfigMaps(cluster1).List(ctx, metav1.ListOptions{})
			return forbidden(err)
		}).Should(BeTrue())
		Eventually(func() bool {
			_, err := kube.CoreV1().ServiceAccounts(sharedNS).List(ctx, metav1.ListOptions{})
			return forbidden(err)
		}).Should(BeTrue())
		Eventually(onManaged(cluster1, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-hub-kubeconfig"}})).Should(BeFalse())
		By("cluster2's agent keeps its rights")
		cfg2, _ := agentKubeconfig(Default, cluster2, name)
		_, err := kubernetes.NewForConfigOrDie(cfg2).CoreV1().ConfigMaps(cluster2).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
	}, SpecTimeout(5*time.Minute))
})
