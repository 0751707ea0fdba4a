package registration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math"
	"math/big"
	mathrand "math/rand/v2"
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

func TestJitteredThreshold(t *testing.T) {
	// OCM renews with 20% to 25% of the lifetime remaining.
	for _, c := range []struct{ threshold, r, want float64 }{
		{0.2, 0, 0.2},
		{0.2, 0.5, 0.225},
		{0.2, 1, 0.25},
		{0.2, -3, 0.2}, // clamped
		{0.2, 7, 0.25}, // clamped
		{0, 0, 0.2},    // default threshold
		{1.5, 1, 0.25}, // out of range: default threshold
		{0.4, 1, 0.5},
		{0.9, 1, 0.95}, // never reaches the whole lifetime
	} {
		if got := JitteredThreshold(c.threshold, c.r); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("JitteredThreshold(%v, %v) = %v, want %v", c.threshold, c.r, got, c.want)
		}
	}
	rnd := mathrand.New(mathrand.NewPCG(1, 2))
	lo, hi := 1.0, 0.0
	for range 10000 {
		th := JitteredThreshold(DefaultRotationThreshold, rnd.Float64())
		if th < 0.2 || th > 0.25 {
			t.Fatalf("threshold %v outside [0.2, 0.25]", th)
		}
		lo, hi = min(lo, th), max(hi, th)
	}
	// The draws spread over the window rather than sticking to one end.
	if lo > 0.201 || hi < 0.249 {
		t.Errorf("10000 draws spanned only [%v, %v] of [0.2, 0.25]", lo, hi)
	}
}

func TestRotationSchedule(t *testing.T) {
	id := Identity{ClusterName: "c1", AgentName: "a1"}
	start := time.Now().Truncate(time.Second)
	issue := func(notBefore time.Time) *x509.Certificate {
		certPEM, keyPEM := selfSigned(t, id, notBefore, 100*time.Minute)
		creds, err := ParseCredentials(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return creds.Leaf
	}
	draws := []float64{0, 0.999999, 0.5}
	calls := 0
	sched := newRotationSchedule(DefaultRotationThreshold, func() float64 {
		r := draws[calls%len(draws)]
		calls++
		return r
	})

	// The first certificate draws 0: renewed with 20% (20 minutes) left.
	first := issue(start)
	at := sched.At(first)
	if want := start.Add(80 * time.Minute); !at.Equal(want) {
		t.Fatalf("first certificate renewed at +%v, want +80m", at.Sub(start))
	}
	// Asked again, and for the same certificate parsed anew (as after re-reading the secret),
	// the schedule keeps the point it drew: no new draw.
	again, err := x509.ParseCertificate(first.Raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*x509.Certificate{first, first, again, first} {
		if got := sched.At(c); !got.Equal(at) {
			t.Fatalf("rotation point moved from +%v to +%v for the same certificate", at.Sub(start), got.Sub(start))
		}
	}
	if calls != 1 {
		t.Fatalf("%d draws for one certificate, want 1", calls)
	}

	// A renewed certificate gets its own draw (0.999999: renewed with just under 25% left).
	second := issue(start.Add(time.Minute))
	at2 := sched.At(second)
	if calls != 2 {
		t.Fatalf("%d draws after a second certificate, want 2", calls)
	}
	lo, hi := second.NotAfter.Add(-25*time.Minute), second.NotAfter.Add(-20*time.Minute)
	if at2.Before(lo) || at2.After(hi) || at2.Sub(lo) > time.Second {
		t.Fatalf("second certificate renewed at +%v after issue, want just after +75m", at2.Sub(second.NotBefore))
	}
	if sched.At(second); calls != 2 {
		t.Fatalf("second certificate drew again")
	}

	// The default source stays in the window too.
	def := newRotationSchedule(DefaultRotationThreshold, nil)
	cert := issue(start)
	got := def.At(cert)
	if got.Before(cert.NotAfter.Add(-25*time.Minute)) || got.After(cert.NotAfter.Add(-20*time.Minute)) {
		t.Fatalf("default source: renewed at +%v, want between +75m and +80m", got.Sub(cert.NotBefore))
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
