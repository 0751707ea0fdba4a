package registration_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

func ensure(obj client.Object) {
	GinkgoHelper()
	err := hub.Create(suiteCtx, obj)
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// newCluster registers cluster on the hub with its namespace and its agent's RBAC, as the
// registration hub does, accepted or not.
func newCluster(name string, accepted bool) {
	GinkgoHelper()
	ensure(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: accepted}})
	ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	// The agent keeps the right to create CSRs here even when not accepted: the hub decides.
	for _, o := range []client.Object{rbac.ClusterRole(name, true), rbac.ClusterRoleBinding(name), rbac.RegistrationClusterRole(), rbac.RegistrationRoleBinding(name)} {
		Expect(rbac.Apply(suiteCtx, hub, o)).To(Succeed())
	}
}

func newAddon(cluster, name string) *addonv1alpha1.ManagedClusterAddOn {
	GinkgoHelper()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
	Expect(hub.Create(suiteCtx, mca)).To(Succeed())
	// What the add-on manager writes (the reconciler may write the object at the same time).
	Eventually(func() error {
		if err := hub.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca); err != nil {
			return err
		}
		mca.Status.Registrations = registration.Registrations(cluster, name, []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}})
		return hub.Status().Update(suiteCtx, mca)
	}).Should(Succeed())
	return mca
}

func bindings(cluster, addon string) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &rbacv1.RoleBindingList{}
		g.Expect(hub.List(suiteCtx, list, client.MatchingLabels{addonv1alpha1.AddonLabelKey: addon, addonv1alpha1.AddonNamespaceLabelKey: cluster})).To(Succeed())
		var out []string
		for _, rb := range list.Items {
			out = append(out, rb.Namespace+"/"+rb.Name)
		}
		return out
	}
}

func condition(cluster, addon string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(hub.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: addon}, mca)).To(Succeed())
		return meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnRegistrationApplied)
	}
}

// allowed asks the hub whether the add-on agent identity may do verb on configmaps in ns.
func allowed(cluster, addon, verb, ns string) func() bool {
	return func() bool {
		sar, err := hubKube.AuthorizationV1().SubjectAccessReviews().Create(suiteCtx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               registration.DefaultUser(cluster, addon, registration.AgentName(addon)),
			Groups:             registration.DefaultGroups(cluster, addon),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps"},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return sar.Status.Allowed
	}
}

var (
	currentCluster = addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
		CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "addon-test-reader"}}
	singleNamespace = addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace,
		SingleNamespace: &addonv1alpha1.SingleNamespaceBindingConfig{Namespace: "addon-shared", RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "writer"}}}
)

var _ = Describe("Hub permissions", Ordered, func() {
	BeforeAll(func() {
		newCluster("cluster1", true)
		newCluster("cluster2", true)
		ensure(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon-test-reader"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}})
	})

	It("grants exactly the declared permissions, to the add-on's group on that cluster, and says so", func() {
		perms.set("perm", currentCluster, singleNamespace)
		mca := newAddon("cluster1", "perm")
		// addon-shared does not exist yet: the SingleNamespace binding fails.
		Eventually(condition("cluster1", "perm")).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", addonv1alpha1.RegistrationAppliedSetPermissionFailed),
			HaveField("Message", ContainSubstring("Failed to set permission for hub agent"))))
		ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "addon-shared"}})
		ensure(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "addon-shared", Name: "writer"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}})
		Eventually(condition("cluster1", "perm")).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", addonv1alpha1.RegistrationAppliedSetPermissionApplied),
			HaveField("Message", "Registration of the addon agent is configured")))
		Expect(bindings("cluster1", "perm")(Default)).To(ConsistOf(
			"cluster1/open-cluster-management:perm:clusterrole:agent", "addon-shared/open-cluster-management:perm:cluster1:role:agent"))

		rb := &rbacv1.RoleBinding{}
		Expect(hub.Get(suiteCtx, client.ObjectKey{Namespace: "cluster1", Name: "open-cluster-management:perm:clusterrole:agent"}, rb)).To(Succeed())
		Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:cluster:cluster1:addon:perm"}}))
		Expect(rb.OwnerReferences).To(ContainElement(HaveField("UID", mca.UID)))
		Expect(rb.Labels).To(HaveKeyWithValue(registration.AddonTemplateLabelKey, ""))
		Expect(hub.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca)).To(Succeed())
		Expect(mca.Finalizers).To(ContainElement(registration.Finalizer))

		Expect(allowed("cluster1", "perm", "get", "cluster1")()).To(BeTrue())
		Expect(allowed("cluster1", "perm", "create", "addon-shared")()).To(BeTrue())
		Expect(allowed("cluster1", "perm", "delete", "cluster1")()).To(BeFalse())
		Expect(allowed("cluster1", "perm", "get", "cluster2")()).To(BeFalse())
		Expect(allowed("cluster1", "perm", "get", "addon-shared")()).To(BeFalse())
		Expect(allowed("cluster2", "perm", "get", "cluster1")()).To(BeFalse(), "another cluster's agent of the same add-on")
	})

	It("puts back a binding someone deleted or edited", func() {
		key := client.ObjectKey{Namespace: "cluster1", Name: "open-cluster-management:perm:clusterrole:agent"}
		rb := &rbacv1.RoleBinding{}
		Expect(hub.Get(suiteCtx, key, rb)).To(Succeed())
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "intruders"})
		Expect(hub.Update(suiteCtx, rb)).To(Succeed())
		Eventually(func(g Gomega) []rbacv1.Subject {
			g.Expect(hub.Get(suiteCtx, key, rb)).To(Succeed())
			return rb.Subjects
		}).Should(HaveLen(1))
		uid := rb.UID
		Expect(hub.Delete(suiteCtx, rb)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(hub.Get(suiteCtx, key, rb)).To(Succeed())
			g.Expect(rb.UID).NotTo(Equal(uid))
		}).Should(Succeed())
	})

	It("revokes a permission the add-on no longer declares, and the finalizer with the last binding outside", func() {
		perms.set("perm", currentCluster)
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		Expect(hub.Get(suiteCtx, client.ObjectKey{Namespace: "cluster1", Name: "perm"}, mca)).To(Succeed())
		// The manager's change of an add-on shows on its ManagedClusterAddOn.
		mca.Annotations = map[string]string{"test/rev": "2"}
		Expect(hub.Update(suiteCtx, mca)).To(Succeed())
		Eventually(bindings("cluster1", "perm")).Should(ConsistOf("cluster1/open-cluster-management:perm:clusterrole:agent"))
		Eventually(allowed("cluster1", "perm", "create", "addon-shared")).Should(BeFalse())
		Eventually(func(g Gomega) []string {
			g.Expect(hub.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca)).To(Succeed())
			return mca.Finalizers
		}).ShouldNot(ContainElement(registration.Finalizer))
	})

	It("reports an invalid declaration without touching what is granted", func() {
		perms.set("perm", currentCluster, addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingSingleNamespace})
		touch("cluster1", "perm", "3")
		Eventually(condition("cluster1", "perm")).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", ContainSubstring("single namespace is required when the HubPermission type is SingleNamespace"))))
		Expect(bindings("cluster1", "perm")(Default)).To(ConsistOf("cluster1/open-cluster-management:perm:clusterrole:agent"))
	})

	It("revokes everything when the add-on is no longer a template add-on, leaving its condition alone", func() {
		perms.unset("perm")
		touch("cluster1", "perm", "4")
		Eventually(bindings("cluster1", "perm")).Should(BeEmpty())
		Eventually(allowed("cluster1", "perm", "get", "cluster1")).Should(BeFalse())
	})

	It("revokes the permissions when the ManagedClusterAddOn goes, once no other finalizer holds it", func() {
		perms.set("gone", currentCluster, singleNamespace)
		newAddon("cluster2", "gone")
		Eventually(bindings("cluster2", "gone")).Should(HaveLen(2))
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		setFinalizers := func(f func([]string) []string) {
			Eventually(func() error {
				if err := hub.Get(suiteCtx, client.ObjectKey{Namespace: "cluster2", Name: "gone"}, mca); err != nil {
					return err
				}
				mca.Finalizers = f(mca.Finalizers)
				return hub.Update(suiteCtx, mca)
			}).Should(Succeed())
		}
		setFinalizers(func(f []string) []string { return append(f, "test/pre-delete") })
		Expect(hub.Delete(suiteCtx, mca)).To(Succeed())
		Consistently(bindings("cluster2", "gone"), "2s").Should(HaveLen(2), "an add-on being cleaned up keeps its permissions")
		setFinalizers(func([]string) []string { return []string{registration.Finalizer} })
		Eventually(bindings("cluster2", "gone")).Should(BeEmpty())
		Eventually(func() bool { return apierrors.IsNotFound(hub.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca)) }).Should(BeTrue())
	})

	It("says NilRegistration for a template add-on with neither registrations nor permissions", func() {
		perms.set("plain")
		Expect(hub.Create(suiteCtx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "plain"}})).To(Succeed())
		Eventually(condition("cluster1", "plain")).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", addonv1alpha1.RegistrationAppliedNilRegistration)))
	})
})

func touch(cluster, addon, rev string) {
	GinkgoHelper()
	Eventually(func() error {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		if err := hub.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: addon}, mca); err != nil {
			return err
		}
		mca.Annotations = map[string]string{"test/rev": rev}
		return hub.Update(suiteCtx, mca)
	}).Should(Succeed())
}

// agentClient is a hub client with the identity of cluster's registration agent.
func agentClient(cluster string) kubernetes.Interface {
	GinkgoHelper()
	cfg, err := fleet.Hub.UserConfig("system:open-cluster-management:"+cluster+":agent1",
		"system:open-cluster-management:"+cluster, clusterv1.ManagedClustersGroup)
	Expect(err).NotTo(HaveOccurred())
	return kubernetes.NewForConfigOrDie(cfg)
}

// fileAddonCSR files, as cluster's agent, the CSR the klusterlet files for addon's KubeClient
// registration (subject: the add-on's default identity on cluster unless cn/orgs are given).
func fileAddonCSR(as kubernetes.Interface, cluster, addon string, subject *pkix.Name) string {
	GinkgoHelper()
	if subject == nil {
		subject = &pkix.Name{CommonName: registration.DefaultUser(cluster, addon, registration.AgentName(addon)), Organization: registration.DefaultGroups(cluster, addon)}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: *subject}, key)
	Expect(err).NotTo(HaveOccurred())
	c, err := as.CertificatesV1().CertificateSigningRequests().Create(suiteCtx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "addon-" + cluster + "-" + addon + "-",
			Labels: map[string]string{clusterv1.ClusterNameLabelKey: cluster, addonv1alpha1.AddonLabelKey: addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return c.Name
}

func csrState(name string) func(Gomega) string {
	return func(g Gomega) string {
		c, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(suiteCtx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, cond := range c.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied {
				return "Denied: " + cond.Reason
			}
			if cond.Type == certificatesv1.CertificateApproved {
				if len(c.Status.Certificate) > 0 {
					return "Issued: " + cond.Reason
				}
				return "Approved: " + cond.Reason
			}
		}
		return "Pending"
	}
}

func csrEvents(name string) func(Gomega) []string {
	return func(g Gomega) []string {
		evs, err := hubKube.EventsV1().Events("").List(suiteCtx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, e := range evs.Items {
			out = append(out, e.Reason+": "+e.Note)
		}
		return out
	}
}

var _ = Describe("Add-on CSR approval", Ordered, func() {
	BeforeAll(func() {
		newCluster("cluster3", true)
		newCluster("cluster4", false)
	})

	It("approves the CSR of an add-on enabled on an accepted cluster, which the hub then signs", func() {
		newAddon("cluster3", "hello")
		name := fileAddonCSR(agentClient("cluster3"), "cluster3", "hello", nil)
		Eventually(csrState(name)).Should(Equal("Issued: " + csr.ReasonPluginApproved))
	})

	It("leaves the CSR of an add-on not enabled pending, with an Event, until it is enabled", func() {
		name := fileAddonCSR(agentClient("cluster3"), "cluster3", "later", nil)
		Eventually(csrEvents(name)).Should(ContainElement(And(ContainSubstring(csr.ReasonAddonCSRPending), ContainSubstring("add-on enabled: false"))))
		Consistently(csrState(name), "2s").Should(Equal("Pending"))
		newAddon("cluster3", "later")
		Eventually(csrState(name)).Should(Equal("Issued: " + csr.ReasonPluginApproved))
	})

	It("leaves the CSR of a cluster not accepted pending until it is accepted", func() {
		newAddon("cluster4", "hello")
		name := fileAddonCSR(agentClient("cluster4"), "cluster4", "hello", nil)
		Eventually(csrEvents(name)).Should(ContainElement(ContainSubstring("cluster accepted: false")))
		Consistently(csrState(name), "2s").Should(Equal("Pending"))
		mc := &clusterv1.ManagedCluster{}
		Expect(hub.Get(suiteCtx, client.ObjectKey{Name: "cluster4"}, mc)).To(Succeed())
		mc.Spec.HubAcceptsClient = true
		Expect(hub.Update(suiteCtx, mc)).To(Succeed())
		Eventually(csrState(name)).Should(Equal("Issued: " + csr.ReasonPluginApproved))
	})

	It("leaves an identity outside the add-on's pending and denies another cluster's agent", func() {
		other := fileAddonCSR(agentClient("cluster3"), "cluster3", "hello", &pkix.Name{CommonName: "admin", Organization: []string{"system:authenticated"}})
		Eventually(csrEvents(other)).Should(ContainElement(ContainSubstring(csr.ReasonAddonCSRPending)))
		Expect(csrState(other)(Default)).To(Equal("Pending"))
		agentGroup := fileAddonCSR(agentClient("cluster3"), "cluster3", "hello", &pkix.Name{CommonName: "x", Organization: []string{"system:open-cluster-management:cluster3"}})
		Eventually(csrState(agentGroup)).Should(Equal("Denied: " + csr.ReasonIdentityRejected))
		stolen := fileAddonCSR(agentClient("cluster4"), "cluster3", "hello", nil)
		Eventually(csrState(stolen)).Should(Equal("Denied: " + csr.ReasonIdentityRejected))
	})
})
