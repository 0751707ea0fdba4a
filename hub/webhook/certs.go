package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// keyPair is a parsed certificate with its key and PEM encodings.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// material is what the Secret holds.
type material struct {
	ca      *keyPair
	trusted []*x509.Certificate // ca first
	serving *keyPair
}

// bundlePEM is the caBundle: every trusted CA.
func (m *material) bundlePEM() []byte {
	var b bytes.Buffer
	for _, c := range m.trusted {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// secretData encodes m for the Secret.
func (m *material) secretData() map[string][]byte {
	return map[string][]byte{
		SecretCAKey:             m.ca.certPEM,
		SecretCAPrivateKey:      m.ca.keyPEM,
		SecretCABundleKey:       m.bundlePEM(),
		corev1.TLSCertKey:       m.serving.certPEM,
		corev1.TLSPrivateKeyKey: m.serving.keyPEM,
	}
}

// tlsCertificate is the serving certificate for the TLS server.
func (m *material) tlsCertificate() (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(m.serving.certPEM, m.serving.keyPEM)
	if err != nil {
		return nil, err
	}
	c.Leaf = m.serving.cert
	return &c, nil
}

// parseMaterial reads what it can of a Secret's data; what is missing or unreadable is nil
// and reported in problems, so that renew replaces just that.
func parseMaterial(data map[string][]byte) (m *material, problems []string) {
	m = &material{}
	ca, err := parseKeyPair(data[SecretCAKey], data[SecretCAPrivateKey])
	if err != nil {
		return m, []string{"CA: " + err.Error()}
	}
	m.ca = ca
	m.trusted = []*x509.Certificate{ca.cert}
	rest := data[SecretCABundleKey]
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && !containsCert(m.trusted, c) {
			m.trusted = append(m.trusted, c)
		}
	}
	if m.serving, err = parseKeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err != nil {
		problems = append(problems, "serving certificate: "+err.Error())
	}
	return m, problems
}

func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, errors.New("missing")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("private key cannot sign")
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func containsCert(list []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(list, func(x *x509.Certificate) bool { return x.Equal(c) })
}

// certPolicy decides when certificates are replaced.
type certPolicy struct {
	caLifetime, servingLifetime time.Duration
	// fraction: a certificate is renewed when less than this fraction of its lifetime remains.
	fraction float64
	// dnsNames and ips the serving certificate must cover.
	dnsNames []string
	ips      []net.IP
	// commonName prefix of generated certificates.
	name string
	// settle is how long a new CA is in the bundle before it signs serving certificates, so
	// that the API server has the bundle by then.
	settle time.Duration
}

// dueForRenewal reports whether less than the renewal fraction of c's lifetime remains at now.
func (p certPolicy) dueForRenewal(c *x509.Certificate, now time.Time) bool {
	lifetime := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(now) < time.Duration(float64(lifetime)*p.fraction)
}

// servingProblem says why the serving certificate cannot be used at all (empty when it can):
// expired, not covering the hosts, or not signed by a trusted CA.
func (p certPolicy) servingProblem(m *material, now time.Time) string {
	if m.serving == nil {
		return "no serving certificate"
	}
	c := m.serving.cert
	if !now.Before(c.NotAfter) {
		return "the serving certificate expired at " + c.NotAfter.UTC().Format(time.RFC3339)
	}
	for _, d := range p.dnsNames {
		if !slices.Contains(c.DNSNames, d) {
			return "the serving certificate does not cover " + d
		}
	}
	for _, ip := range p.ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return "the serving certificate does not cover " + ip.String()
		}
	}
	roots := x509.NewCertPool()
	for _, t := range m.trusted {
		roots.AddCert(t)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return "the serving certificate is not signed by a trusted CA: " + err.Error()
	}
	return ""
}

// issuedAt is when a certificate from this package was created: NotBefore is backdated by
// backdate of the requested lifetime.
func issuedAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(min(c.NotAfter.Sub(c.NotBefore)/11, 5*time.Minute))
}

// renew returns the material to use from now on, and why it differs from cur (no reasons:
// cur is fine as it is). cur may be nil or partial (see parseMaterial).
//
// The CA is replaced when less than the renewal fraction of its lifetime remains; the old
// one stays in the bundle until it expires, so serving certificates it signed stay valid.
// The serving certificate is replaced when it is unusable or due for renewal, and is
// signed by the current CA, valid at most until that CA expires. A serving certificate that
// is merely due stays while the current CA is younger than settle and did not sign it: by
// then the configuration carries the new bundle and the API server has picked it up, so it
// never sees a certificate from a CA it does not trust yet. (The renewal window is several
// settle periods long.)
func (p certPolicy) renew(cur *material, now time.Time) (*material, []string, error) {
	next := &material{}
	var reasons []string
	if cur != nil {
		next.ca, next.trusted, next.serving = cur.ca, slices.Clone(cur.trusted), cur.serving
	}
	caRotated := false
	switch {
	case next.ca == nil:
		reasons = append(reasons, "no CA")
	case !now.Before(next.ca.cert.NotAfter):
		reasons = append(reasons, "the CA expired at "+next.ca.cert.NotAfter.UTC().Format(time.RFC3339))
	case p.dueForRenewal(next.ca.cert, now):
		reasons = append(reasons, "the CA expires at "+next.ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if len(reasons) > 0 {
		ca, err := p.newCA(now)
		if err != nil {
			return nil, nil, err
		}
		next.ca, caRotated = ca, true
		next.trusted = append([]*x509.Certificate{ca.cert}, next.trusted...)
	}
	// Expired CAs leave the bundle.
	kept := next.trusted[:0:0]
	for _, c := range next.trusted {
		if now.Before(c.NotAfter) && !containsCert(kept, c) {
			kept = append(kept, c)
		}
	}
	if len(kept) != len(next.trusted) {
		reasons = append(reasons, "expired CAs leave the bundle")
	}
	next.trusted = kept

	switch problem := p.servingProblem(next, now); {
	case problem != "":
		reasons = append(reasons, problem)
	case caRotated || (now.Before(issuedAt(next.ca.cert).Add(p.settle)) && next.serving.cert.CheckSignatureFrom(next.ca.cert) != nil):
		// Kept for now: see above.
		return next, reasons, nil
	case p.dueForRenewal(next.serving.cert, now):
		reasons = append(reasons, "the serving certificate expires at "+next.serving.cert.NotAfter.UTC().Format(time.RFC3339))
	default:
		return next, reasons, nil
	}
	serving, err := p.newServing(next.ca, now)
	if err != nil {
		return nil, nil, err
	}
	next.serving = serving
	return next, reasons, nil
}

// backdate is how far before now certificates become valid, for clocks a little behind.
func backdate(lifetime time.Duration) time.Duration { return min(lifetime/10, 5*time.Minute) }

func (p certPolicy) newCA(now time.Time) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s-ca@%d", p.name, now.Unix())},
		NotBefore:             now.Add(-backdate(p.caLifetime)),
		NotAfter:              now.Add(p.caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tmpl, nil)
}

func (p certPolicy) newServing(ca *keyPair, now time.Time) (*keyPair, error) {
	notAfter := now.Add(p.servingLifetime)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	cn := p.name
	if len(p.dnsNames) > 0 {
		cn = p.dnsNames[0]
	} else if len(p.ips) > 0 {
		cn = p.ips[0].String()
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		NotBefore:   now.Add(-backdate(p.servingLifetime)),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    p.dnsNames,
		IPAddresses: p.ips,
	}
	return issue(tmpl, ca)
}

// issue creates a P-256 key and a certificate for tmpl, signed by parent or self-signed.
func issue(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
