package certs

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Authority is the CA that signs now and every CA to trust: that one first, then earlier ones
// until they expire, so that certificates they signed stay valid across a CA rotation.
type Authority struct {
	CA      *KeyPair
	Trusted []*x509.Certificate
}

// BundlePEM is every trusted CA as PEM: a caBundle, or a ca.crt for clients.
func (a *Authority) BundlePEM() []byte { return EncodeCertificates(a.Trusted...) }

// Pool is every trusted CA.
func (a *Authority) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range a.Trusted {
		pool.AddCert(c)
	}
	return pool
}

// ParseAuthority reads a CA (certificate and key) and a bundle of further CAs to trust, which
// may be empty; bundle blocks that do not parse are dropped (the bundle is rebuilt from the
// CAs that do). Errors name what is wrong with the CA.
func ParseAuthority(caPEM, caKeyPEM, bundlePEM []byte) (*Authority, error) {
	if len(caPEM) == 0 && len(caKeyPEM) == 0 {
		return nil, errors.New("missing")
	}
	ca, err := ParseKeyPair(caPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	if !ca.Cert.IsCA {
		return nil, errors.New("certificate is not a CA")
	}
	a := &Authority{CA: ca, Trusted: []*x509.Certificate{ca.Cert}}
	for rest := bundlePEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == CertificateBlock && !containsCert(a.Trusted, c) {
			a.Trusted = append(a.Trusted, c)
		}
	}
	return a, nil
}

func containsCert(list []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(list, func(x *x509.Certificate) bool { return x.Equal(c) })
}

// Policy decides when a CA and the certificates it signs are replaced.
type Policy struct {
	// Name prefixes CAs' common names: <Name>-ca@<unix seconds of issue>.
	Name string
	// CALifetime and LeafLifetime are the lifetimes of new CAs and of the certificates they
	// sign (never beyond their CA's).
	CALifetime, LeafLifetime time.Duration
	// Fraction: a certificate is renewed when less than this fraction of its lifetime remains.
	Fraction float64
	// Settle is how long a new CA is in the bundle before certificates it signs replace ones
	// that are merely due, so that whoever verifies them has re-read the bundle by then.
	Settle time.Duration
}

// RenewAuthority returns the authority to use from now on, whether its CA is new, and why it
// differs from cur (no reasons: cur as it is). cur may be nil.
//
// The CA is replaced when it is missing, expired or due for renewal; the old one stays in the
// bundle until it expires. Expired CAs leave the bundle.
func (p Policy) RenewAuthority(cur *Authority, now time.Time) (next *Authority, rotated bool, reasons []string, err error) {
	next = &Authority{}
	if cur != nil && cur.CA != nil {
		next.CA, next.Trusted = cur.CA, slices.Clone(cur.Trusted)
	}
	switch {
	case next.CA == nil:
		reasons = append(reasons, "no CA")
	case !now.Before(next.CA.Cert.NotAfter):
		reasons = append(reasons, "the CA expired at "+next.CA.Cert.NotAfter.UTC().Format(time.RFC3339))
	case DueForRenewal(next.CA.Cert, p.Fraction, now):
		reasons = append(reasons, "the CA expires at "+next.CA.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if len(reasons) > 0 {
		ca, err := NewCA(fmt.Sprintf("%s-ca@%d", p.Name, now.Unix()), p.CALifetime, now)
		if err != nil {
			return nil, false, nil, err
		}
		next.CA, rotated = ca, true
		next.Trusted = append([]*x509.Certificate{ca.Cert}, next.Trusted...)
	}
	kept := next.Trusted[:0:0]
	for _, c := range next.Trusted {
		if now.Before(c.NotAfter) && !containsCert(kept, c) {
			kept = append(kept, c)
		}
	}
	if len(kept) != len(next.Trusted) {
		reasons = append(reasons, "expired CAs leave the bundle")
	}
	next.Trusted = kept
	return next, rotated, reasons, nil
}

// RenewLeaf returns the certificate l to use from now on with authority a (rotated: its CA is
// new in this step), and why it differs from cur (no reasons: cur as it is). cur may be nil.
//
// cur is replaced when it is unusable (Leaf.Problem) or due for renewal, by one a's CA signs.
// One that is merely due stays while a's CA is new or younger than Settle and did not sign it:
// whoever verifies it gets the new bundle first. (The renewal window must be several Settle
// periods long.)
func (p Policy) RenewLeaf(a *Authority, rotated bool, l Leaf, cur *KeyPair, now time.Time) (*KeyPair, []string, error) {
	var c *x509.Certificate
	if cur != nil {
		c = cur.Cert
	}
	var reasons []string
	switch problem := l.Problem(c, a.Trusted, now); {
	case problem != "":
		reasons = append(reasons, problem)
	case rotated || (now.Before(IssuedAt(a.CA.Cert).Add(p.Settle)) && c.CheckSignatureFrom(a.CA.Cert) != nil):
		return cur, nil, nil
	case DueForRenewal(c, p.Fraction, now):
		reasons = append(reasons, "the "+l.Role+" expires at "+c.NotAfter.UTC().Format(time.RFC3339))
	default:
		return cur, nil, nil
	}
	next, err := IssueLeaf(l, a.CA, p.LeafLifetime, now)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", l.Role, err)
	}
	return next, reasons, nil
}

// Validate checks p: 0 < LeafLifetime <= CALifetime, Fraction in (0, 1), and 0 <= Settle at
// most a quarter of a leaf's renewal window.
func (p Policy) Validate() error {
	switch {
	case p.LeafLifetime <= 0 || p.LeafLifetime > p.CALifetime:
		return fmt.Errorf("certificate lifetimes: need 0 < certificate lifetime (%s) <= CA lifetime (%s)", p.LeafLifetime, p.CALifetime)
	case p.Fraction <= 0 || p.Fraction >= 1:
		return fmt.Errorf("renewal fraction %v must be between 0 and 1", p.Fraction)
	case p.Settle < 0 || float64(p.Settle) > p.Fraction*float64(p.LeafLifetime)/4:
		return fmt.Errorf("settle time %s must be at most renewal fraction × certificate lifetime / 4 (%s)",
			p.Settle, time.Duration(p.Fraction*float64(p.LeafLifetime)/4))
	}
	return nil
}
