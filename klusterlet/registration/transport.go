package registration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// HubConnection is the agent's authenticated connection to the hub. Clients
// built from Config keep working across certificate rotations: each rotation
// builds a new HTTP transport with the new certificate and swaps it in, so new
// requests (and new connections) use the new identity at once, while requests
// already in flight finish on the old transport.
type HubConnection struct {
	endpoint HubEndpoint
	// dial, when set, opens the connections to the hub (Config.HubDial).
	dial    DialFunc
	current atomic.Pointer[connState]
}

// DialFunc opens a network connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

type connState struct {
	creds     *Credentials
	transport *http.Transport
}

// NewHubConnection connects to endpoint with creds.
func NewHubConnection(endpoint HubEndpoint, creds *Credentials) (*HubConnection, error) {
	return newHubConnection(endpoint, creds, nil)
}

// newHubConnection connects to endpoint with creds, opening connections with dial when set.
func newHubConnection(endpoint HubEndpoint, creds *Credentials, dial DialFunc) (*HubConnection, error) {
	h := &HubConnection{endpoint: endpoint, dial: dial}
	if err := h.SetCredentials(creds); err != nil {
		return nil, err
	}
	return h, nil
}

// Endpoint is the hub this connection talks to.
func (h *HubConnection) Endpoint() HubEndpoint { return h.endpoint }

// Credentials returns the certificate currently used for new requests.
func (h *HubConnection) Credentials() *Credentials { return h.current.Load().creds }

// SetCredentials switches new requests to creds and lets idle connections that
// authenticated with the previous certificate close.
func (h *HubConnection) SetCredentials(creds *Credentials) error {
	t, err := h.newTransport(creds)
	if err != nil {
		return err
	}
	old := h.current.Swap(&connState{creds: creds, transport: t})
	if old != nil {
		old.transport.CloseIdleConnections()
	}
	return nil
}

// Close releases idle connections; in-flight requests are not interrupted.
func (h *HubConnection) Close() {
	if s := h.current.Load(); s != nil {
		s.transport.CloseIdleConnections()
	}
}

// RoundTrip sends req over the transport of the current certificate.
func (h *HubConnection) RoundTrip(req *http.Request) (*http.Response, error) {
	return h.current.Load().transport.RoundTrip(req)
}

// Config returns a client config for the hub whose transport follows rotations.
// userAgent identifies the agent in the hub's audit log.
func (h *HubConnection) Config(userAgent string) *rest.Config {
	return &rest.Config{
		Host:      h.endpoint.Server,
		Transport: h,
		UserAgent: userAgent,
		QPS:       50,
		Burst:     100,
	}
}

func (h *HubConnection) newTransport(creds *Credentials) (*http.Transport, error) {
	tlsCfg, err := transport.TLSConfigFor(&transport.Config{TLS: transport.TLSConfig{
		CAData:     h.endpoint.CAData,
		ServerName: h.endpoint.TLSServerName,
		Insecure:   h.endpoint.Insecure,
		CertData:   creds.CertPEM,
		KeyData:    creds.KeyPEM,
	}})
	if err != nil {
		return nil, fmt.Errorf("TLS configuration for hub %s: %w", h.endpoint.Server, err)
	}
	t := &http.Transport{TLSClientConfig: tlsCfg}
	if h.dial != nil {
		// Through a proxy this dials the proxy, which resolves the hub's host itself.
		t.DialContext = h.dial
	}
	if h.endpoint.ProxyURL != "" {
		u, err := url.Parse(h.endpoint.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("hub kubeconfig proxy-url %q: %w", h.endpoint.ProxyURL, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("hub kubeconfig proxy-url %q: only http and https proxies are supported", h.endpoint.ProxyURL)
		}
		t.Proxy = http.ProxyURL(u)
	}
	return utilnet.SetTransportDefaults(t), nil
}
