package addon_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// newAddon creates ManagedClusterAddOn name installed in ns with the registrations of tmpl,
// and the status the add-on manager writes.
func newAddon(name, ns string, mode addonv1alpha1.HealthCheckMode, tmpl ...addonv1alpha1.RegistrationSpec) {
	GinkgoHelper()
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: ns}}
	Expect(admin.Create(suiteCtx, mca)).To(Succeed())
	setStatus(name, func(st *addonv1alpha1.ManagedClusterAddOnStatus) {
		st.Namespace = ns
		st.HealthCheck.Mode = mode
		st.Registrations = hubaddon.Registrations(cluster, name, tmpl)
	})
}

func setStatus(name string, f func(*addonv1alpha1.ManagedClusterAddOnStatus)) {
	GinkgoHelper()
	Eventually(func() error {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		if err := admin.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: name}, mca); err != nil {
			return err
		}
		f(&mca.Status)
		return admin.Status().Update(suiteCtx, mca)
	}).Should(Succeed())
}

func secret(ns, name string) func(Gomega) map[string][]byte {
	return func(g Gomega) map[string][]byte {
		s, err := kube.CoreV1().Secrets(ns).Get(suiteCtx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return s.Data
	}
}

func secretGone(ns, name string) func() bool {
	return func() bool {
		_, err := kube.CoreV1().Secrets(ns).Get(suiteCtx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
}

// mounted writes data as the add-on's pod sees its mounted Secret and returns a client built
// from the kubeconfig in it.
func mounted(data map[string][]byte) kubernetes.Interface {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	for k, v := range data {
		Expect(os.WriteFile(filepath.Join(dir, k), v, 0o600)).To(Succeed())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, addon.KubeconfigKey))
	Expect(err).NotTo(HaveOccurred())
	return kubernetes.NewForConfigOrDie(cfg)
}

func leaf(pemData []byte) *x509.Certificate {
	GinkgoHelper()
	block, _ := pem.Decode(pemData)
	Expect(block).NotTo(BeNil())
	c, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("KubeClient registration", Ordered, func() {
	const ns = "addon-hello"
	secretName := "hello-hub-kubeconfig"
	var data map[string][]byte

	BeforeAll(func() {
		ensureNamespace(ns)
		Expect(admin.Create(suiteCtx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "hello-reader"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}})).To(Succeed())
		Expect(admin.Create(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "hello-config"}})).To(Succeed())
		newAddon("hello", ns, addonv1alpha1.HealthCheckModeCustomized, addonv1alpha1.RegistrationSpec{Type: addonv1alpha1.RegistrationTypeKubeClient})
	})

	It("writes the add-on's hub kubeconfig secret as OCM does", func() {
		Eventually(secret(ns, secretName)).Should(And(HaveKey(addon.TLSCertKey), HaveKey(addon.TLSKeyKey), HaveKey(addon.KubeconfigKey),
			HaveKeyWithValue(addon.ClusterNameKey, []byte(cluster))))
		data = secret(ns, secretName)(Default)
		cert := leaf(data[addon.TLSCertKey])
		Expect(cert.Subject.CommonName).To(Equal("system:open-cluster-management:cluster:cluster1:addon:hello:agent:hello-agent"))
		Expect(cert.Subject.Organization).To(ConsistOf("system:open-cluster-management:cluster:cluster1:addon:hello",
			"system:open-cluster-management:addon:hello", "system:authenticated"))
		kc, err := clientcmd.Load(data[addon.KubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(kc.CurrentContext).To(Equal("default-context"))
		Expect(kc.AuthInfos["default-auth"].ClientCertificate).To(Equal("tls.crt"))
		Expect(kc.Clusters[kc.Contexts["default-context"].Cluster].Server).To(Equal(fleet.Hub.Config.Host))
		// The CSR was filed as OCM's add-on managers expect to find it.
		csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(suiteCtx, metav1.ListOptions{
			LabelSelector: clusterv1.ClusterNameLabelKey + "=" + cluster + "," + addonv1alpha1.AddonLabelKey + "=hello"})
		Expect(err).NotTo(HaveOccurred())
		Expect(csrs.Items).NotTo(BeEmpty())
		Expect(csrs.Items[0].Name).To(HavePrefix("addon-cluster1-hello-"))
		Expect(csrs.Items[0].Spec.Username).To(Equal("system:open-cluster-management:cluster1:agent1"))
	})

	It("gives the add-on exactly the hub rights its registration was granted", func() {
		c := mounted(data)
		review, err := c.AuthenticationV1().SelfSubjectReviews().Create(suiteCtx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:open-cluster-management:cluster:cluster1:addon:hello:agent:hello-agent"))
		Eventually(func() error {
			_, err := c.CoreV1().ConfigMaps(cluster).Get(suiteCtx, "hello-config", metav1.GetOptions{})
			return err
		}).Should(Succeed())
		_, err = c.CoreV1().ConfigMaps(cluster).List(suiteCtx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.CoreV1().ConfigMaps(cluster).Create(suiteCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "create: %v", err)
		_, err = c.CoreV1().ConfigMaps("default").List(suiteCtx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another namespace: %v", err)
		_, err = c.CoreV1().Secrets(cluster).List(suiteCtx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "secrets: %v", err)
		_, err = c.CertificatesV1().CertificateSigningRequests().List(suiteCtx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the cluster agent's rights: %v", err)
	})

	It("renews the certificate before it expires", func() {
		first := leaf(data[addon.TLSCertKey])
		Eventually(func(g Gomega) *big.Int {
			return leaf(secret(ns, secretName)(g)[addon.TLSCertKey]).SerialNumber
		}, 90*time.Second).ShouldNot(Equal(first.SerialNumber))
		renewed := leaf(secret(ns, secretName)(Default)[addon.TLSCertKey])
		Expect(renewed.NotAfter).To(BeTemporally(">", first.NotAfter))
		Expect(first.NotAfter).To(BeTemporally(">", time.Now()), "renewed before expiry")
		_, err := mounted(secret(ns, secretName)(Default)).CoreV1().ConfigMaps(cluster).Get(suiteCtx, "hello-config", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("puts the secret back when it is deleted", func() {
		Expect(kube.CoreV1().Secrets(ns).Delete(suiteCtx, secretName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(secret(ns, secretName)).Should(HaveKey(addon.TLSCertKey))
	})

	It("removes the secret when the registration goes", func() {
		setStatus("hello", func(st *addonv1alpha1.ManagedClusterAddOnStatus) { st.Registrations = nil })
		Eventually(secretGone(ns, secretName)).Should(BeTrue())
	})
})

// signCSR signs csr as a custom signer does, with a throwaway CA.
func signCSR(c *certificatesv1.CertificateSigningRequest) {
	GinkgoHelper()
	block, _ := pem.Decode(c.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "custom-ca"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: req.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		ca, req.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	_, err = kube.CertificatesV1().CertificateSigningRequests().UpdateStatus(suiteCtx, c, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("CustomSigner registration", func() {
	It("obtains the certificate from its signer and stores it without a kubeconfig, until the add-on goes", func() {
		const ns = "addon-custom"
		ensureNamespace(ns)
		newAddon("custom", ns, addonv1alpha1.HealthCheckModeCustomized, addonv1alpha1.RegistrationSpec{
			Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{
				SignerName: "example.com/agent-signer", Subject: &addonv1alpha1.Subject{User: "custom-agent", Groups: []string{"custom-group"}}}})
		var pending *certificatesv1.CertificateSigningRequest
		// csr-addon approves it; the custom signer (played here) signs it.
		Eventually(func(g Gomega) {
			list, err := kube.CertificatesV1().CertificateSigningRequests().List(suiteCtx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=custom"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(1))
			pending = &list.Items[0]
			g.Expect(pending.Spec.SignerName).To(Equal("example.com/agent-signer"))
			g.Expect(pending.Status.Conditions).To(ContainElement(HaveField("Type", certificatesv1.CertificateApproved)))
		}).Should(Succeed())
		signCSR(pending)
		name := "custom-example.com-agent-signer-client-cert"
		Eventually(secret(ns, name)).Should(And(HaveKey(addon.TLSCertKey), HaveKey(addon.TLSKeyKey),
			HaveKeyWithValue(addon.ClusterNameKey, []byte(cluster)), Not(HaveKey(addon.KubeconfigKey))))
		Expect(leaf(secret(ns, name)(Default)[addon.TLSCertKey]).Subject.CommonName).To(Equal("custom-agent"))

		Expect(admin.Delete(suiteCtx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "custom"}})).To(Succeed())
		Eventually(secretGone(ns, name)).Should(BeTrue())
	})
})

var _ = Describe("Lease health", func() {
	available := func(g Gomega) *metav1.Condition {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(admin.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: "leasy"}, mca)).To(Succeed())
		return meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	}
	renew := func(ns string, at time.Time) {
		GinkgoHelper()
		l, err := kube.CoordinationV1().Leases(ns).Get(suiteCtx, "leasy", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = kube.CoordinationV1().Leases(ns).Create(suiteCtx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leasy"},
				Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at}}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).NotTo(HaveOccurred())
		l.Spec.RenewTime = &metav1.MicroTime{Time: at}
		_, err = kube.CoordinationV1().Leases(ns).Update(suiteCtx, l, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	It("follows the add-on's Lease on the managed cluster with OCM's reasons and grace", func() {
		const ns = "addon-leasy"
		ensureNamespace(ns)
		newAddon("leasy", ns, "")
		Eventually(available).Should(And(HaveField("Status", metav1.ConditionUnknown),
			HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound),
			HaveField("Message", ContainSubstring("The status of leasy add-on is unknown"))))
		renew(ns, time.Now())
		Eventually(available).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated), HaveField("Message", "leasy add-on is available.")))
		// No renewal for five lease durations (10s here): unavailable, without any event.
		Eventually(available, 20*time.Second).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped), HaveField("Message", "leasy add-on is not available.")))
		renew(ns, time.Now())
		Eventually(available).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("reads a Lease the add-on renews on the hub when there is none on the managed cluster", func() {
		renew(cluster, time.Now().Add(-time.Hour))
		Expect(kube.CoordinationV1().Leases("addon-leasy").Delete(suiteCtx, "leasy", metav1.DeleteOptions{})).To(Succeed())
		Eventually(available).Should(HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped))
		Expect(kube.CoordinationV1().Leases(cluster).Delete(suiteCtx, "leasy", metav1.DeleteOptions{})).To(Succeed())
	})

	It("leaves a Customized add-on's health to the add-on", func() {
		setStatus("leasy", func(st *addonv1alpha1.ManagedClusterAddOnStatus) {
			st.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable,
				Status: metav1.ConditionTrue, Reason: "ProbeAvailable", Message: "by the add-on"})
		})
		Consistently(available, "3s").Should(HaveField("Reason", "ProbeAvailable"))
	})
})
