package registration

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

var testNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// testCA returns a CA certificate valid around testNow for lifetime, and its key PEM in format
// (pkcs1, sec1 or pkcs8).
func testCA(t *testing.T, key crypto.Signer, format string, lifetime time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.Add(lifetime), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	switch format {
	case "pkcs1":
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))}
	case "sec1":
		b, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	default:
		b, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(block)
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testCSR(t *testing.T, subject pkix.Name, usages []certificatesv1.KeyUsage, expiration *int32) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: []string{"agent.example.com"}}, ecKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: "example.com/signer",
		Usages: usages, ExpirationSeconds: expiration,
	}}
}

func TestParseCA(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    crypto.Signer
		format string
	}{{"rsa pkcs1", rsaKey, "pkcs1"}, {"rsa pkcs8", rsaKey, "pkcs8"}, {"ec sec1", ecKey(t), "sec1"}, {"ec pkcs8", ecKey(t), "pkcs8"}, {"ed25519", edKey, "pkcs8"}} {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM := testCA(t, tc.key, tc.format, time.Hour)
			// A bundle: the CA first, then another certificate.
			other, _ := testCA(t, ecKey(t), "sec1", time.Hour)
			ca, err := parseCA(append(certPEM, other...), keyPEM, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if ca.cert.Subject.CommonName != "test-ca" {
				t.Errorf("CA %s", ca.cert.Subject)
			}
		})
	}

	certPEM, keyPEM := testCA(t, ecKey(t), "sec1", time.Hour)
	_, otherKey := testCA(t, ecKey(t), "sec1", time.Hour)
	for _, tc := range []struct {
		name      string
		cert, key []byte
		now       time.Time
		want      string
	}{
		{"no cert", nil, keyPEM, testNow, "tls.crt: no PEM CERTIFICATE"},
		{"garbage cert", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), keyPEM, testNow, "tls.crt:"},
		{"no key", certPEM, nil, testNow, "tls.key: no PEM private key"},
		{"garbage key", certPEM, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), testNow, "tls.key:"},
		{"wrong key", certPEM, otherKey, testNow, "is not the key of the certificate"},
		{"expired", certPEM, keyPEM, testNow.Add(2 * time.Hour), "CA certificate expired"},
		{"not yet valid", certPEM, keyPEM, testNow.Add(-2 * time.Hour), "not valid before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCA(tc.cert, tc.key, tc.now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSignCSR(t *testing.T) {
	caKey := ecKey(t)
	certPEM, keyPEM := testCA(t, caKey, "sec1", 48*time.Hour)
	ca, err := parseCA(certPEM, keyPEM, testNow)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{CommonName: "agent", Organization: []string{"g1", "g2"}, OrganizationalUnit: []string{"ou"}}
	parse := func(t *testing.T, p []byte) *x509.Certificate {
		t.Helper()
		b, rest := pem.Decode(p)
		if b == nil || b.Type != "CERTIFICATE" || len(rest) != 0 {
			t.Fatalf("not one PEM certificate: %q", p)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("client certificate with the CSR's subject, usages and lifetime", func(t *testing.T) {
		exp := int32(3600)
		out, err := signCSR(testCSR(t, subject, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}, &exp), ca, testNow)
		if err != nil {
			t.Fatal(err)
		}
		c := parse(t, out)
		if err := c.CheckSignatureFrom(ca.cert); err != nil {
			t.Errorf("not signed by the CA: %v", err)
		}
		if c.Subject.String() != subject.String() || c.Issuer.String() != ca.cert.Subject.String() {
			t.Errorf("subject %s issuer %s", c.Subject, c.Issuer)
		}
		if c.IsCA || c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment ||
			len(c.ExtKeyUsage) != 1 || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
			t.Errorf("usages %v %v, CA %v", c.KeyUsage, c.ExtKeyUsage, c.IsCA)
		}
		if !c.NotAfter.Equal(testNow.Add(time.Hour)) || !c.NotBefore.Equal(testNow.Add(-backdate)) {
			t.Errorf("valid %s to %s", c.NotBefore, c.NotAfter)
		}
		if len(c.DNSNames) != 1 || c.DNSNames[0] != "agent.example.com" {
			t.Errorf("SANs %v", c.DNSNames)
		}
		again, _ := signCSR(testCSR(t, subject, nil, &exp), ca, testNow)
		if parse(t, again).SerialNumber.Cmp(c.SerialNumber) == 0 {
			t.Error("same serial twice")
		}
	})

	t.Run("default lifetime, capped by the CA", func(t *testing.T) {
		out, err := signCSR(testCSR(t, subject, nil, nil), ca, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if c := parse(t, out); !c.NotAfter.Equal(testNow.Add(DefaultCertificateLifetime)) ||
			c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
			t.Errorf("valid until %s, usages %v %v", c.NotAfter, c.KeyUsage, c.ExtKeyUsage)
		}
		week := int32(7 * 24 * 3600)
		out, err = signCSR(testCSR(t, subject, nil, &week), ca, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if c := parse(t, out); !c.NotAfter.Equal(ca.cert.NotAfter) {
			t.Errorf("valid until %s, CA until %s", c.NotAfter, ca.cert.NotAfter)
		}
	})

	t.Run("refused", func(t *testing.T) {
		good := testCSR(t, subject, nil, nil)
		tampered := good.DeepCopy()
		b, _ := pem.Decode(tampered.Spec.Request)
		b.Bytes[len(b.Bytes)-5] ^= 0xff // in the signature
		tampered.Spec.Request = pem.EncodeToMemory(b)
		for _, tc := range []struct {
			name string
			csr  *certificatesv1.CertificateSigningRequest
			want string
		}{
			{"not PEM", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("hello")}}, "not a PEM CERTIFICATE REQUEST"},
			{"not a request", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: certPEM}}, "not a PEM CERTIFICATE REQUEST"},
			{"garbage request", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2, 3}})}}, "parsing spec.request"},
			{"bad signature", tampered, "spec.request"},
			{"CA usage", testCSR(t, subject, []certificatesv1.KeyUsage{certificatesv1.UsageCertSign}, nil), `usage "cert sign" is not supported`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := signCSR(tc.csr, ca, testNow)
				if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
					t.Fatalf("got %v, want an error with %q", err, tc.want)
				}
			})
		}
	})
}

func TestSignable(t *testing.T) {
	base := func() *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{clusterv1.ClusterNameLabelKey: "c1", addonv1alpha1.AddonLabelKey: "a"}},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/s"},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}},
		}
	}
	if !signable(base()) {
		t.Fatal("approved add-on CSR of a custom signer not signable")
	}
	for name, change := range map[string]func(*certificatesv1.CertificateSigningRequest){
		"no addon label":   func(c *certificatesv1.CertificateSigningRequest) { delete(c.Labels, addonv1alpha1.AddonLabelKey) },
		"no cluster label": func(c *certificatesv1.CertificateSigningRequest) { delete(c.Labels, clusterv1.ClusterNameLabelKey) },
		"kubernetes signer": func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
		},
		"signed":  func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("x") },
		"pending": func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions = nil },
		"failed": func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue})
		},
		"denied": func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		},
	} {
		c := base()
		change(c)
		if signable(c) {
			t.Errorf("%s: signable", name)
		}
	}
}

func TestCustomSigner(t *testing.T) {
	tmpl := &addonv1alpha1.AddOnTemplate{Spec: addonv1alpha1.AddOnTemplateSpec{Registration: []addonv1alpha1.RegistrationSpec{
		{Type: addonv1alpha1.RegistrationTypeKubeClient},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner},
		{Type: addonv1alpha1.RegistrationTypeCustomSigner, CustomSigner: &addonv1alpha1.CustomSignerRegistrationConfig{SignerName: "example.com/a", SigningCA: addonv1alpha1.SigningCARef{Name: "ca-a"}}},
	}}}
	if r := customSigner(tmpl, "example.com/a"); r == nil || r.SigningCA.Name != "ca-a" {
		t.Errorf("example.com/a: %+v", r)
	}
	for _, s := range []string{"example.com/b", certificatesv1.KubeAPIServerClientSignerName, ""} {
		if r := customSigner(tmpl, s); r != nil {
			t.Errorf("%q: %+v", s, r)
		}
	}
}
