// Package testproxy is a forward proxy for the suites: an HTTP CONNECT proxy (seeds, scenarios
// §9 "Register a cluster to hub through proxy server") that counts the tunnels it opened, so
// a spec can prove that traffic went through it.
package testproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// Proxy is an HTTP CONNECT proxy on a loopback port; URL is its address.
type Proxy struct {
	*httptest.Server
	tunnels atomic.Int64
}

// Tunnels is the number of CONNECT tunnels opened so far.
func (p *Proxy) Tunnels() int64 { return p.tunnels.Load() }

// Start starts a proxy; Close stops it.
func Start() *Proxy {
	p := &Proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		p.tunnels.Add(1)
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(upstream, buf); upstream.Close() }()
		go func() { _, _ = io.Copy(conn, upstream); conn.Close() }()
	}))
	return p
}
