package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/lease"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

const (
	cluster1 = "cluster1"
	cluster2 = "cluster2"
	// spokeOnlyLabel keeps a ClusterClaim on the managed cluster.
	spokeOnlyLabel = "open-cluster-management.io/spoke-only"
)

func managedCluster(name string) *clusterv1.ManagedCluster {
	mc := &clusterv1.ManagedCluster{}
	ExpectWithOffset(1, hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
	return mc
}

func condition(name, t string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		return meta.FindStatusCondition(mc.Status.Conditions, t)
	}
}

func haveStatus(s metav1.ConditionStatus) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", s))
}

func managedClient(cfg *rest.Config) client.Client {
	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// agentHubConfig is the hub identity an agent holds: its signed certificate and key, read from
// hub-kubeconfig-secret on its managed cluster.
func agentHubConfig(a *runningAgent) *rest.Config {
	s := &corev1.Secret{}
	Expect(managedClient(a.managed).Get(suiteCtx, client.ObjectKey{Namespace: a.namespace, Name: "hub-kubeconfig-secret"}, s)).To(Succeed())
	Expect(s.Data).To(HaveKey("tls.crt"))
	return &rest.Config{Host: fleet.Hub.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: fleet.Hub.CAData, CertData: s.Data["tls.crt"], KeyData: s.Data["tls.key"]}}
}

func certNotAfter(a *runningAgent) func(g Gomega) int64 {
	return func(g Gomega) int64 {
		s := &corev1.Secret{}
		g.Expect(managedClient(a.managed).Get(suiteCtx, client.ObjectKey{Namespace: a.namespace, Name: "hub-kubeconfig-secret"}, s)).To(Succeed())
		block, _ := pem.Decode(s.Data["tls.crt"])
		g.Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		return cert.NotAfter.Unix()
	}
}

func bootstrapConfig() *rest.Config {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(bootstrapKC)
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// csrFor returns the registration CSRs of cluster name.
func csrsFor(g Gomega, name string) []certificatesv1.CertificateSigningRequest {
	list := &certificatesv1.CertificateSigningRequestList{}
	g.Expect(hubClient.List(suiteCtx, list, client.MatchingLabels{csr.ClusterNameLabel: name})).To(Succeed())
	return list.Items
}

func csrCondition(c certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == t {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// newCSRRequest returns a PEM certificate request for cn and orgs.
func newCSRRequest(cn string, orgs ...string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func registrationCSR(name, cluster, cn string, orgs ...string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{csr.ClusterNameLabel: cluster}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    newCSRRequest(cn, orgs...),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

func failureCount(plugin string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != csr.PluginFailuresMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "plugin" && l.GetValue() == plugin {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

var _ = Describe("Registration", Ordered, func() {
	It("installs the hub's own plugins as WasmPlugins", func(ctx SpecContext) {
		for _, name := range []string{"csr-renewal", plugininstall.AutoApprovePlugin} {
			Eventually(func(g Gomega) *metav1.Condition {
				wp := &flotillav1alpha1.WasmPlugin{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, wp)).To(Succeed())
				return meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
			}).Should(haveStatus(metav1.ConditionTrue))
		}
	}, SpecTimeout(5*time.Minute))

	It("joins both clusters once the hub admin accepts them", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster1, cluster2})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		for _, name := range []string{cluster1, cluster2} {
			Eventually(condition(name, clusterv1.ManagedClusterConditionHubAccepted)).Should(
				And(haveStatus(metav1.ConditionTrue), HaveField("Reason", clusterv1.ConditionReasonHubClusterAdminAccepted)))
			Eventually(condition(name, clusterv1.ManagedClusterConditionJoined)).Should(haveStatus(metav1.ConditionTrue))
			Eventually(condition(name, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionTrue))
			mc := managedCluster(name)
			Expect(mc.Finalizers).To(ContainElement(clusterv1.ManagedClusterFinalizer))
			Expect(mc.Status.Version.Kubernetes).NotTo(BeEmpty())
			// Namespace and RBAC exist.
			Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})).To(Succeed())
			Expect(hubClient.Get(ctx, client.ObjectKey{Name: rbac.ClusterRoleName(name)}, &rbacv1.ClusterRole{})).To(Succeed())
			Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: name, Name: rbac.RegistrationRoleBindingName(name)}, &rbacv1.RoleBinding{})).To(Succeed())
			Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: name, Name: rbac.WorkRoleBindingName(name)}, &rbacv1.RoleBinding{})).To(Succeed())
			// Available clusters carry no built-in taint.
			Eventually(func(g Gomega) []clusterv1.Taint {
				mc := &clusterv1.ManagedCluster{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
				return mc.Spec.Taints
			}).Should(BeEmpty())
		}
		rows, err := admin.ClusterRows(ctx, hubClient)
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(ContainElement(And(HaveField("Name", cluster1), HaveField("Accepted", "true"),
			HaveField("Joined", "True"), HaveField("Available", "True"), HaveField("ClusterSet", "default"))))
	}, SpecTimeout(5*time.Minute))

	It("puts clusters into the default and global sets and binds sets to namespaces", func(ctx SpecContext) {
		for _, name := range []string{clusterv1beta2.DefaultClusterSetName, clusterv1beta2.GlobalClusterSetName} {
			Eventually(func(g Gomega) {
				set := &clusterv1beta2.ManagedClusterSet{}
				g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, set)).To(Succeed())
				clusters := &clusterv1.ManagedClusterList{}
				g.Expect(hubClient.List(ctx, clusters)).To(Succeed())
				c := meta.FindStatusCondition(set.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(clusterv1beta2.ConditionReasonClustersSelected))
				g.Expect(c.Message).To(Equal(fmt.Sprintf("%d ManagedClusters selected", len(clusters.Items))))
			}).Should(Succeed())
		}
		empty := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}
		Expect(hubClient.Create(ctx, empty)).To(Succeed())
		Eventually(func(g Gomega) *metav1.Condition {
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(empty), empty)).To(Succeed())
			return meta.FindStatusCondition(empty.Status.Conditions, clusterv1beta2.ManagedClusterSetConditionEmpty)
		}).Should(And(haveStatus(metav1.ConditionTrue), HaveField("Reason", clusterv1beta2.ConditionReasonNoClusterMatched),
			HaveField("Message", "No ManagedCluster selected")))

		Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workspace"}})).To(Succeed())
		bound := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "workspace", Name: "default"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"}}
		missing := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "workspace", Name: "nosuchset"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "nosuchset"}}
		Expect(hubClient.Create(ctx, bound)).To(Succeed())
		Expect(hubClient.Create(ctx, missing)).To(Succeed())
		boundCond := func(b *clusterv1beta2.ManagedClusterSetBinding) func(g Gomega) *metav1.Condition {
			return func(g Gomega) *metav1.Condition {
				g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
				return meta.FindStatusCondition(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType)
			}
		}
		Eventually(boundCond(bound)).Should(And(haveStatus(metav1.ConditionTrue), HaveField("Reason", clusterv1beta2.ConditionReasonClusterSetBound)))
		Eventually(boundCond(missing)).Should(And(haveStatus(metav1.ConditionFalse), HaveField("Reason", clusterv1beta2.ConditionReasonClusterSetNotFound)))
		// Creating the set binds the binding.
		Expect(hubClient.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "nosuchset"}})).To(Succeed())
		Eventually(boundCond(missing)).Should(haveStatus(metav1.ConditionTrue))

		rows, err := admin.ClusterSetRows(ctx, hubClient)
		Expect(err).NotTo(HaveOccurred())
		Expect(rows).To(ContainElement(And(HaveField("Name", "default"), HaveField("BoundNamespaces", ConsistOf("workspace")),
			HaveField("Clusters", ContainElements(cluster1, cluster2)))))
	}, SpecTimeout(5*time.Minute))

	It("binds a set to a namespace only for users allowed to create managedclustersets/bind on it", func(ctx SpecContext) {
		const set, ns, user = "team-a", "team-a-ws", "binder"
		Expect(hubClient.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}})).To(Succeed())
		Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		// The user may create and read bindings in ns, but holds no bind permission on any set.
		Expect(hubClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bindings"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta2.GroupVersion.Group}, Resources: []string{"managedclustersetbindings"},
				Verbs: []string{"create", "get"}}}})).To(Succeed())
		Expect(hubClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bindings"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bindings"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
		cfg, err := fleet.Hub.UserConfig(user)
		Expect(err).NotTo(HaveOccurred())
		uc := managedClient(cfg)
		binding := func(name string) *clusterv1beta2.ManagedClusterSetBinding {
			return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: name}}
		}
		denied := func(name string) OmegaMatcher {
			return And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(
				"policy bind: user "+user+" cannot bind the ManagedClusterSet "+name+" to namespace "+ns+
					" (spec.clusterSet of the ManagedClusterSetBinding "+name+`): needs "create" on managedclustersets/bind.cluster.open-cluster-management.io named `+name)))
		}
		// RBAC for the Role may take a moment to be seen; until then the error is RBAC's.
		Eventually(func() error { return uc.Create(ctx, binding(set)) }).Should(denied(set))

		Expect(hubClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bind-" + set},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1beta2.GroupVersion.Group}, Resources: []string{"managedclustersets/bind"},
				ResourceNames: []string{set}, Verbs: []string{"create"}}}})).To(Succeed())
		Expect(hubClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bind-" + set},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bind-" + set},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
		b := binding(set)
		Eventually(func() error { return uc.Create(ctx, b) }).Should(Succeed())
		Eventually(func(g Gomega) *metav1.Condition {
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return meta.FindStatusCondition(b.Status.Conditions, clusterv1beta2.ClusterSetBindingBoundType)
		}).Should(And(haveStatus(metav1.ConditionTrue), HaveField("Reason", clusterv1beta2.ConditionReasonClusterSetBound)))
		// The grant names one set: binding another is still refused.
		Expect(uc.Create(ctx, binding(clusterv1beta2.DefaultClusterSetName))).To(denied(clusterv1beta2.DefaultClusterSetName))
	}, SpecTimeout(5*time.Minute))

	It("syncs cluster claims, skipping spoke-only ones", func(ctx SpecContext) {
		mc1 := managedClient(fleet.Managed[0].Config)
		claim := func(name, value string, labels map[string]string) *clusterv1alpha1.ClusterClaim {
			return &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
		}
		claims := func(g Gomega) map[string]string {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster1}, mc)).To(Succeed())
			out := map[string]string{}
			for _, c := range mc.Status.ClusterClaims {
				out[c.Name] = c.Value
			}
			return out
		}
		region := claim("region.example.com", "eu-west", nil)
		Expect(mc1.Create(ctx, region)).To(Succeed())
		Expect(mc1.Create(ctx, claim("secret.example.com", "local", map[string]string{spokeOnlyLabel: ""}))).To(Succeed())
		Eventually(claims).Should(And(HaveKeyWithValue("region.example.com", "eu-west"), Not(HaveKey("secret.example.com"))))

		Expect(mc1.Get(ctx, client.ObjectKeyFromObject(region), region)).To(Succeed())
		region.Spec.Value = "eu-central"
		Expect(mc1.Update(ctx, region)).To(Succeed())
		Eventually(claims).Should(HaveKeyWithValue("region.example.com", "eu-central"))

		Expect(mc1.Delete(ctx, region)).To(Succeed())
		Eventually(claims).ShouldNot(HaveKey("region.example.com"))
		Expect(claims(Default)).NotTo(HaveKey("secret.example.com"))
	}, SpecTimeout(5*time.Minute))

	It("limits the number of custom claims to --max-custom-cluster-claims", func(ctx SpecContext) {
		// A separate agent with a limit of 2, sharing cluster1's API server.
		m := fleet.Managed[0]
		mc := managedClient(m.Config)
		for _, n := range []string{"a.limit.example.com", "b.limit.example.com", "c.limit.example.com"} {
			Expect(mc.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: n},
				Spec: clusterv1alpha1.ClusterClaimSpec{Value: "v"}})).To(Succeed())
		}
		Expect(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-limited"}})).To(Succeed())
		a := startAgent("limited", m.Config, "agent-limited", 2)
		Eventually(func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{"limited"})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		Eventually(condition("limited", clusterv1.ManagedClusterConditionJoined)).Should(haveStatus(metav1.ConditionTrue))
		Eventually(func(g Gomega) []string {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: "limited"}, mc)).To(Succeed())
			var custom []string
			for _, c := range mc.Status.ClusterClaims {
				if strings.HasSuffix(c.Name, ".limit.example.com") {
					custom = append(custom, c.Name)
				}
			}
			return custom
		}).Should(HaveLen(2))
		a.stop()
		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "limited"}})).To(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("keeps isolating one cluster's agent from another cluster's objects", func(ctx SpecContext) {
		a1 := managedAgent(cluster1)
		c1 := managedClient(agentHubConfig(a1))
		// Its own cluster is readable and its lease writable...
		Expect(c1.Get(ctx, client.ObjectKey{Name: cluster1}, &clusterv1.ManagedCluster{})).To(Succeed())
		own := &coordinationv1.Lease{}
		Expect(c1.Get(ctx, client.ObjectKey{Namespace: cluster1, Name: lease.Name}, own)).To(Succeed())
		// ...the other cluster's are not.
		other := &clusterv1.ManagedCluster{}
		Expect(apierrors.IsForbidden(c1.Get(ctx, client.ObjectKey{Name: cluster2}, other))).To(BeTrue())
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"evil":"yes"}}}`))
		Expect(apierrors.IsForbidden(c1.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}}, patch))).To(BeTrue())
		Expect(apierrors.IsForbidden(c1.Status().Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}}, patch))).To(BeTrue())
		Expect(apierrors.IsForbidden(c1.Get(ctx, client.ObjectKey{Namespace: cluster2, Name: lease.Name}, &coordinationv1.Lease{}))).To(BeTrue())
		Expect(apierrors.IsForbidden(c1.Patch(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: cluster2, Name: lease.Name}}, patch))).To(BeTrue())

		// Everything the agent is granted in its own cluster namespace (ManifestWorks, their status,
		// ManagedClusterAddOns, their status, Leases, Events) works there and is refused in the
		// other cluster's namespace. Each namespace holds a ManifestWork and a ManagedClusterAddOn.
		for _, ns := range []string{cluster1, cluster2} {
			Expect(hubClient.Create(ctx, isolationWork(ns, "isolation"))).To(Succeed())
			Expect(hubClient.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation"}})).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, ns := range []string{cluster1, cluster2} {
				Expect(hubClient.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation"}})).To(Succeed())
				Expect(hubClient.Delete(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation"}})).To(Succeed())
			}
		}, NodeTimeout(2*time.Minute))
		label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched-by":"agent"}}}`))
		status := client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[{"type":"Touched","status":"True","reason":"Agent","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`))
		work := func(ns string) *workv1.ManifestWork {
			return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation"}}
		}
		addOn := func(ns string) *addonv1alpha1.ManagedClusterAddOn {
			return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation"}}
		}
		// fresh reads the object as the hub admin, so an update carries a current resourceVersion.
		fresh := func(o client.Object) client.Object {
			Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			return o
		}
		attempts := []struct {
			what string
			try  func(ns string) error
		}{
			{"get manifestworks", func(ns string) error { return c1.Get(ctx, client.ObjectKeyFromObject(work(ns)), work(ns)) }},
			{"list manifestworks", func(ns string) error { return c1.List(ctx, &workv1.ManifestWorkList{}, client.InNamespace(ns)) }},
			// Read-modify-write races the work agent's own writes to the work: a conflict is
			// retried, a Forbidden is not.
			{"update manifestworks", func(ns string) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					w := fresh(work(ns)).(*workv1.ManifestWork)
					w.Labels = map[string]string{"updated-by": "agent"}
					return c1.Update(ctx, w)
				})
			}},
			{"patch manifestworks", func(ns string) error { return c1.Patch(ctx, work(ns), label) }},
			{"patch manifestworks/status", func(ns string) error { return c1.Status().Patch(ctx, work(ns), status) }},
			{"update manifestworks/status", func(ns string) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error { return c1.Status().Update(ctx, fresh(work(ns))) })
			}},
			{"delete manifestworks", func(ns string) error {
				doomed := isolationWork(ns, "isolation-doomed")
				Expect(hubClient.Create(ctx, doomed)).To(Succeed())
				DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, doomed))).To(Succeed()) }, NodeTimeout(2*time.Minute))
				return c1.Delete(ctx, doomed)
			}},
			{"get managedclusteraddons", func(ns string) error { return c1.Get(ctx, client.ObjectKeyFromObject(addOn(ns)), addOn(ns)) }},
			{"list managedclusteraddons", func(ns string) error {
				return c1.List(ctx, &addonv1alpha1.ManagedClusterAddOnList{}, client.InNamespace(ns))
			}},
			{"patch managedclusteraddons/status", func(ns string) error { return c1.Status().Patch(ctx, addOn(ns), status) }},
			{"list leases", func(ns string) error { return c1.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace(ns)) }},
			{"update leases", func(ns string) error {
				return c1.Update(ctx, fresh(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease.Name}}))
			}},
			{"create leases", func(ns string) error {
				return c1.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "isolation-" + ns}})
			}},
			{"list events", func(ns string) error { return c1.List(ctx, &corev1.EventList{}, client.InNamespace(ns)) }},
			{"create events", func(ns string) error {
				return c1.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "isolation-"},
					InvolvedObject: corev1.ObjectReference{Kind: "ManifestWork", Namespace: ns, Name: "isolation"},
					Reason:         "Isolation", Message: "written by cluster1's agent", Type: corev1.EventTypeNormal})
			}},
		}
		for _, at := range attempts {
			Expect(at.try(cluster1)).To(Succeed(), "%s in its own namespace %s", at.what, cluster1)
			err := at.try(cluster2)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s in %s by cluster1's agent: want Forbidden, got %v", at.what, cluster2, err)
		}
	}, SpecTimeout(5*time.Minute))

	It("denies a CSR in which one cluster's agent asks for another cluster's identity", func(ctx SpecContext) {
		k1 := kubernetes.NewForConfigOrDie(agentHubConfig(managedAgent(cluster1)))
		req := registrationCSR("steal-cluster2", cluster2, rbac.AgentUser(cluster2, "evil"), rbac.ClusterGroup(cluster2))
		_, err := k1.CertificatesV1().CertificateSigningRequests().Create(ctx, req, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) *certificatesv1.CertificateSigningRequestCondition {
			got, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, req.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return csrCondition(*got, certificatesv1.CertificateDenied)
		}).Should(And(Not(BeNil()), HaveField("Reason", csr.ReasonIdentityRejected), HaveField("Message", ContainSubstring(cluster1))))
	}, SpecTimeout(5*time.Minute))

	It("does not let the bootstrap identity approve its CSR or accept its cluster", func(ctx SpecContext) {
		bk := kubernetes.NewForConfigOrDie(bootstrapConfig())
		bc := managedClient(bootstrapConfig())
		req := registrationCSR("bootstrap-self", "sneaky", rbac.AgentUser("sneaky", "a"), rbac.ClusterGroup("sneaky"))
		created, err := bk.CertificatesV1().CertificateSigningRequests().Create(ctx, req, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		created.Status.Conditions = append(created.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Self"})
		_, err = bk.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, created, metav1.UpdateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "approving its own CSR: %v", err)

		// Creating an already-accepted cluster is refused by the admission policy (which the
		// API server may take a moment to load), updating one by RBAC.
		Eventually(func() error {
			return bc.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
		}).Should(Satisfy(apierrors.IsForbidden))
		Expect(bc.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"}})).To(Succeed())
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":true}}`))
		Expect(apierrors.IsForbidden(bc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"}}, patch))).To(BeTrue())
		Expect(managedCluster("sneaky").Spec.HubAcceptsClient).To(BeFalse())
		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "sneaky"}})).To(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("lets only users allowed to update managedclusters/accept set hubAcceptsClient, even if they may update ManagedClusters", func(ctx SpecContext) {
		const name, user = "gated", "cluster-editor"
		Expect(hubClient.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		}, NodeTimeout(2*time.Minute))
		// RBAC lets the user update and patch ManagedClusters, so only the admission check can refuse.
		Expect(hubClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{clusterv1.GroupVersion.Group}, Resources: []string{"managedclusters"},
				Verbs: []string{"get", "list", "update", "patch"}}}})).To(Succeed())
		Expect(hubClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
		cfg, err := fleet.Hub.UserConfig(user)
		Expect(err).NotTo(HaveOccurred())
		uc := managedClient(cfg)
		relabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/owner":"editor"}}}`))
		Eventually(func() error {
			return uc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, relabel)
		}).Should(Succeed())
		accept := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":true}}`))
		err = uc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, accept)
		Expect(err).To(And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(
			"policy accept: user "+user+" cannot accept the ManagedCluster "+name+` (spec.hubAcceptsClient: true): needs "update" on managedclusters/accept.register.open-cluster-management.io named `+name))))
		// A full update is checked as a patch is (read again after a conflict: the hub's
		// controllers write the cluster too).
		Eventually(func() error {
			mc := managedCluster(name)
			mc.Spec.HubAcceptsClient = true
			return uc.Update(ctx, mc)
		}).Should(And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring("managedclusters/accept"))))
		Expect(managedCluster(name).Spec.HubAcceptsClient).To(BeFalse())

		// With update on managedclusters/accept for this cluster, the same patch is allowed.
		Expect(hubClient.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user + "-accept"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"register.open-cluster-management.io"}, Resources: []string{"managedclusters/accept"},
				ResourceNames: []string{name}, Verbs: []string{"update"}}}})).To(Succeed())
		Expect(hubClient.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-accept"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user + "-accept"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})).To(Succeed())
		Eventually(func() error {
			return uc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, accept)
		}).Should(Succeed())
		Expect(managedCluster(name).Spec.HubAcceptsClient).To(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("does not let an accepted agent move its cluster into another cluster set (managedclustersets/join)", func(ctx SpecContext) {
		a := managedAgent(cluster1)
		c1 := managedClient(agentHubConfig(a))
		const label = "cluster.open-cluster-management.io/clusterset"
		before := managedCluster(cluster1).Labels[label]
		// The agent may update (not patch) its own ManagedCluster (RBAC), so only the join policy
		// refuses.
		relabel := func(key, value string) error {
			mc := &clusterv1.ManagedCluster{}
			if err := c1.Get(ctx, client.ObjectKey{Name: cluster1}, mc); err != nil {
				return err
			}
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels[key] = value
			return c1.Update(ctx, mc)
		}
		var err error
		Eventually(func() error { err = relabel(label, "global"); return err }).Should(Not(Satisfy(apierrors.IsConflict)))
		Expect(err).To(And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(
			"policy join: user system:open-cluster-management:"+cluster1+":"))))
		Expect(err).To(MatchError(ContainSubstring("cannot add the ManagedCluster " + cluster1 + " to the ManagedClusterSet global (label " + label + `): needs "create" on managedclustersets/join`)))
		Expect(managedCluster(cluster1).Labels[label]).To(Equal(before))
		// Another label is the agent's to change: the gate is the cluster-set label only.
		Eventually(func() error { return relabel("example.com/zone", "a") }).Should(Succeed()) // retried on conflict with the agent's own writes
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster1}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/zone":null}}}`)))).To(Succeed())
		}, NodeTimeout(2*time.Minute))
	}, SpecTimeout(5*time.Minute))

	It("denies CSRs a plugin denies, naming the plugin", func(ctx SpecContext) {
		loadPlugin("blocklist", `"deny:blocked"`)
		DeferCleanup(unloadPlugin, "blocklist")
		m := fleet.Managed[1]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-blocked"}})).To(Succeed())
		a := startAgent("blocked1", m.Config, "agent-blocked", 0)
		DeferCleanup(a.stop)
		Eventually(func(g Gomega) {
			items := csrsFor(g, "blocked1")
			g.Expect(items).NotTo(BeEmpty())
			c := csrCondition(items[0], certificatesv1.CertificateDenied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csr.ReasonPluginDenied))
			g.Expect(c.Message).To(ContainSubstring("blocklist"))
			g.Expect(c.Message).To(ContainSubstring("cluster blocked1 is blocked"))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("approves first-time CSRs the configured csr-autoapprove plugin approves, without the admin (ManagedClusterAutoApproval off)", func(ctx SpecContext) {
		m := fleet.Managed[1]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-auto"}})).To(Succeed())
		a := startAgent("auto1", m.Config, "agent-auto", 0)
		DeferCleanup(a.stop)
		Eventually(func(g Gomega) {
			items := csrsFor(g, "auto1")
			g.Expect(items).NotTo(BeEmpty())
			c := csrCondition(items[0], certificatesv1.CertificateApproved)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(csr.ReasonPluginApproved))
			g.Expect(c.Message).To(ContainSubstring(plugininstall.AutoApprovePlugin))
			g.Expect(items[0].Status.Certificate).NotTo(BeEmpty())
		}).Should(Succeed())
		// CSR approval is only half of the opt-in: the cluster is not accepted by it.
		Expect(managedCluster("auto1").Spec.HubAcceptsClient).To(BeFalse())
	}, SpecTimeout(5*time.Minute))

	It("with ManagedClusterAutoApproval on, also accepts the cluster whose first CSR a plugin approved", func(ctx SpecContext) {
		gate := string(featuregates.ManagedClusterAutoApproval)
		Expect(hubGates.SetFromMap(map[string]bool{gate: true})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(hubGates.SetFromMap(map[string]bool{gate: false})).To(Succeed()) }, NodeTimeout(2*time.Minute))
		m := fleet.Managed[1]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-auto2"}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "auto2"}})).To(Succeed())
		}, NodeTimeout(2*time.Minute))
		a := startAgent("auto2", m.Config, "agent-auto2", 0)
		DeferCleanup(a.stop) // before the deletion above, or the agent would register again

		// The cluster joins with no admin action: no flotilla accept, no patch of hubAcceptsClient.
		Eventually(condition("auto2", clusterv1.ManagedClusterConditionJoined)).Should(haveStatus(metav1.ConditionTrue))
		Eventually(condition("auto2", clusterv1.ManagedClusterConditionHubAccepted)).Should(And(haveStatus(metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("CSRApproval plugin "+plugininstall.AutoApprovePlugin))))
		mc := managedCluster("auto2")
		Expect(mc.Spec.HubAcceptsClient).To(BeTrue())
		Expect(mc.Annotations).To(And(HaveKeyWithValue(managedcluster.AutoAcceptedByAnnotation, plugininstall.AutoApprovePlugin),
			HaveKey(managedcluster.AutoAcceptedOnAnnotation)))
		Eventually(func(g Gomega) *certificatesv1.CertificateSigningRequestCondition {
			items := csrsFor(g, "auto2")
			g.Expect(items).NotTo(BeEmpty())
			return csrCondition(items[0], certificatesv1.CertificateApproved)
		}).Should(And(Not(BeNil()), HaveField("Reason", csr.ReasonPluginApproved)))
		Eventually(func(g Gomega) {
			evs, err := hubKube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=auto2"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", csr.ReasonAutoAccepted),
				HaveField("Note", ContainSubstring(plugininstall.AutoApprovePlugin)))))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("blocks an approving plugin while another traps, records an Event and a metric, and approves once the trap is gone", func(ctx SpecContext) {
		// Both plugins apply to trap1: one would approve it, the other crashes on it. A failing
		// fail-closed plugin must keep the approval from taking effect.
		loadPlugin("trap-approver", `"approve:trap"`)
		DeferCleanup(unloadPlugin, "trap-approver")
		loadPlugin("crashy", `"trap:trap"`)
		trapLoaded := true
		DeferCleanup(func(ctx SpecContext) {
			if trapLoaded {
				unloadPlugin("crashy")
			}
		}, NodeTimeout(2*time.Minute))
		before := failureCount("crashy")
		m := fleet.Managed[1]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-trap"}})).To(Succeed())
		a := startAgent("trap1", m.Config, "agent-trap", 0)
		DeferCleanup(a.stop)
		var name string
		Eventually(func(g Gomega) {
			items := csrsFor(g, "trap1")
			g.Expect(items).NotTo(BeEmpty())
			name = items[0].Name
			evs, err := hubKube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(evs.Items).To(ContainElement(And(HaveField("Reason", "CSRApprovalPluginFailed"), HaveField("Note", ContainSubstring("crashy")))))
		}).Should(Succeed())
		reviewed := failureCount("crashy")
		Expect(reviewed).To(BeNumerically(">", before))

		// Reviews of one CSR never overlap, so a further failed review means the one counted above
		// (with both plugins loaded) has finished, approval included had it approved. Relabelling
		// the cluster asks for that further review.
		Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "trap1"}},
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/review":"again"}}}`)))).To(Succeed())
		Eventually(func() float64 { return failureCount("crashy") }).Should(BeNumerically(">", reviewed))
		got, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(csr.IsPending(got)).To(BeTrue(), "a trapping plugin must keep trap-approver's approval from taking effect: %+v", got.Status)

		// Without the trap, the same approving plugin approves the waiting CSR.
		unloadPlugin("crashy")
		trapLoaded = false
		Eventually(func(g Gomega) *certificatesv1.CertificateSigningRequestCondition {
			got, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return csrCondition(*got, certificatesv1.CertificateApproved)
		}).Should(And(Not(BeNil()), HaveField("Reason", csr.ReasonPluginApproved), HaveField("Message", ContainSubstring("trap-approver"))))
	}, SpecTimeout(5*time.Minute))

	It("looks at pending CSRs again when the plugins change", func(ctx SpecContext) {
		m := fleet.Managed[1]
		Expect(managedClient(m.Config).Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agent-late"}})).To(Succeed())
		a := startAgent("late1", m.Config, "agent-late", 0)
		DeferCleanup(a.stop)
		// No plugin decides for late1: its CSR waits, and has been reviewed (plugins abstained).
		Eventually(func(g Gomega) {
			items := csrsFor(g, "late1")
			g.Expect(items).NotTo(BeEmpty())
			g.Expect(csr.IsPending(&items[0])).To(BeTrue())
		}).Should(Succeed())
		loadPlugin("late-approver", `"approve:late"`)
		DeferCleanup(unloadPlugin, "late-approver")
		Eventually(func(g Gomega) {
			items := csrsFor(g, "late1")
			g.Expect(items).NotTo(BeEmpty())
			c := csrCondition(items[0], certificatesv1.CertificateApproved)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("late-approver"))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("rotates the agent's certificate before it expires and keeps working", func(ctx SpecContext) {
		a := managedAgent(cluster1)
		first := certNotAfter(a)(Default)
		Eventually(certNotAfter(a), 3*signingDuration).Should(BeNumerically(">", first))
		// The renewal CSR was approved by the renewal plugin, and the cluster stayed healthy.
		Eventually(func(g Gomega) {
			approved := 0
			for _, c := range csrsFor(g, cluster1) {
				if cond := csrCondition(c, certificatesv1.CertificateApproved); cond != nil && cond.Reason == csr.ReasonPluginApproved {
					approved++
				}
			}
			g.Expect(approved).To(BeNumerically(">=", 1))
		}).Should(Succeed())
		Eventually(condition(cluster1, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionTrue))
		c1 := managedClient(agentHubConfig(a))
		Expect(c1.Get(ctx, client.ObjectKey{Name: cluster1}, &clusterv1.ManagedCluster{})).To(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("marks a cluster whose lease stops Unknown and unreachable, and recovers it, keeping others' taints", func(ctx SpecContext) {
		// An admin's taint is no hub taint: the hub adds and removes its own around it.
		adminTaint := clusterv1.Taint{Key: "example.com/maintenance", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now()}
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mc := &clusterv1.ManagedCluster{}
			if err := hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, mc); err != nil {
				return err
			}
			mc.Spec.Taints = append(mc.Spec.Taints, adminTaint)
			return hubClient.Update(ctx, mc)
		})).To(Succeed())
		isAdminTaint := HaveField("Key", adminTaint.Key)

		a := managedAgent(cluster2)
		a.stop()
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionAvailable)).Should(
			And(haveStatus(metav1.ConditionUnknown), HaveField("Reason", clusterv1.ConditionReasonManagedClusterLeaseUpdateStopped)))
		var added metav1.Time
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, mc)).To(Succeed())
			unreachable := And(HaveField("Key", clusterv1.ManagedClusterTaintUnreachable),
				HaveField("Effect", clusterv1.TaintEffectNoSelect), HaveField("Value", ""))
			g.Expect(mc.Spec.Taints).To(ConsistOf(unreachable, isAdminTaint))
			for _, t := range mc.Spec.Taints {
				if t.Key == clusterv1.ManagedClusterTaintUnreachable {
					added = t.TimeAdded
				}
			}
			g.Expect(added.IsZero()).To(BeFalse())
		}).Should(Succeed())

		startAgent(cluster2, a.managed, "", 0)
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionTrue))
		taints := func(g Gomega) []clusterv1.Taint {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, mc)).To(Succeed())
			return mc.Spec.Taints
		}
		Eventually(taints).Should(ConsistOf(isAdminTaint))

		Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"taints":[]}}`)))).To(Succeed())
		Eventually(taints).Should(BeEmpty())
	}, SpecTimeout(5*time.Minute))

	It("revokes access when hubAcceptsClient is set back to false, and restores it on accept", func(ctx SpecContext) {
		a := managedAgent(cluster2)
		c2 := managedClient(agentHubConfig(a))
		deny := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":false}}`))
		Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}}, deny)).To(Succeed())
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionHubAccepted)).Should(
			And(haveStatus(metav1.ConditionFalse), HaveField("Reason", clusterv1.ConditionReasonHubClusterAdminDenied)))
		Eventually(func() bool {
			l := &coordinationv1.Lease{}
			return apierrors.IsForbidden(c2.Get(ctx, client.ObjectKey{Namespace: cluster2, Name: lease.Name}, l))
		}).Should(BeTrue())
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"conditions":[]}}`))
		Expect(apierrors.IsForbidden(c2.Status().Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}}, patch))).To(BeTrue())
		// The lease goes stale: Unknown and unreachable.
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionUnknown))

		_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster2})
		Expect(err).NotTo(HaveOccurred())
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionHubAccepted)).Should(haveStatus(metav1.ConditionTrue))
		Eventually(condition(cluster2, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionTrue))
	}, SpecTimeout(5*time.Minute))

	It("cleans up and revokes everything when a ManagedCluster is deleted", func(ctx SpecContext) {
		a := managedAgent(cluster2)
		cfg := agentHubConfig(a)
		// Stop the agent first: a live agent would register the cluster again right away.
		a.stop()
		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster2}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, &clusterv1.ManagedCluster{}))
		}).Should(BeTrue())
		Expect(apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: rbac.ClusterRoleName(cluster2)}, &rbacv1.ClusterRole{}))).To(BeTrue())
		Expect(apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: rbac.ClusterRoleName(cluster2)}, &rbacv1.ClusterRoleBinding{}))).To(BeTrue())
		Eventually(func(g Gomega) []certificatesv1.CertificateSigningRequest { return csrsFor(g, cluster2) }).Should(BeEmpty())
		Eventually(func() bool {
			ns := &corev1.Namespace{}
			err := hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, ns)
			return apierrors.IsNotFound(err) || (err == nil && !ns.DeletionTimestamp.IsZero())
		}).Should(BeTrue())
		// The cleanup hook was waited for: its first call asked to wait, the second let deletion go on.
		Expect(cleanupHook.count(cluster2)).To(BeNumerically(">=", 2))
		c2 := managedClient(cfg)
		Expect(apierrors.IsForbidden(c2.Get(ctx, client.ObjectKey{Name: cluster2}, &clusterv1.ManagedCluster{}))).To(BeTrue())
		Expect(apierrors.IsForbidden(c2.Create(ctx, registrationCSRObject()))).To(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("lets the bootstrap identity list and watch ManagedClusters as OCM's agent does, and nothing more", func(ctx SpecContext) {
		scheme, err := manager.NewScheme()
		Expect(err).NotTo(HaveOccurred())
		bc, err := client.NewWithWatch(bootstrapConfig(), client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		const name = "bootstrap-watcher"
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
		}, NodeTimeout(2*time.Minute))

		// OCM's agent waits for acceptance with a list and watch of its own ManagedCluster (by a
		// field selector on the name); OCM's bootstrap role allows both, without a name.
		Expect(bc.List(ctx, &clusterv1.ManagedClusterList{})).To(Succeed())
		w, err := bc.Watch(ctx, &clusterv1.ManagedClusterList{}, client.MatchingFields{"metadata.name": name})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		Expect(bc.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(w.ResultChan()).Should(Receive(And(HaveField("Type", BeEquivalentTo("ADDED")),
			HaveField("Object", HaveField("ObjectMeta.Name", name)))))

		// Reading clusters gives it no way to change one: it still may not accept (the admission
		// policy on create, RBAC on update), relabel or delete a cluster.
		Eventually(func() error {
			return bc.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name + "-accepted"},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})
		}).Should(Satisfy(apierrors.IsForbidden))
		mc := &clusterv1.ManagedCluster{}
		Expect(bc.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		mc.Spec.HubAcceptsClient = true
		Expect(bc.Update(ctx, mc)).To(Satisfy(apierrors.IsForbidden))
		relabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/owner":"bootstrap"}}}`))
		Expect(bc.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, relabel)).To(Satisfy(apierrors.IsForbidden))
		Expect(bc.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster1}})).To(Satisfy(apierrors.IsForbidden))
		Expect(managedCluster(name).Spec.HubAcceptsClient).To(BeFalse())

		// Unlike OCM's role it reads no ConfigMaps (OCM grants get for clusteradm join), nor Secrets.
		Expect(bc.List(ctx, &corev1.ConfigMapList{})).To(Satisfy(apierrors.IsForbidden))
		Expect(bc.Get(ctx, client.ObjectKey{Namespace: "kube-public", Name: "kube-root-ca.crt"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsForbidden))
		Expect(bc.List(ctx, &corev1.SecretList{})).To(Satisfy(apierrors.IsForbidden))
	}, SpecTimeout(5*time.Minute))

	It("joins a cluster whose agent bootstraps with a Kubernetes bootstrap token, once the hub admin accepts it", func(ctx SpecContext) {
		kc, err := bootstrap.BootstrapTokenKubeconfig(ctx, fleet.Hub.Config, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
		Expect(err).NotTo(HaveOccurred())
		id, _, ok := strings.Cut(cfg.BearerToken, ".")
		Expect(ok).To(BeTrue(), "token %q is not <id>.<secret>", cfg.BearerToken)
		s := &corev1.Secret{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + id}, s)).To(Succeed())
		Expect(s.Type).To(BeEquivalentTo("bootstrap.kubernetes.io/token"))
		Expect(s.Data).To(And(HaveKeyWithValue("usage-bootstrap-authentication", []byte("true")),
			HaveKeyWithValue("auth-extra-groups", []byte(rbac.BootstrapGroup)), HaveKey("expiration")))

		joinWithBootstrapKubeconfig("token-joined", kc, func(g Gomega, r certificatesv1.CertificateSigningRequest) {
			g.Expect(r.Spec.Username).To(Equal(rbac.BootstrapTokenUserPrefix + id))
			g.Expect(r.Spec.Groups).To(ContainElement(rbac.BootstrapGroup))
		})
	}, SpecTimeout(5*time.Minute))

	It("still joins a cluster whose agent bootstraps as the legacy cluster-bootstrap ServiceAccount", func(ctx SpecContext) {
		kc, err := bootstrap.ServiceAccountKubeconfig(ctx, fleet.Hub.Config, rbac.LegacyBootstrapServiceAccount, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		joinWithBootstrapKubeconfig("legacy-joined", kc, func(g Gomega, r certificatesv1.CertificateSigningRequest) {
			g.Expect(r.Spec.Username).To(Equal(rbac.LegacyBootstrapUser()))
		})
	}, SpecTimeout(5*time.Minute))
})

// joinWithBootstrapKubeconfig runs an agent for cluster name (on cluster1's API server, in its
// own namespace) with bootstrap kubeconfig kc, accepts it with admin.Accept, checks its
// registration CSR (requester checked by requester, approved by the admin) and that it
// joins, then stops the agent and deletes the cluster.
func joinWithBootstrapKubeconfig(name string, kc []byte, requester func(Gomega, certificatesv1.CertificateSigningRequest)) {
	GinkgoHelper()
	m := fleet.Managed[0]
	ns := "agent-" + name
	Expect(managedClient(m.Config).Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	a := env.StartKlusterlet(klusterlet.Options{Registration: registration.Config{
		ClusterName:          name,
		ManagedConfig:        m.Config,
		AgentNamespace:       ns,
		BootstrapKubeconfig:  kc,
		LeaseDurationSeconds: leaseSeconds,
	}})
	DeferCleanup(func(ctx SpecContext) {
		a.Stop()
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Eventually(func(g Gomega) {
		_, err := admin.Accept(suiteCtx, hubClient, hubKube, []string{name})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	Eventually(condition(name, clusterv1.ManagedClusterConditionJoined)).Should(haveStatus(metav1.ConditionTrue))
	Eventually(condition(name, clusterv1.ManagedClusterConditionAvailable)).Should(haveStatus(metav1.ConditionTrue))
	Eventually(func(g Gomega) {
		var first *certificatesv1.CertificateSigningRequest
		for _, r := range csrsFor(g, name) {
			if !r.CreationTimestamp.IsZero() && (first == nil || r.CreationTimestamp.Before(&first.CreationTimestamp)) {
				first = &r
			}
		}
		g.Expect(first).NotTo(BeNil())
		requester(g, *first)
		g.Expect(csrCondition(*first, certificatesv1.CertificateApproved)).To(HaveField("Reason", admin.ReasonAdminApproved))
	}).Should(Succeed())
}

// isolationWork is a ManifestWork with one ConfigMap (the hub's webhook refuses an empty one).
func isolationWork(ns, name string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"isolation","namespace":"default"}}`)}}}}}}
}

// registrationCSRObject is a well-formed CSR the revoked agent may no longer create.
func registrationCSRObject() *certificatesv1.CertificateSigningRequest {
	return registrationCSR("revoked-renewal", cluster2, rbac.AgentUser(cluster2, "x"), rbac.ClusterGroup(cluster2))
}

func managedAgent(name string) *runningAgent {
	a, ok := agents[name+"/open-cluster-management-agent"]
	ExpectWithOffset(1, ok).To(BeTrue(), "no agent for %s", name)
	return a
}
