// Package certs is the project's one set of X.509 helpers: P-256 key pairs, self-signed CAs
// and the serving and client certificates they issue, PEM encoding and parsing, chain checks,
// and the renewal policy that rotates a CA (kept in a trust bundle until it expires) and the
// certificates it signs before they expire.
package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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
)

// PEM block types.
const (
	CertificateBlock = "CERTIFICATE"
	// PrivateKeyBlock is PKCS #8, what this package writes; it reads SEC 1 and PKCS #1 too.
	PrivateKeyBlock = "PRIVATE KEY"
)

// KeyPair is a parsed certificate with its private key and their PEM encodings.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// TLSCertificate is p for a tls.Config, its leaf parsed.
func (p *KeyPair) TLSCertificate() *tls.Certificate {
	return &tls.Certificate{Certificate: [][]byte{p.Cert.Raw}, PrivateKey: p.Key, Leaf: p.Cert}
}

var serialLimit = new(big.Int).Lsh(big.NewInt(1), 127)

// Serial is a random certificate serial number.
func Serial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}

// Issue creates a P-256 key and a certificate for it from tmpl (given a random serial number),
// signed by parent, or self-signed when parent is nil.
func Issue(tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	if tmpl.SerialNumber, err = Serial(); err != nil {
		return nil, err
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: EncodeCertificates(cert), KeyPEM: keyPEM}, nil
}

// Backdate is how far before now a certificate of lifetime becomes valid, for clocks a
// little behind: a tenth of the lifetime, at most 5 minutes.
func Backdate(lifetime time.Duration) time.Duration { return min(lifetime/10, 5*time.Minute) }

// IssuedAt is when a certificate from this package was created (undoing Backdate).
func IssuedAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(min(c.NotAfter.Sub(c.NotBefore)/11, 5*time.Minute))
}

// NewCA is a self-signed CA named commonName, valid for lifetime from now.
func NewCA(commonName string, lifetime time.Duration, now time.Time) (*KeyPair, error) {
	return Issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-Backdate(lifetime)),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
}

// Leaf describes a serving or client certificate: what it must say, and how messages name it.
type Leaf struct {
	// Role names the certificate in reasons, e.g. "serving certificate".
	Role string
	// CommonName and Organization of the subject. A serving certificate without a common
	// name gets its first DNS name or IP.
	CommonName   string
	Organization []string
	// DNSNames and IPs the certificate must cover.
	DNSNames []string
	IPs      []net.IP
	// Usage is x509.ExtKeyUsageServerAuth or x509.ExtKeyUsageClientAuth.
	Usage x509.ExtKeyUsage
}

// LeafForHosts is a serving Leaf for hosts, each an IP or a DNS name (empty and repeated
// ones skipped).
func LeafForHosts(role string, hosts ...string) Leaf {
	l := Leaf{Role: role, Usage: x509.ExtKeyUsageServerAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(l.IPs, ip.Equal) {
				l.IPs = append(l.IPs, ip)
			}
		} else if h != "" && !slices.Contains(l.DNSNames, h) {
			l.DNSNames = append(l.DNSNames, h)
		}
	}
	return l
}

func (l Leaf) commonName() string {
	switch {
	case l.CommonName != "":
		return l.CommonName
	case len(l.DNSNames) > 0:
		return l.DNSNames[0]
	case len(l.IPs) > 0:
		return l.IPs[0].String()
	}
	return l.Role
}

// IssueLeaf issues l from ca for lifetime from now, but no longer than ca is valid.
func IssueLeaf(l Leaf, ca *KeyPair, lifetime time.Duration, now time.Time) (*KeyPair, error) {
	notAfter := now.Add(lifetime)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: l.commonName(), Organization: l.Organization},
		NotBefore:   now.Add(-Backdate(lifetime)),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{l.Usage},
		DNSNames:    l.DNSNames,
		IPAddresses: l.IPs,
	}, ca)
}

// Problem says why c cannot be used as l at now with the CAs trusted (empty when it can):
// missing, expired, not saying or covering what l asks, or not chaining to a trusted CA.
func (l Leaf) Problem(c *x509.Certificate, trusted []*x509.Certificate, now time.Time) string {
	if c == nil {
		return "no " + l.Role
	}
	if !now.Before(c.NotAfter) {
		return "the " + l.Role + " expired at " + c.NotAfter.UTC().Format(time.RFC3339)
	}
	if l.CommonName != "" && c.Subject.CommonName != l.CommonName {
		return fmt.Sprintf("the %s is for %q, not %q", l.Role, c.Subject.CommonName, l.CommonName)
	}
	if !slices.Equal(c.Subject.Organization, l.Organization) {
		return fmt.Sprintf("the %s has organizations %q, not %q", l.Role, c.Subject.Organization, l.Organization)
	}
	for _, d := range l.DNSNames {
		if !slices.Contains(c.DNSNames, d) {
			return "the " + l.Role + " does not cover " + d
		}
	}
	for _, ip := range l.IPs {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return "the " + l.Role + " does not cover " + ip.String()
		}
	}
	if err := Verify(c, trusted, l.Usage, now); err != nil {
		return "the " + l.Role + " is not signed by a trusted CA: " + err.Error()
	}
	return ""
}

// Verify checks that c chains to one of roots at now for usage.
func Verify(c *x509.Certificate, roots []*x509.Certificate, usage x509.ExtKeyUsage, now time.Time) error {
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	_, err := c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// DueForRenewal reports whether less than fraction of c's lifetime remains at now.
func DueForRenewal(c *x509.Certificate, fraction float64, now time.Time) bool {
	lifetime := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Sub(now) < time.Duration(float64(lifetime)*fraction)
}

// EncodeCertificates is certs as PEM, in order.
func EncodeCertificates(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: CertificateBlock, Bytes: c.Raw})
	}
	return b.Bytes()
}

// EncodeKey is key as a PEM PKCS #8 block.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: PrivateKeyBlock, Bytes: der}), nil
}

// ParseCertificates reads every CERTIFICATE block of data, skipping blocks of other types. It
// fails on data without one, or on a block that does not parse (naming its position).
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	n := 0
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		n++
		if b.Type != CertificateBlock {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, errors.New("no PEM CERTIFICATE block: empty")
		}
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return out, nil
}

// ParsePrivateKey reads the first private key of data: PKCS #8, SEC 1 (EC PRIVATE KEY) or
// PKCS #1 (RSA PRIVATE KEY); RSA, ECDSA or Ed25519.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("no PEM private key block: empty")
	}
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, errors.New("no PEM private key block")
		}
		var k any
		var err error
		switch b.Type {
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case PrivateKeyBlock:
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		default:
			continue // EC PARAMETERS and the like
		}
		if err != nil {
			return nil, fmt.Errorf("%s block: %w", b.Type, err)
		}
		switch k := k.(type) {
		case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
			return k.(crypto.Signer), nil
		}
		return nil, fmt.Errorf("unsupported private key type %T", k)
	}
}

// ParseKeyPair reads the first certificate of certPEM and the key of keyPEM, which must be
// its key. Errors say which of the two is wrong.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	cs, err := ParseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	key, err := ParsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cs[0].PublicKey) {
		return nil, errors.New("private key does not match the certificate")
	}
	return &KeyPair{Cert: cs[0], Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
