package registration

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// DefaultRotationThreshold is the least fraction of a certificate's lifetime that may
// remain before the agent requests a new one (the seeds: 20%). Each certificate is
// renewed at a random point between this and RotationJitter more (OCM: 20% to 25%).
const DefaultRotationThreshold = 0.2

// RotationJitter widens the rotation threshold t of each certificate to a random point in
// [t, t*(1+RotationJitter)], as OCM's agent does (0.2 + 0.2*rand*0.25), so that agents
// whose certificates were issued together do not all renew at once.
const RotationJitter = 0.25

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

// JitteredThreshold places a certificate's rotation threshold between threshold and
// threshold*(1+RotationJitter), r in [0,1) choosing where (values outside are clamped). A
// threshold outside (0,1) falls back to DefaultRotationThreshold, and the result stays
// below 1 so that the certificate is used for some of its life.
func JitteredThreshold(threshold, r float64) float64 {
	if threshold <= 0 || threshold >= 1 {
		threshold = DefaultRotationThreshold
	}
	r = min(max(r, 0), 1)
	return min(threshold*(1+RotationJitter*r), (1+threshold)/2)
}

// rotationSchedule chooses, once per certificate, when it is renewed: the jittered point is
// drawn the first time a certificate is seen and kept for as long as it is the current one,
// so that repeated checks (and retries after a failed renewal) do not move it.
type rotationSchedule struct {
	threshold float64
	// rand returns a number in [0,1) (math/rand/v2's Float64 unless a test injects one).
	rand func() float64

	mu  sync.Mutex
	set bool
	key certKey // the certificate at is for
	at  time.Time
}

// certKey tells certificates apart: by their DER, and by serial and validity for
// certificates built without it.
type certKey struct {
	raw, serial         string
	notBefore, notAfter int64
}

func keyOf(cert *x509.Certificate) certKey {
	k := certKey{raw: string(cert.Raw), notBefore: cert.NotBefore.UnixNano(), notAfter: cert.NotAfter.UnixNano()}
	if cert.SerialNumber != nil {
		k.serial = cert.SerialNumber.String()
	}
	return k
}

func newRotationSchedule(threshold float64, r func() float64) *rotationSchedule {
	if r == nil {
		r = rand.Float64
	}
	return &rotationSchedule{threshold: threshold, rand: r}
}

// At is when cert is to be renewed.
func (s *rotationSchedule) At(cert *x509.Certificate) time.Time {
	k := keyOf(cert)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set || s.key != k {
		s.set, s.key = true, k
		s.at = RotationTime(cert.NotBefore, cert.NotAfter, JitteredThreshold(s.threshold, s.rand()))
	}
	return s.at
}

// NeedsRotation reports whether at now no more than threshold of the
// certificate's lifetime remains (or it is already expired).
func NeedsRotation(cert *x509.Certificate, now time.Time, threshold float64) bool {
	return !now.Before(RotationTime(cert.NotBefore, cert.NotAfter, threshold))
}
