package registration

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHubConnectionSwitchesCertificates checks that requests after
// SetCredentials authenticate with the new certificate, on the same client.
func TestHubConnectionSwitchesCertificates(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted client's failed handshake is expected
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	first := Identity{ClusterName: "c1", AgentName: "first"}
	second := Identity{ClusterName: "c1", AgentName: "second"}
	creds := func(id Identity) *Credentials {
		certPEM, keyPEM := selfSigned(t, id, time.Now().Add(-time.Minute), time.Hour)
		c, err := ParseCredentials(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	conn, err := NewHubConnection(HubEndpoint{Server: srv.URL, CAData: ca}, creds(first))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	httpClient := &http.Client{Transport: conn}
	get := func() string {
		t.Helper()
		resp, err := httpClient.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != first.CommonName() {
		t.Fatalf("first request as %q", got)
	}
	if err := conn.SetCredentials(creds(second)); err != nil {
		t.Fatal(err)
	}
	if got := get(); got != second.CommonName() {
		t.Fatalf("after rotation the request went out as %q", got)
	}
	if conn.Credentials().Leaf.Subject.CommonName != second.CommonName() {
		t.Fatal("Credentials() not updated")
	}
	if cfg := conn.Config("ua"); cfg.Host != srv.URL || cfg.Transport != conn {
		t.Fatalf("rest config %+v does not use the connection", cfg)
	}

	// A hub whose certificate the stored CA does not trust is recognised as such.
	wrongCA, _ := selfSigned(t, first, time.Now().Add(-time.Minute), time.Hour)
	untrusted, err := NewHubConnection(HubEndpoint{Server: srv.URL, CAData: wrongCA}, creds(first))
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&http.Client{Transport: untrusted}).Get(srv.URL)
	if err == nil || !isUntrustedServer(err) {
		t.Fatalf("untrusted server error %v not recognised", err)
	}
}
