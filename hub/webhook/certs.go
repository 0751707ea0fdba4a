package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/core/certs"
)

// Keys of the Secret holding the webhook's certificates. tls.crt and tls.key make it a
// kubernetes.io/tls Secret.
const (
	// SecretCAKey is the PEM certificate of the CA that signs serving certificates now.
	SecretCAKey = "ca.crt"
	// SecretCAPrivateKey is its PEM private key.
	SecretCAPrivateKey = "ca.key"
	// SecretCABundleKey holds every CA the API server should trust: the current one first,
	// then earlier ones until they expire. It is the configuration's caBundle.
	SecretCABundleKey = "ca-bundle.crt"
)

// material is what the Secret holds.
type material struct {
	ca      *certs.KeyPair
	trusted []*x509.Certificate // ca first
	serving *certs.KeyPair
}

// bundlePEM is the caBundle: every trusted CA.
func (m *material) bundlePEM() []byte { return certs.EncodeCertificates(m.trusted...) }

// secretData encodes m for the Secret.
func (m *material) secretData() map[string][]byte {
	return map[string][]byte{
		SecretCAKey:             m.ca.CertPEM,
		SecretCAPrivateKey:      m.ca.KeyPEM,
		SecretCABundleKey:       m.bundlePEM(),
		corev1.TLSCertKey:       m.serving.CertPEM,
		corev1.TLSPrivateKeyKey: m.serving.KeyPEM,
	}
}

// tlsCertificate is the serving certificate for the TLS server.
func (m *material) tlsCertificate() (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(m.serving.CertPEM, m.serving.KeyPEM)
	if err != nil {
		return nil, err
	}
	c.Leaf = m.serving.Cert
	return &c, nil
}

// parseMaterial reads what it can of a Secret's data; what is missing or unreadable is nil
// and reported in problems, so that renew replaces just that.
func parseMaterial(data map[string][]byte) (m *material, problems []string) {
	m = &material{}
	a, err := certs.ParseAuthority(data[SecretCAKey], data[SecretCAPrivateKey], data[SecretCABundleKey])
	if err != nil {
		return m, []string{"CA: " + err.Error()}
	}
	m.ca, m.trusted = a.CA, a.Trusted
	if m.serving, err = certs.ParseKeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err != nil {
		problems = append(problems, "serving certificate: "+err.Error())
	}
	return m, problems
}

// certPolicy decides when certificates are replaced (certs.Policy) and what the serving
// certificate covers.
type certPolicy struct {
	caLifetime, servingLifetime time.Duration
	// fraction: a certificate is renewed when less than this fraction of its lifetime remains.
	fraction float64
	// dnsNames and ips the serving certificate must cover.
	dnsNames []string
	ips      []net.IP
	// commonName prefix of generated CAs.
	name string
	// settle is how long a new CA is in the bundle before it signs serving certificates, so
	// that the API server has the bundle by then.
	settle time.Duration
}

func (p certPolicy) policy() certs.Policy {
	return certs.Policy{Name: p.name, CALifetime: p.caLifetime, LeafLifetime: p.servingLifetime, Fraction: p.fraction, Settle: p.settle}
}

func (p certPolicy) serving() certs.Leaf {
	return certs.Leaf{Role: "serving certificate", DNSNames: p.dnsNames, IPs: p.ips, Usage: x509.ExtKeyUsageServerAuth}
}

// dueForRenewal reports whether less than the renewal fraction of c's lifetime remains at now.
func (p certPolicy) dueForRenewal(c *x509.Certificate, now time.Time) bool {
	return certs.DueForRenewal(c, p.fraction, now)
}

// servingProblem says why the serving certificate cannot be used at all (empty when it can):
// expired, not covering the hosts, or not signed by a trusted CA.
func (p certPolicy) servingProblem(m *material, now time.Time) string {
	var c *x509.Certificate
	if m.serving != nil {
		c = m.serving.Cert
	}
	return p.serving().Problem(c, m.trusted, now)
}

// renew returns the material to use from now on, and why it differs from cur (no reasons:
// cur is fine as it is). cur may be nil or partial (see parseMaterial). The CA rotates as
// certs.Policy.RenewAuthority says, the serving certificate as RenewLeaf says: a new CA's
// serving certificate waits until the configuration carries the new bundle and the API server
// has picked it up (settle), so it never sees a certificate from a CA it does not trust yet.
func (p certPolicy) renew(cur *material, now time.Time) (*material, []string, error) {
	var a *certs.Authority
	var serving *certs.KeyPair
	if cur != nil {
		a, serving = &certs.Authority{CA: cur.ca, Trusted: cur.trusted}, cur.serving
	}
	pol := p.policy()
	next, rotated, reasons, err := pol.RenewAuthority(a, now)
	if err != nil {
		return nil, nil, err
	}
	serving, more, err := pol.RenewLeaf(next, rotated, p.serving(), serving, now)
	if err != nil {
		return nil, nil, err
	}
	return &material{ca: next.CA, trusted: next.Trusted, serving: serving}, append(reasons, more...), nil
}
