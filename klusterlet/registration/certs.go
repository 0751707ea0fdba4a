package registration

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"
)

// DefaultRotationThreshold is the fraction of a certificate's lifetime that may
// remain before the agent requests a new one (the seeds: 20%).
const DefaultRotationThreshold = 0.2

// Credentials is a client certificate with its private key.
type Credentials struct {
	CertPEM []byte
	KeyPEM  []byte
	Leaf    *x509.Certificate
	Pair    tls.Certificate
}

// ParseCredentials parses a PEM certificate chain and key.
func ParseCredentials(certPEM, keyPEM []byte) (*Credentials, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parsing client certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("parsing client certificate: %w", err)
	}
	pair.Leaf = leaf
	return &Credentials{CertPEM: certPEM, KeyPEM: keyPEM, Leaf: leaf, Pair: pair}, nil
}

// ValidAt reports whether the certificate is inside its validity window at now.
func (c *Credentials) ValidAt(now time.Time) bool {
	return !now.Before(c.Leaf.NotBefore) && now.Before(c.Leaf.NotAfter)
}

// RotationTime is when a certificate valid from notBefore to notAfter must be
// renewed: the moment only threshold of its lifetime remains. A threshold outside
// (0,1) falls back to DefaultRotationThreshold.
func RotationTime(notBefore, notAfter time.Time, threshold float64) time.Time {
	if threshold <= 0 || threshold >= 1 {
		threshold = DefaultRotationThreshold
	}
	lifetime := notAfter.Sub(notBefore)
	if lifetime <= 0 {
		return notBefore
	}
	return notAfter.Add(-time.Duration(float64(lifetime) * threshold))
}

// NeedsRotation reports whether at now no more than threshold of the
// certificate's lifetime remains (or it is already expired).
func NeedsRotation(cert *x509.Certificate, now time.Time, threshold float64) bool {
	return !now.Before(RotationTime(cert.NotBefore, cert.NotAfter, threshold))
}
