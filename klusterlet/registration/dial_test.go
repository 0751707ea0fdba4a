package registration

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// TestHubConnectionDial checks that a connection with a dial function opens its connections
// with it, and that TLS still verifies the URL's host name: the host is reached at the address
// the function picks, as with a hosts-file entry.
func TestHubConnectionDial(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// httptest's certificate is valid for example.com, which the dial sends to the server.
	server := "https://example.com:" + u.Port()
	var dialed []string
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		var d net.Dialer
		return d.DialContext(ctx, network, u.Host)
	}
	certPEM, keyPEM := selfSigned(t, Identity{ClusterName: "c1", AgentName: "a1"}, time.Now().Add(-time.Minute), time.Hour)
	creds, err := ParseCredentials(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := newHubConnection(HubEndpoint{Server: server, CAData: ca}, creds, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := (&http.Client{Transport: conn}).Get(server)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("answer %q", b)
	}
	if len(dialed) != 1 || dialed[0] != "example.com:"+u.Port() {
		t.Fatalf("dialed %v, want example.com:%s once", dialed, u.Port())
	}
}
