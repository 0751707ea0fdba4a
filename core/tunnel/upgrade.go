package tunnel

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/rest"
)

// UpgradeProtocol is the HTTP Upgrade token of a tunnel connection.
const UpgradeProtocol = "konnectivity.proxy.flotilla.dev/v1"

// DialUpgrade POSTs an HTTP/1.1 Upgrade to path on cfg's server, with cfg's TLS, credentials
// and proxy (proxy-url: an HTTP CONNECT proxy), and returns the upgraded connection. A refusal
// is an error carrying the status and the start of the body.
func DialUpgrade(ctx context.Context, cfg *rest.Config, path string) (net.Conn, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration for %s: %w", cfg.Host, err)
	}
	if tlsConfig != nil {
		tlsConfig.NextProtos = []string{"http/1.1"} // an upgrade needs HTTP/1.1
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	transport := &http.Transport{
		Proxy: proxy, TLSClientConfig: tlsConfig, DisableKeepAlives: true,
		TLSHandshakeTimeout: 10 * time.Second,
		// An upgrade needs HTTP/1.1: never HTTP/2, even with the default TLS configuration.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	defer transport.CloseIdleConnections()
	rt, err := rest.HTTPWrappersForConfig(cfg, transport)
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", cfg.Host, err)
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	url := strings.TrimSuffix(host, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", UpgradeProtocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("upgrading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		return nil, &UpgradeError{URL: url, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("upgrading %s: the response body is not writable", url)
	}
	return &upgradedConn{ReadWriteCloser: rwc, remote: addr(url)}, nil
}

// UpgradeError is a refused upgrade.
type UpgradeError struct {
	URL    string
	Status int
	Body   string
}

func (e *UpgradeError) Error() string {
	return fmt.Sprintf("upgrading %s: %d %s: %s", e.URL, e.Status, http.StatusText(e.Status), e.Body)
}

// upgradedConn is the body of a 101 response as a net.Conn. Deadlines are not supported (gRPC
// relies on keepalive instead).
type upgradedConn struct {
	io.ReadWriteCloser
	remote net.Addr
}

func (c *upgradedConn) LocalAddr() net.Addr              { return addr("upgrade") }
func (c *upgradedConn) RemoteAddr() net.Addr             { return c.remote }
func (c *upgradedConn) SetDeadline(time.Time) error      { return nil }
func (c *upgradedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *upgradedConn) SetWriteDeadline(time.Time) error { return nil }

// AuthInfo is who is at the other end of a connection handed to a Listener, as the handler that
// accepted it authenticated them. gRPC handlers find it in peer.FromContext(ctx).AuthInfo.
type AuthInfo struct {
	credentials.CommonAuthInfo
	// Cluster is the managed cluster the agent authenticated as.
	Cluster string
	// User is the authenticated user name.
	User string
}

func (AuthInfo) AuthType() string { return "flotilla-tunnel" }

// Listener is a net.Listener fed with connections accepted elsewhere (hijacked upgrade
// requests), each with the AuthInfo of its peer. Serve gRPC on it with grpc.Creds(l.Credentials()).
type Listener struct {
	conns chan *authConn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan *authConn), done: make(chan struct{})}
}

// ErrListenerClosed is returned by Offer and Accept once the Listener is closed.
var ErrListenerClosed = errors.New("tunnel listener closed")

// Offer hands conn to Accept; br, if not nil, holds bytes already read from it. It waits until
// the connection is accepted, ctx ends or the Listener closes (then conn is closed).
func (l *Listener) Offer(ctx context.Context, conn net.Conn, br *bufio.Reader, info AuthInfo) error {
	ac := &authConn{Conn: conn, info: info}
	if br != nil && br.Buffered() > 0 {
		ac.r = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), conn)
	}
	select {
	case l.conns <- ac:
		return nil
	case <-ctx.Done():
		_ = conn.Close()
		return context.Cause(ctx)
	case <-l.done:
		_ = conn.Close()
		return ErrListenerClosed
	}
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrListenerClosed
	}
}

func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *Listener) Addr() net.Addr { return addr("tunnel-listener") }

// Credentials are the gRPC server credentials of connections from the Listener: no handshake
// (the connection is inside TLS already, authenticated by whoever offered it), and the
// offered AuthInfo as the peer's.
func (l *Listener) Credentials() credentials.TransportCredentials { return listenerCreds{} }

type authConn struct {
	net.Conn
	r    io.Reader
	info AuthInfo
}

func (c *authConn) Read(b []byte) (int, error) {
	if c.r != nil {
		return c.r.Read(b)
	}
	return c.Conn.Read(b)
}

type listenerCreds struct{}

func (listenerCreds) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("tunnel listener credentials are for servers")
}

func (listenerCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	ac, ok := c.(*authConn)
	if !ok {
		return nil, nil, errors.New("connection did not come from a tunnel listener")
	}
	info := ac.info
	info.SecurityLevel = credentials.PrivacyAndIntegrity // inside TLS
	return ac, info, nil
}

func (listenerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "flotilla-tunnel"}
}
func (listenerCreds) Clone() credentials.TransportCredentials { return listenerCreds{} }
func (listenerCreds) OverrideServerName(string) error         { return nil }
