package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"
)

func mustCA(t *testing.T, lifetime time.Duration, now time.Time) *KeyPair {
	t.Helper()
	ca, err := NewCA("test-ca", lifetime, now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestIssue(t *testing.T) {
	now := time.Now()
	ca := mustCA(t, 10*time.Hour, now)
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test-ca" || ca.Cert.CheckSignatureFrom(ca.Cert) != nil {
		t.Fatalf("CA %s: IsCA %v", ca.Cert.Subject, ca.Cert.IsCA)
	}
	if got := ca.Cert.NotAfter.Sub(now); got < 10*time.Hour-time.Second || got > 10*time.Hour {
		t.Errorf("CA lifetime %s", got)
	}
	if got := now.Sub(ca.Cert.NotBefore); got < 5*time.Minute || got > 5*time.Minute+time.Second { // times are kept to the second
		t.Errorf("CA backdated by %s, want 5m", got)
	}

	for _, tc := range []struct {
		name     string
		leaf     Leaf
		lifetime time.Duration
		check    func(c *x509.Certificate) string
	}{
		{"serving certificate with SANs", LeafForHosts("serving certificate", "hub.example.com", "127.0.0.1", "hub.example.com", "", "::1"), time.Hour,
			func(c *x509.Certificate) string {
				if strings.Join(c.DNSNames, ",") != "hub.example.com" || len(c.IPAddresses) != 2 || !c.IPAddresses[1].Equal(net.ParseIP("::1")) {
					return "SANs " + strings.Join(c.DNSNames, ",")
				}
				if c.Subject.CommonName != "hub.example.com" || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth || c.IsCA {
					return "subject or usage " + c.Subject.String()
				}
				return ""
			}},
		{"client certificate with CN and O", Leaf{Role: "client certificate", CommonName: "alice", Organization: []string{"team-a", "team-b"}, Usage: x509.ExtKeyUsageClientAuth}, time.Hour,
			func(c *x509.Certificate) string {
				if c.Subject.CommonName != "alice" || strings.Join(c.Subject.Organization, ",") != "team-a,team-b" || c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth {
					return "subject or usage " + c.Subject.String()
				}
				return ""
			}},
		{"lifetime capped at the CA's", Leaf{Role: "client certificate", CommonName: "bob", Usage: x509.ExtKeyUsageClientAuth}, 100 * time.Hour,
			func(c *x509.Certificate) string {
				if !c.NotAfter.Equal(ca.Cert.NotAfter) {
					return "NotAfter " + c.NotAfter.String()
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp, err := IssueLeaf(tc.leaf, ca, tc.lifetime, now)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(kp.Cert); msg != "" {
				t.Error(msg)
			}
			if p := tc.leaf.Problem(kp.Cert, []*x509.Certificate{ca.Cert}, now); p != "" {
				t.Errorf("problem with a fresh certificate: %s", p)
			}
			parsed, err := ParseKeyPair(kp.CertPEM, kp.KeyPEM)
			if err != nil || !parsed.Cert.Equal(kp.Cert) {
				t.Fatalf("round trip: %v", err)
			}
			if tc := kp.TLSCertificate(); tc.Leaf != kp.Cert || len(tc.Certificate) != 1 {
				t.Error("TLSCertificate")
			}
		})
	}
}

func TestProblemAndVerify(t *testing.T) {
	now := time.Now()
	ca, other := mustCA(t, 10*time.Hour, now), mustCA(t, 10*time.Hour, now)
	client := Leaf{Role: "client certificate", CommonName: "alice", Usage: x509.ExtKeyUsageClientAuth}
	serving := LeafForHosts("serving certificate", "hub.example.com")
	kp, err := IssueLeaf(client, ca, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		leaf    Leaf
		cert    *x509.Certificate
		trusted []*x509.Certificate
		at      time.Time
		want    string
	}{
		{"missing", client, nil, []*x509.Certificate{ca.Cert}, now, "no client certificate"},
		{"expired", client, kp.Cert, []*x509.Certificate{ca.Cert}, kp.Cert.NotAfter, "the client certificate expired at"},
		{"other CN", Leaf{Role: "client certificate", CommonName: "bob", Usage: x509.ExtKeyUsageClientAuth}, kp.Cert, []*x509.Certificate{ca.Cert}, now, `is for "alice", not "bob"`},
		{"other O", Leaf{Role: "client certificate", CommonName: "alice", Organization: []string{"x"}, Usage: x509.ExtKeyUsageClientAuth}, kp.Cert, []*x509.Certificate{ca.Cert}, now, "organizations"},
		{"host not covered", serving, kp.Cert, []*x509.Certificate{ca.Cert}, now, "does not cover hub.example.com"},
		{"untrusted CA", client, kp.Cert, []*x509.Certificate{other.Cert}, now, "not signed by a trusted CA"},
		{"trusted among others", client, kp.Cert, []*x509.Certificate{other.Cert, ca.Cert}, now, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.leaf.Problem(tc.cert, tc.trusted, tc.at)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problem %q, want %q", got, tc.want)
			}
		})
	}
	if err := Verify(kp.Cert, []*x509.Certificate{ca.Cert}, x509.ExtKeyUsageServerAuth, now); err == nil {
		t.Error("a client certificate verified for server auth")
	}
}

func TestDueForRenewal(t *testing.T) {
	now := time.Now()
	// 10h + 5m backdating: due when less than a fifth (2h1m) remains.
	c := mustCA(t, 10*time.Hour, now).Cert
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, false}, {7*time.Hour + 58*time.Minute, false}, {8 * time.Hour, true}, {11 * time.Hour, true}} {
		if got := DueForRenewal(c, 0.2, now.Add(tc.at)); got != tc.want {
			t.Errorf("at +%s: due %v, want %v", tc.at, got, tc.want)
		}
	}
	if got := IssuedAt(c); got.Sub(now).Abs() > time.Second {
		t.Errorf("IssuedAt %s, want %s", got, now)
	}
}

func TestParseErrors(t *testing.T) {
	now := time.Now()
	ca := mustCA(t, time.Hour, now)
	other := mustCA(t, time.Hour, now)
	garbageCert := []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	garbageKey := []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	for _, tc := range []struct {
		name      string
		cert, key []byte
		want      string
	}{
		{"empty certificate", nil, ca.KeyPEM, "certificate: no PEM CERTIFICATE block: empty"},
		{"not PEM", []byte("hello"), ca.KeyPEM, "certificate: no PEM CERTIFICATE block"},
		{"bad certificate block", garbageCert, ca.KeyPEM, "certificate: PEM block 1:"},
		{"key block only", ca.KeyPEM, ca.KeyPEM, "certificate: no PEM CERTIFICATE block"},
		{"empty key", ca.CertPEM, nil, "private key: no PEM private key block: empty"},
		{"bad key block", ca.CertPEM, garbageKey, "private key: PRIVATE KEY block:"},
		{"certificate as key", ca.CertPEM, ca.CertPEM, "private key: no PEM private key block"},
		{"another key", ca.CertPEM, other.KeyPEM, "private key does not match the certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKeyPair(tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}

	// Keys in every encoding the package reads.
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, block := range map[string]*pem.Block{
		"SEC 1":   {Type: "EC PRIVATE KEY", Bytes: sec1},
		"PKCS #1": {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)},
	} {
		if _, err := ParsePrivateKey(append([]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"), pem.EncodeToMemory(block)...)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A bundle keeps its order; other blocks are skipped.
	bundle := append(append(EncodeCertificates(ca.Cert), ca.KeyPEM...), EncodeCertificates(other.Cert)...)
	cs, err := ParseCertificates(bundle)
	if err != nil || len(cs) != 2 || !cs[0].Equal(ca.Cert) || !cs[1].Equal(other.Cert) {
		t.Errorf("bundle: %d certificates, %v", len(cs), err)
	}
}

func TestParseAuthority(t *testing.T) {
	now := time.Now()
	ca, old := mustCA(t, time.Hour, now), mustCA(t, time.Hour, now)
	leaf, err := IssueLeaf(LeafForHosts("serving certificate", "x"), ca, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAuthority(ca.CertPEM, ca.KeyPEM, append(EncodeCertificates(ca.Cert, old.Cert), []byte("garbage")...))
	if err != nil || len(a.Trusted) != 2 || !a.Trusted[0].Equal(ca.Cert) || !a.Trusted[1].Equal(old.Cert) {
		t.Fatalf("authority: %v", err)
	}
	if !strings.Contains(string(a.BundlePEM()), "CERTIFICATE") || !a.Pool().Equal(func() *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(ca.Cert)
		p.AddCert(old.Cert)
		return p
	}()) {
		t.Error("bundle or pool")
	}
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string
	}{
		"missing":  {nil, nil, "missing"},
		"not a CA": {leaf.CertPEM, leaf.KeyPEM, "certificate is not a CA"},
		"no key":   {ca.CertPEM, nil, "private key: no PEM private key block: empty"},
	} {
		if _, err := ParseAuthority(tc.cert, tc.key, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
