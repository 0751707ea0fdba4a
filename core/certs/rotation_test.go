package certs

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

// A client certificate through a CA rotation: kept while the new CA settles, then re-signed;
// the old CA leaves the bundle when it expires.
func TestPolicyRotatesClientCertificate(t *testing.T) {
	p := Policy{Name: "test", CALifetime: 10 * time.Hour, LeafLifetime: time.Hour, Fraction: 0.2, Settle: time.Minute}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	client := Leaf{Role: "client certificate", CommonName: "proxy-client", Organization: []string{"group"}, Usage: x509.ExtKeyUsageClientAuth}
	t0 := time.Now()
	a, rotated, reasons, err := p.RenewAuthority(nil, t0)
	if err != nil || !rotated || strings.Join(reasons, ";") != "no CA" || !strings.HasPrefix(a.CA.Cert.Subject.CommonName, "test-ca@") {
		t.Fatalf("first authority: rotated %v, reasons %v, %v", rotated, reasons, err)
	}
	leaf, reasons, err := p.RenewLeaf(a, rotated, client, nil, t0)
	if err != nil || strings.Join(reasons, ";") != "no client certificate" {
		t.Fatalf("first leaf: %v %v", reasons, err)
	}
	if kept, reasons, _ := p.RenewLeaf(a, false, client, leaf, t0.Add(40*time.Minute)); kept != leaf || len(reasons) > 0 {
		t.Fatalf("a certificate with more than a fifth of its life left was replaced: %v", reasons)
	}
	renewed, reasons, _ := p.RenewLeaf(a, false, client, leaf, t0.Add(50*time.Minute))
	if renewed == leaf || len(reasons) != 1 || !strings.Contains(reasons[0], "the client certificate expires at") {
		t.Fatalf("due certificate: reasons %v", reasons)
	}

	// The CA is due (less than 2h of 10h5m left) while the leaf is due too.
	now := a.CA.Cert.NotAfter.Add(-110 * time.Minute)
	leaf, _, _ = p.RenewLeaf(a, false, client, nil, now.Add(-50*time.Minute))
	next, rotated, reasons, err := p.RenewAuthority(a, now)
	if err != nil || !rotated || !strings.Contains(strings.Join(reasons, ";"), "the CA expires at") {
		t.Fatalf("CA rotation: %v %v", reasons, err)
	}
	if len(next.Trusted) != 2 || !next.Trusted[0].Equal(next.CA.Cert) || !next.Trusted[1].Equal(a.CA.Cert) || len(a.Trusted) != 1 {
		t.Fatalf("bundle after rotation: %d CAs (input changed: %v)", len(next.Trusted), len(a.Trusted) != 1)
	}
	if kept, reasons, _ := p.RenewLeaf(next, true, client, leaf, now); kept != leaf || len(reasons) > 0 {
		t.Fatalf("leaf replaced in the step that rotated the CA: %v", reasons)
	}
	if kept, reasons, _ := p.RenewLeaf(next, false, client, leaf, now.Add(59*time.Second)); kept != leaf || len(reasons) > 0 {
		t.Fatalf("leaf moved to a CA younger than Settle: %v", reasons)
	}
	moved, reasons, _ := p.RenewLeaf(next, false, client, leaf, now.Add(61*time.Second))
	if moved == leaf || len(reasons) != 1 || moved.Cert.CheckSignatureFrom(next.CA.Cert) != nil {
		t.Fatalf("leaf not re-signed by the new CA after Settle: %v", reasons)
	}
	if !moved.Cert.NotAfter.After(leaf.Cert.NotAfter) || moved.Cert.Subject.CommonName != "proxy-client" {
		t.Errorf("re-signed leaf %s until %s", moved.Cert.Subject, moved.Cert.NotAfter)
	}
	// A leaf of a CA that is no longer trusted is replaced at once.
	foreign, _, _ := p.RenewLeaf(&Authority{CA: mustCA(t, time.Hour, now), Trusted: nil}, false, client, nil, now)
	if _, reasons, _ := p.RenewLeaf(next, false, client, foreign, now); !strings.Contains(strings.Join(reasons, ";"), "not signed by a trusted CA") {
		t.Errorf("foreign leaf: %v", reasons)
	}

	pruned, rotated, reasons, _ := p.RenewAuthority(next, a.CA.Cert.NotAfter.Add(time.Second))
	if rotated || len(pruned.Trusted) != 1 || !strings.Contains(strings.Join(reasons, ";"), "expired CAs leave the bundle") {
		t.Fatalf("after the old CA expired: rotated %v, %d CAs, %v", rotated, len(pruned.Trusted), reasons)
	}
	if _, _, reasons, _ := p.RenewAuthority(pruned, a.CA.Cert.NotAfter.Add(2*time.Second)); len(reasons) > 0 {
		t.Errorf("a settled authority changed: %v", reasons)
	}
}

func TestPolicyValidate(t *testing.T) {
	ok := Policy{CALifetime: 10 * time.Hour, LeafLifetime: time.Hour, Fraction: 0.2, Settle: time.Minute}
	for name, change := range map[string]func(*Policy){
		"leaf outlives CA": func(p *Policy) { p.LeafLifetime = 11 * time.Hour },
		"no leaf lifetime": func(p *Policy) { p.LeafLifetime = 0 },
		"fraction 1":       func(p *Policy) { p.Fraction = 1 },
		"fraction 0":       func(p *Policy) { p.Fraction = 0 },
		"settle too long":  func(p *Policy) { p.Settle = 16 * time.Minute },
		"negative settle":  func(p *Policy) { p.Settle = -time.Second },
	} {
		p := ok
		change(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}
