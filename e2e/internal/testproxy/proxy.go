// Package testproxy is a forward proxy for the suites: an HTTP CONNECT proxy (seeds, scenarios
// §9 "Register a cluster to hub through proxy server") that counts the tunnels it opened, so
// a spec can prove that traffic went through it.
package testproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// Proxy is an HTTP CONNECT proxy on a loopback port; URL is its address.
type Proxy struct {
	URL     string
	tunnels atomic.Int64

	mu     sync.Mutex
	server *httptest.Server
	// open are both ends of the tunnels open now, closed by Close as a proxy going away would.
	open map[net.Conn]struct{}
}

// Tunnels is the number of CONNECT tunnels opened so far.
func (p *Proxy) Tunnels() int64 { return p.tunnels.Load() }

// Start starts a proxy on a free loopback port; Close stops it.
func Start() *Proxy {
	p := &Proxy{open: map[net.Conn]struct{}{}}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.server.URL
	return p
}

// Close stops serving and closes the open tunnels, so their clients see the connection drop.
// Closing a closed proxy does nothing.
func (p *Proxy) Close() {
	p.mu.Lock()
	s := p.server
	p.server = nil
	open := p.open
	p.open = map[net.Conn]struct{}{}
	p.mu.Unlock()
	if s == nil {
		return
	}
	s.Close()
	for c := range open {
		c.Close()
	}
}

// Reopen serves again, after Close, on the same address (URL does not change); the tunnel
// count goes on.
func (p *Proxy) Reopen() error {
	ln, err := net.Listen("tcp", p.URL[len("http://"):])
	if err != nil {
		return err
	}
	s := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(p.serve)}}
	s.Start()
	p.mu.Lock()
	p.server = s
	p.mu.Unlock()
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	upstream, err := net.Dial("tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !p.track(conn, upstream) {
		return
	}
	p.tunnels.Add(1)
	_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() { _, _ = io.Copy(upstream, buf); upstream.Close(); p.untrack(upstream) }()
	go func() { _, _ = io.Copy(conn, upstream); conn.Close(); p.untrack(conn) }()
}

// track records a tunnel's ends; false (both closed) when the proxy was closed meanwhile.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.server == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.open[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}
