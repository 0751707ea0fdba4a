package registration_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
)

// newCA writes a CA Secret (tls.crt, tls.key) and returns its certificate.
func newCA(namespace, name string) *x509.Certificate {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	ensure(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	Expect(hub.Create(suiteCtx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		}})).To(Succeed())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return cert
}

func customSignerTemplate(name string, regs ...addonv1alpha1.CustomSignerRegistrationConfig) *addonv1alpha1.AddOnTemplate {
	t := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}}
	t.Spec.Registration = []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}}
	for i := range regs {
		t.Spec.Registration = append(t.Spec.Registration, addonv1alpha1.RegistrationSpec{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &regs[i]})
	}
	return t
}

// newTemplateAddon enables addon on cluster with the registrations the add-on manager
// writes for tmpl.
func newTemplateAddon(cluster, addon string, tmpl *addonv1alpha1.AddOnTemplate) {
	GinkgoHelper()
	tmpls.set(addon, tmpl)
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: addon}}
	Expect(hub.Create(suiteCtx, mca)).To(Succeed())
	Eventually(func() error {
		if err := hub.Get(suiteCtx, client.ObjectKeyFromObject(mca), mca); err != nil {
			return err
		}
		mca.Status.Registrations = registration.Registrations(cluster, addon, tmpl.Spec.Registration)
		return hub.Status().Update(suiteCtx, mca)
	}).Should(Succeed())
}

// fileCustomCSR files, as as, an add-on CSR of cluster's addon for signer; it returns its name.
func fileCustomCSR(as kubernetes.Interface, cluster, addon, signer string, subject pkix.Name) string {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	Expect(err).NotTo(HaveOccurred())
	exp := int32(3600)
	c, err := as.CertificatesV1().CertificateSigningRequests().Create(suiteCtx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "addon-" + cluster + "-" + addon + "-",
			Labels: map[string]string{clusterv1.ClusterNameLabelKey: cluster, addonv1alpha1.AddonLabelKey: addon}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, ExpirationSeconds: &exp,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return c.Name
}

// approve approves a CSR as the hub's administrator.
func approve(name string) {
	GinkgoHelper()
	c, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(suiteCtx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApproved"})
	_, err = hubKube.CertificatesV1().CertificateSigningRequests().UpdateApproval(suiteCtx, name, c, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func issued(name string) func(Gomega) *x509.Certificate {
	return func(g Gomega) *x509.Certificate {
		c, err := hubKube.CertificatesV1().CertificateSigningRequests().Get(suiteCtx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		if len(c.Status.Certificate) == 0 {
			return nil
		}
		b, _ := pem.Decode(c.Status.Certificate)
		g.Expect(b).NotTo(BeNil())
		cert, err := x509.ParseCertificate(b.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		return cert
	}
}

var _ = Describe("Add-on CSR signing (CustomSigner registrations)", Ordered, func() {
	const signer = "example.com/addon-signer"
	var ca *x509.Certificate

	BeforeAll(func() {
		newCluster("cluster5", true)
		ca = newCA(registration.DefaultSigningCANamespace, "addon-signer-ca")
	})

	It("signs an approved CSR of the template's custom signer with the signingCA, with the CSR's subject", func() {
		subject := pkix.Name{CommonName: "custom-user", Organization: []string{"custom-group"}, OrganizationalUnit: []string{"custom-ou"}}
		newTemplateAddon("cluster5", "signed", customSignerTemplate("signed-template", addonv1alpha1.CustomSignerRegistrationConfig{
			SignerName: signer, SigningCA: addonv1alpha1.SigningCARef{Name: "addon-signer-ca"}, // the default namespace
			Subject: &addonv1alpha1.Subject{User: "custom-user", Groups: []string{"custom-group"}, OrganizationUnits: []string{"custom-ou"}},
		}))
		// Filed by the cluster's agent, approved by the csr-addon plugin, signed by the Signer.
		name := fileCustomCSR(agentClient("cluster5"), "cluster5", "signed", signer, subject)
		Eventually(csrState(name)).Should(Equal("Issued: " + csr.ReasonPluginApproved))
		cert := issued(name)(Default)
		Expect(cert.CheckSignatureFrom(ca)).To(Succeed())
		Expect(cert.Issuer.String()).To(Equal(ca.Subject.String()))
		Expect(cert.Subject.CommonName).To(Equal("custom-user"))
		Expect(cert.Subject.Organization).To(Equal([]string{"custom-group"}))
		Expect(cert.Subject.OrganizationalUnit).To(Equal([]string{"custom-ou"}))
		Expect(cert.IsCA).To(BeFalse())
		Expect(cert.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}))
		Expect(cert.NotAfter).To(BeTemporally("~", time.Now().Add(time.Hour), 5*time.Minute))
		pool := x509.NewCertPool()
		pool.AddCert(ca)
		_, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		Expect(err).NotTo(HaveOccurred())
	})

	It("leaves alone an approved CSR of a signer the template does not register, and one of an add-on without template", func() {
		other := fileCustomCSR(hubKube, "cluster5", "signed", "example.com/other-signer", pkix.Name{CommonName: "custom-user"})
		approve(other)
		noTemplate := fileCustomCSR(hubKube, "cluster5", "no-template", signer, pkix.Name{CommonName: "custom-user"})
		approve(noTemplate)
		Consistently(func(g Gomega) []string { return []string{csrState(other)(g), csrState(noTemplate)(g)} }, "3s").
			Should(Equal([]string{"Approved: TestApproved", "Approved: TestApproved"}))
		Expect(csrEvents(other)(Default)).NotTo(ContainElement(ContainSubstring(registration.ReasonSignFailed)))
	})

	It("records an Event and signs nothing while the signingCA Secret is missing, then signs once it is there", func() {
		newTemplateAddon("cluster5", "later", customSignerTemplate("later-template", addonv1alpha1.CustomSignerRegistrationConfig{
			SignerName: signer, SigningCA: addonv1alpha1.SigningCARef{Namespace: "addon-signer-cas", Name: "later-ca"},
		}))
		name := fileCustomCSR(hubKube, "cluster5", "later", signer, pkix.Name{CommonName: "custom-user"})
		approve(name)
		Eventually(csrEvents(name)).Should(ContainElement(And(ContainSubstring(registration.ReasonSignFailed),
			ContainSubstring("later-template"), ContainSubstring("addon-signer-cas/later-ca"), ContainSubstring("not found"))))
		Expect(issued(name)(Default)).To(BeNil())
		Consistently(issued(name), "2s").Should(BeNil())

		ca := newCA("addon-signer-cas", "later-ca")
		Eventually(issued(name)).ShouldNot(BeNil())
		Expect(issued(name)(Default).CheckSignatureFrom(ca)).To(Succeed())
	})
})
