package testproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// connect opens a CONNECT tunnel through p to addr and returns the tunnelled connection.
func connect(t *testing.T, p *Proxy, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.URL[len("http://"):], 5*time.Second)
	if err != nil {
		t.Fatalf("dialing the proxy: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
		t.Fatalf("writing CONNECT: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %v %v", addr, resp, err)
	}
	return c
}

// TestCloseDropsTunnelsAndReopenServesOnTheSamePort: Close ends the open tunnels, as a proxy
// going away would (the gateway suite's spec of cluster2 behind a proxy depends on it), and
// Reopen serves again at URL. Every wait has a 5 s deadline.
func TestCloseDropsTunnelsAndReopenServesOnTheSamePort(t *testing.T) {
	// An echo server as the upstream.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()

	p := Start()
	defer p.Close()
	url := p.URL
	c := connect(t, p, ln.Addr().String())
	defer c.Close()
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo through the tunnel: %q %v", buf, err)
	}
	if p.Tunnels() != 1 {
		t.Fatalf("Tunnels() = %d, want 1", p.Tunnels())
	}

	p.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("reading the tunnel after Close: %d bytes, %v; want EOF (the tunnel closed)", n, err)
	}
	if _, err := net.DialTimeout("tcp", url[len("http://"):], time.Second); err == nil {
		t.Fatal("the closed proxy still accepts connections")
	}

	if err := p.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	if p.URL != url {
		t.Fatalf("URL %s after Reopen, was %s", p.URL, url)
	}
	c2 := connect(t, p, ln.Addr().String())
	defer c2.Close()
	if p.Tunnels() != 2 {
		t.Fatalf("Tunnels() = %d after Reopen, want 2", p.Tunnels())
	}
}
