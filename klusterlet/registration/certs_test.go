package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/keyutil"
)

func TestRotationTime(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(100 * time.Minute)
	if got := RotationTime(start, end, 0.2); !got.Equal(start.Add(80 * time.Minute)) {
		t.Fatalf("RotationTime = %v, want 80 minutes in", got)
	}
	// Out-of-range thresholds fall back to 20%.
	for _, th := range []float64{0, -1, 1, 2} {
		if got := RotationTime(start, end, th); !got.Equal(start.Add(80 * time.Minute)) {
			t.Errorf("threshold %v: %v", th, got)
		}
	}
	if got := RotationTime(start, end, 0.5); !got.Equal(start.Add(50 * time.Minute)) {
		t.Errorf("threshold 0.5: %v", got)
	}
	if got := RotationTime(end, start, 0.2); !got.Equal(end) {
		t.Errorf("inverted window: %v", got)
	}

	cert := &x509.Certificate{NotBefore: start, NotAfter: end}
	cases := []struct {
		at   time.Duration
		want bool
	}{
		{0, false},
		{79*time.Minute + 59*time.Second, false},
		{80 * time.Minute, true}, // exactly 20% left
		{99 * time.Minute, true},
		{101 * time.Minute, true}, // expired
	}
	for _, c := range cases {
		if got := NeedsRotation(cert, start.Add(c.at), 0.2); got != c.want {
			t.Errorf("NeedsRotation at +%v = %v, want %v", c.at, got, c.want)
		}
	}
}

// selfSigned issues a certificate for id valid from notBefore for lifetime.
func selfSigned(t *testing.T, id Identity, notBefore time.Time, lifetime time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      id.Subject(),
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

func TestCredentials(t *testing.T) {
	id := Identity{ClusterName: "c1", AgentName: "a1"}
	now := time.Now()
	certPEM, keyPEM := selfSigned(t, id, now.Add(-time.Minute), time.Hour)
	creds, err := IssuedCredentials(id, "c1-x", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !creds.ValidAt(now) || creds.ValidAt(now.Add(2*time.Hour)) || creds.ValidAt(now.Add(-time.Hour)) {
		t.Error("ValidAt window wrong")
	}
	if !id.MatchesCertificate(creds.Leaf) {
		t.Error("certificate does not match its identity")
	}
	if id2 := (Identity{ClusterName: "c2", AgentName: "a1"}); id2.MatchesCertificate(creds.Leaf) {
		t.Error("certificate matches another cluster")
	}
	if _, err := IssuedCredentials(Identity{ClusterName: "c1", AgentName: "other"}, "c1-x", certPEM, keyPEM); err == nil || !strings.Contains(err.Error(), "c1-x") {
		t.Errorf("certificate for another agent accepted or error %v does not name the CSR", err)
	}
	_, otherKey := selfSigned(t, id, now, time.Hour)
	if _, err := IssuedCredentials(id, "c1-x", certPEM, otherKey); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("mismatched key accepted: %v", err)
	}
	if id.MatchesCertificate(&x509.Certificate{Subject: pkix.Name{CommonName: id.CommonName()}}) {
		t.Error("certificate without the cluster group accepted")
	}
}
