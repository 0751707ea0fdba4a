package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
)

// seedCMA is the seeds' managed-serviceaccount ClusterManagementAddOn (an AddOnTemplate
// add-on), as e2e/seeds applies it.
var seedCMA = filepath.Join("..", "..", "..", "e2e", "testdata", "seeds", "addon-addon-gitops-upgrades-3-clustermanagementaddon.yaml")

// hubCluster creates a cluster namespace (and its ManagedCluster) for a spec that only looks
// at the hub.
func hubCluster(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func enable(ctx context.Context, cluster, addon, installNamespace string, configs ...addonv1alpha1.AddOnConfig) *addonv1alpha1.ManagedClusterAddOn {
	GinkgoHelper()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: addon},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: installNamespace, Configs: configs}}
	Expect(admin.Create(ctx, mca)).To(Succeed())
	return mca
}

func getMCA(ctx context.Context, g Gomega, cluster, addon string) *addonv1alpha1.ManagedClusterAddOn {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: cluster, Name: addon}, mca)).To(Succeed())
	return mca
}

func condition(mca *addonv1alpha1.ManagedClusterAddOn, t string) metav1.Condition {
	if c := meta.FindStatusCondition(mca.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

var _ = Describe("built-in add-ons on the hub", func() {
	It("creates each ClusterManagementAddOn only when absent: a user's edit survives", func(ctx SpecContext) {
		for _, name := range builtin.Names() {
			Eventually(ctx, func(g Gomega) {
				cma := &addonv1alpha1.ClusterManagementAddOn{}
				g.Expect(admin.Get(ctx, client.ObjectKey{Name: name}, cma)).To(Succeed())
				g.Expect(cma.Annotations).To(HaveKeyWithValue(addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue))
				g.Expect(cma.Spec.AddOnMeta.DisplayName).To(Equal(name))
			}).WithTimeout(30*time.Second).Should(Succeed(), "ClusterManagementAddOn %s created", name)
		}
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cma := &addonv1alpha1.ClusterManagementAddOn{}
			if err := admin.Get(ctx, client.ObjectKey{Name: builtin.ClusterGateway}, cma); err != nil {
				return err
			}
			cma.Spec.AddOnMeta.Description = "edited by a user"
			return admin.Update(ctx, cma)
		})).To(Succeed())
		Consistently(ctx, func(g Gomega) {
			cma := &addonv1alpha1.ClusterManagementAddOn{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Name: builtin.ClusterGateway}, cma)).To(Succeed())
			g.Expect(cma.Spec.AddOnMeta.Description).To(Equal("edited by a user"))
		}).WithTimeout(3*time.Second).Should(Succeed(), "the user's ClusterManagementAddOn is left as they wrote it")
	}, SpecTimeout(time.Minute))

	It("writes cluster-proxy's status, label and tunnel permission; the install namespace follows the AddOnDeploymentConfig, then the spec, then the default", func(ctx SpecContext) {
		const c1, c2, c3 = "builtin-ns-default", "builtin-ns-spec", "builtin-ns-adc"
		for _, c := range []string{c1, c2, c3} {
			hubCluster(ctx, c)
		}
		enable(ctx, c1, builtin.ClusterProxy, "open-cluster-management-agent-addon")
		enable(ctx, c2, builtin.ClusterProxy, "proxy-here")
		Expect(admin.Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{ObjectMeta: metav1.ObjectMeta{Namespace: c3, Name: "deploy"},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "gateway-from-config"}})).To(Succeed())
		// cluster-gateway: no default configuration to wait for, no registration.
		enable(ctx, c3, builtin.ClusterGateway, "gateway-from-spec", addonv1alpha1.AddOnConfig{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: c3, Name: "deploy"},
		})
		Eventually(ctx, func(g Gomega) {
			mca := getMCA(ctx, g, c3, builtin.ClusterGateway)
			g.Expect(mca.Labels).To(HaveKeyWithValue(builtin.Label, "true"))
			g.Expect(mca.Status.Namespace).To(Equal("gateway-from-config"))
			g.Expect(mca.Status.Registrations).To(BeEmpty())
			g.Expect(mca.Status.HealthCheck.Mode).To(Equal(addonv1alpha1.HealthCheckModeLease))
		}).WithTimeout(30*time.Second).Should(Succeed(), "ManagedClusterAddOn %s/cluster-gateway in its AddOnDeploymentConfig's namespace", c3)
		for c, ns := range map[string]string{c1: "open-cluster-management-cluster-proxy", c2: "proxy-here"} {
			Eventually(ctx, func(g Gomega) {
				mca := getMCA(ctx, g, c, builtin.ClusterProxy)
				g.Expect(mca.Labels).To(HaveKeyWithValue(builtin.Label, "true"))
				g.Expect(mca.Status.Namespace).To(Equal(ns))
				g.Expect(mca.Status.HealthCheck.Mode).To(Equal(addonv1alpha1.HealthCheckModeLease))
				g.Expect(mca.Status.AddOnMeta.DisplayName).To(Equal(builtin.ClusterProxy))
				g.Expect(mca.Status.RelatedObjects).To(ConsistOf(addonv1alpha1.ObjectReference{
					Group: "addon.open-cluster-management.io", Resource: "clustermanagementaddons", Name: builtin.ClusterProxy}))
				g.Expect(mca.Status.Registrations).To(ConsistOf(addonv1alpha1.RegistrationConfig{
					SignerName: certificatesv1.KubeAPIServerClientSignerName,
					Subject: addonv1alpha1.Subject{User: "system:open-cluster-management:cluster:" + c + ":addon:cluster-proxy:agent:proxy-agent",
						Groups: []string{"system:open-cluster-management:cluster:" + c + ":addon:cluster-proxy",
							"system:open-cluster-management:addon:cluster-proxy", "system:authenticated"}},
				}))
				applied := condition(mca, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)
				g.Expect(applied.Status).To(Equal(metav1.ConditionTrue), "RegistrationApplied: %s", applied.Message)
			}).WithTimeout(30*time.Second).Should(Succeed(), "ManagedClusterAddOn %s/cluster-proxy served as a built-in in namespace %s", c, ns)
		}
		rb := &rbacv1.RoleBinding{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: c1, Name: hubaddon.BindingName(builtin.ClusterProxy, c1, false, "ClusterRole", builtin.TunnelClusterRole, 0)}, rb)).To(Succeed())
		Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builtin.TunnelClusterRole}))
		Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hubaddon.ClusterAddonGroup(c1, builtin.ClusterProxy)}))
		cr := &rbacv1.ClusterRole{}
		Expect(admin.Get(ctx, client.ObjectKey{Name: builtin.TunnelClusterRole}, cr)).To(Succeed())
		Expect(cr.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{"proxy.flotilla.dev"}, Resources: []string{"tunnels/proxy"},
			ResourceNames: []string{"cluster-proxy"}, Verbs: []string{"create", "get"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{"cluster-proxy-services"}, Verbs: []string{"get", "list", "watch"}}))
	}, SpecTimeout(2*time.Minute))

	It("runs managed-serviceaccount on the cluster (approved registration, own identity, Lease → Available, tokens), and stands down when the seeds' template ClusterManagementAddOn replaces it", func(ctx SpecContext) {
		enable(ctx, cluster, builtin.ManagedServiceAccount, "open-cluster-management-agent-addon")
		const ns = authv1beta1.AgentInstallNamespace
		Eventually(ctx, func(g Gomega) {
			mca := getMCA(ctx, g, cluster, builtin.ManagedServiceAccount)
			g.Expect(mca.Labels).To(HaveKeyWithValue(builtin.Label, "true"))
			g.Expect(mca.Status.Namespace).To(Equal(ns))
			avail := condition(mca, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
			g.Expect(avail.Status).To(Equal(metav1.ConditionTrue), "Available: %s %s", avail.Reason, avail.Message)
			g.Expect(avail.Reason).To(Equal(addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated))
		}).WithTimeout(90*time.Second).Should(Succeed(), "ManagedClusterAddOn %s/managed-serviceaccount Available from the built-in agent's Lease", cluster)
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "managed-serviceaccount-hub-kubeconfig", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the add-on's hub kubeconfig, from a CSR the csr-addon plugin approved")
		Expect(s.Data).To(HaveKey("tls.crt"))

		m := &authv1beta1.ManagedServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "my-sa"},
			Spec: authv1beta1.ManagedServiceAccountSpec{Rotation: authv1beta1.ManagedServiceAccountRotation{Enabled: true, Validity: metav1.Duration{Duration: time.Hour}}}}
		Expect(admin.Create(ctx, m)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			sec := &corev1.Secret{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(m), sec)).To(Succeed())
			g.Expect(sec.Data).To(HaveKey(authv1beta1.SecretKeyToken))
			// Written by the agent's own hub identity, through the permissions the hub bound.
			g.Expect(sec.ManagedFields).To(ContainElement(HaveField("Manager", "flotilla-managed-serviceaccount")))
		}).WithTimeout(60*time.Second).Should(Succeed(), "token Secret %s/my-sa on the hub", cluster)
		_, err = kube.CoreV1().ServiceAccounts(ns).Get(ctx, "my-sa", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "ServiceAccount %s/my-sa on the managed cluster (the seeds' namespace)", ns)

		// The seeds' ClusterManagementAddOn, applied over the built-in one.
		data, err := os.ReadFile(seedCMA)
		Expect(err).NotTo(HaveOccurred())
		seed := &addonv1alpha1.ClusterManagementAddOn{}
		Expect(yaml.UnmarshalStrict(data, seed)).To(Succeed())
		restore := &addonv1alpha1.ClusterManagementAddOn{}
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &addonv1alpha1.ClusterManagementAddOn{}
			if err := admin.Get(ctx, client.ObjectKey{Name: builtin.ManagedServiceAccount}, cur); err != nil {
				return err
			}
			cur.DeepCopyInto(restore)
			cur.Annotations, cur.Spec = seed.Annotations, seed.Spec
			return admin.Update(ctx, cur)
		})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := &addonv1alpha1.ClusterManagementAddOn{}
				if err := admin.Get(ctx, client.ObjectKey{Name: builtin.ManagedServiceAccount}, cur); err != nil {
					return err
				}
				cur.Annotations, cur.Spec = restore.Annotations, restore.Spec
				return admin.Update(ctx, cur)
			})).To(Succeed())
		})
		Eventually(ctx, func(g Gomega) {
			mca := getMCA(ctx, g, cluster, builtin.ManagedServiceAccount)
			g.Expect(mca.Labels).NotTo(HaveKey(builtin.Label))
			g.Expect(mca.Status.RelatedObjects).To(BeEmpty(), "the built-in's status fields released")
			err := admin.Get(ctx, client.ObjectKey{Namespace: cluster,
				Name: hubaddon.BindingName(builtin.ManagedServiceAccount, cluster, false, "ClusterRole", builtin.MSAAgentClusterRole, 0)}, &rbacv1.RoleBinding{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the built-in's hub permission revoked (error %v)", err)
		}).WithTimeout(30*time.Second).Should(Succeed(), "the built-in stands down for the template add-on")
		late := m.DeepCopy()
		late.ObjectMeta = metav1.ObjectMeta{Namespace: cluster, Name: "after-stand-down"}
		Expect(admin.Create(ctx, late)).To(Succeed())
		Consistently(ctx, func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(late), &corev1.Secret{}))
		}).WithTimeout(5*time.Second).Should(BeTrue(), "no built-in agent serves ManagedServiceAccounts any more")
	}, SpecTimeout(4*time.Minute))
})
