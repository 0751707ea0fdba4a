package webhook

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func testPolicy() certPolicy {
	return certPolicy{
		caLifetime: 10 * time.Hour, servingLifetime: time.Hour, fraction: 0.2,
		dnsNames: []string{"hub.example.com"}, ips: []net.IP{net.ParseIP("127.0.0.1")}, name: "test",
	}
}

// step renews m at now and round-trips it through Secret data, as the Server does.
func step(t *testing.T, p certPolicy, m *material, now time.Time) (*material, []string) {
	t.Helper()
	next, reasons, err := p.renew(m, now)
	if err != nil {
		t.Fatal(err)
	}
	parsed, problems := parseMaterial(next.secretData())
	if len(problems) > 0 {
		t.Fatalf("round trip: %v", problems)
	}
	if p.servingProblem(parsed, now) != "" {
		t.Fatalf("renew left an unusable serving certificate: %s", p.servingProblem(parsed, now))
	}
	return parsed, reasons
}

func TestRenewLifecycle(t *testing.T) {
	p := testPolicy()
	t0 := time.Now()
	m, reasons := step(t, p, nil, t0)
	if len(reasons) == 0 || len(m.trusted) != 1 || !m.trusted[0].Equal(m.ca.Cert) {
		t.Fatalf("first step: reasons %v, %d trusted", reasons, len(m.trusted))
	}
	if got := m.serving.Cert.NotAfter.Sub(t0); got < time.Hour-time.Second || got > time.Hour {
		t.Errorf("serving lifetime %s, want 1h", got)
	}
	if m.serving.Cert.DNSNames[0] != "hub.example.com" || !m.serving.Cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("SANs %v %v", m.serving.Cert.DNSNames, m.serving.Cert.IPAddresses)
	}

	// Reused while more than a fifth of the lifetime remains.
	same, reasons := step(t, p, m, t0.Add(40*time.Minute))
	if len(reasons) > 0 || !same.serving.Cert.Equal(m.serving.Cert) {
		t.Fatalf("valid material replaced: %v", reasons)
	}

	// Renewed once less than a fifth remains (the lifetime includes the 6 minutes' backdating).
	renewed, reasons := step(t, p, m, t0.Add(50*time.Minute))
	if len(reasons) != 1 || !strings.Contains(reasons[0], "serving certificate expires") {
		t.Fatalf("reasons %v", reasons)
	}
	if renewed.serving.Cert.Equal(m.serving.Cert) || !renewed.ca.Cert.Equal(m.ca.Cert) {
		t.Fatal("serving certificate not replaced, or CA replaced with it")
	}
}

func TestRenewRotatesCAKeepingTheOldOneTrusted(t *testing.T) {
	p := testPolicy()
	t0 := time.Now()
	m, _ := step(t, p, nil, t0)
	// Walk forward in serving lifetimes until the CA is due (less than 2h of 10h left).
	now := t0
	for !p.dueForRenewal(m.ca.Cert, now.Add(50*time.Minute)) {
		now = now.Add(50 * time.Minute)
		m, _ = step(t, p, m, now)
	}
	oldCA, oldServing := m.ca.Cert, m.serving.Cert
	if oldServing.NotAfter.After(oldCA.NotAfter) {
		t.Fatalf("serving certificate outlives its CA: %s > %s", oldServing.NotAfter, oldCA.NotAfter)
	}
	// Make the serving certificate due as well: the CA rotates, the serving one waits a step.
	now = oldServing.NotAfter.Add(-5 * time.Minute)
	rotated, reasons := step(t, p, m, now)
	if !strings.Contains(strings.Join(reasons, ";"), "the CA expires") {
		t.Fatalf("CA not rotated: %v", reasons)
	}
	if rotated.ca.Cert.Equal(oldCA) || len(rotated.trusted) != 2 || !rotated.trusted[0].Equal(rotated.ca.Cert) || !rotated.trusted[1].Equal(oldCA) {
		t.Fatalf("bundle after rotation: %d certificates", len(rotated.trusted))
	}
	if !rotated.serving.Cert.Equal(oldServing) {
		t.Fatal("serving certificate replaced in the step that rotated the CA")
	}
	// It moves to the new CA once that has been in the bundle for the settle time.
	p.settle = time.Minute
	if kept, reasons := step(t, p, rotated, now.Add(59*time.Second)); len(reasons) > 0 || !kept.serving.Cert.Equal(oldServing) {
		t.Fatalf("serving certificate moved to a CA younger than the settle time: %v", reasons)
	}
	moved, reasons := step(t, p, rotated, now.Add(61*time.Second))
	if len(reasons) != 1 || moved.serving.Cert.CheckSignatureFrom(rotated.ca.Cert) != nil {
		t.Fatalf("serving certificate not re-signed by the new CA: %v", reasons)
	}
	// Once the old CA expired it leaves the bundle.
	pruned, reasons := step(t, p, moved, oldCA.NotAfter.Add(time.Second))
	if len(pruned.trusted) != 1 || !pruned.trusted[0].Equal(rotated.ca.Cert) || !strings.Contains(strings.Join(reasons, ";"), "expired CAs") {
		t.Fatalf("bundle after the old CA expired: %d certificates, reasons %v", len(pruned.trusted), reasons)
	}
}

func TestRenewRepairs(t *testing.T) {
	p := testPolicy()
	t0 := time.Now()
	m, _ := step(t, p, nil, t0)
	data := m.secretData()

	t.Run("tampered serving certificate", func(t *testing.T) {
		d := clone(data)
		d[corev1.TLSCertKey] = []byte("garbage")
		cur, problems := parseMaterial(d)
		if len(problems) != 1 || cur.ca == nil {
			t.Fatalf("problems %v", problems)
		}
		next, _ := step(t, p, cur, t0)
		if !next.ca.Cert.Equal(m.ca.Cert) {
			t.Error("CA replaced for a broken serving certificate")
		}
	})
	t.Run("serving certificate of another CA", func(t *testing.T) {
		other, _ := step(t, p, nil, t0)
		d := clone(data)
		d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey] = other.serving.CertPEM, other.serving.KeyPEM
		cur, _ := parseMaterial(d)
		next, reasons := step(t, p, cur, t0)
		if !strings.Contains(strings.Join(reasons, ";"), "not signed by a trusted CA") || next.serving.Cert.CheckSignatureFrom(m.ca.Cert) != nil {
			t.Errorf("reasons %v", reasons)
		}
	})
	t.Run("broken CA", func(t *testing.T) {
		d := clone(data)
		d[SecretCAPrivateKey] = nil
		cur, problems := parseMaterial(d)
		if cur.ca != nil || len(problems) != 1 {
			t.Fatalf("problems %v", problems)
		}
		next, _ := step(t, p, cur, t0)
		if next.ca.Cert.Equal(m.ca.Cert) {
			t.Error("CA kept without its key")
		}
	})
	t.Run("new host", func(t *testing.T) {
		p2 := p
		p2.dnsNames = append(p2.dnsNames, "other.example.com")
		next, reasons := step(t, p2, m, t0)
		if !strings.Contains(strings.Join(reasons, ";"), "does not cover other.example.com") || !next.ca.Cert.Equal(m.ca.Cert) {
			t.Errorf("reasons %v", reasons)
		}
	})
	t.Run("expired serving certificate", func(t *testing.T) {
		_, reasons := step(t, p, m, m.serving.Cert.NotAfter)
		if !strings.Contains(strings.Join(reasons, ";"), "expired") {
			t.Errorf("reasons %v", reasons)
		}
	})
}

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.BindAddress != "127.0.0.1:0" || len(o.Hosts) != 1 || o.Hosts[0] != "127.0.0.1" {
		t.Errorf("defaults %+v", o)
	}
	for _, bad := range []Options{
		{BindAddress: ":9443"},
		{BindAddress: "0.0.0.0:9443"},
		{BindAddress: "localhost"},
		{CertLifetime: time.Hour, ResyncPeriod: time.Hour},
		{RenewalFraction: 1},
		{CALifetime: time.Hour, CertLifetime: 2 * time.Hour},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if o, err := (Options{BindAddress: ":9443", Service: &ServiceReference{Namespace: "ns", Name: "hub", Port: 443}}).withDefaults(); err != nil {
		t.Error(err)
	} else if p := o.certPolicy(); strings.Join(p.dnsNames, ",") != "hub.ns.svc,hub.ns.svc.cluster.local" {
		t.Errorf("service names %v", p.dnsNames)
	}
	// URL mode: the name the aggregator verifies for the ExternalName Service of the APIServices.
	if o, err := (Options{}).withDefaults(); err != nil {
		t.Error(err)
	} else if p := o.certPolicy(); strings.Join(p.dnsNames, ",") != "flotilla-hub-apiservice.open-cluster-management-hub.svc" || len(p.ips) != 1 {
		t.Errorf("URL mode names %v %v", p.dnsNames, p.ips)
	}
	if r, err := ParseServiceReference("open-cluster-management-hub/flotilla-hub:443"); err != nil || r.String() != "open-cluster-management-hub/flotilla-hub:443" {
		t.Errorf("%v %v", r, err)
	}
	for _, bad := range []string{"hub:443", "ns/hub", "ns/hub:0", "ns/Hub:443"} {
		if _, err := ParseServiceReference(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func clone(d map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range d {
		out[k] = v
	}
	return out
}

func TestFlags(t *testing.T) {
	for _, name := range []string{DefaultConfigurationName, DefaultNamespace + "/" + DefaultSecretName, "127.0.0.1"} {
		if !strings.Contains(strings.ReplaceAll(FlagsHelp, "\n", " "), name) {
			t.Errorf("FlagsHelp does not mention %s", name)
		}
	}
	for _, c := range []struct {
		flags Flags
		ok    bool
		want  Options
	}{
		{Flags{BindAddress: DefaultBindAddress}, true, Options{BindAddress: DefaultBindAddress}},
		{Flags{BindAddress: "0"}, true, Options{Disabled: true}},
		{Flags{BindAddress: ":9443"}, false, Options{}},
		{Flags{BindAddress: ":9443", Hosts: []string{"hub.example.com"}}, true, Options{BindAddress: ":9443", Hosts: []string{"hub.example.com"}}},
		{Flags{BindAddress: ":9443", Service: "ns/hub:443"}, true,
			Options{BindAddress: ":9443", Service: &ServiceReference{Namespace: "ns", Name: "hub", Port: 443}}},
		{Flags{BindAddress: ":9443", Service: "hub"}, false, Options{}},
		// Each webhook component of a split hub its own configurations and Secret.
		{Flags{BindAddress: DefaultBindAddress, ConfigurationName: "cluster-manager-work-webhook", SecretName: "cluster-manager-work-webhook-serving-cert"}, true,
			Options{BindAddress: DefaultBindAddress, ConfigurationName: "cluster-manager-work-webhook", SecretName: "cluster-manager-work-webhook-serving-cert"}},
		{Flags{BindAddress: DefaultBindAddress, ConfigurationName: "Work_Webhook"}, false, Options{}},
		{Flags{BindAddress: DefaultBindAddress, ConfigurationName: strings.Repeat("w", 53)}, false, Options{}},
		{Flags{BindAddress: DefaultBindAddress, SecretName: "certs/"}, false, Options{}},
	} {
		got, err := c.flags.Options()
		if (err == nil) != c.ok {
			t.Errorf("%+v: error %v", c.flags, err)
			continue
		}
		if c.ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: options %+v, want %+v", c.flags, got, c.want)
		}
	}
}
