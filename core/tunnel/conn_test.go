package tunnel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// sent records the packets a Mux sends.
type sent struct {
	mu      sync.Mutex
	packets []*konnectivity.Packet
}

func (s *sent) send(p *konnectivity.Packet) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.packets = append(s.packets, p)
	return nil
}

func (s *sent) types() []konnectivity.PacketType {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t []konnectivity.PacketType
	for _, p := range s.packets {
		t = append(t, p.Type)
	}
	return t
}

func data(id int64, b string) *konnectivity.Data {
	return &konnectivity.Data{ConnectID: id, Data: []byte(b)}
}

func TestConnDrainsQueueThenEOFWhenClosedRemotely(t *testing.T) {
	var s sent
	m := NewMux(s.send, MuxOptions{Side: Dialer})
	c, err := m.Open(7, "cluster c1: connection to c1:443", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Data(data(7, "hello "))
	m.Data(data(7, "world"))
	m.RemoteClosed(7, "")
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("read %q, %v; want the queued data, then EOF", got, err)
	}
	if _, err := c.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "closed by the other end") {
		t.Fatalf("writing after the other end closed: %v", err)
	}
	_ = c.Close()
	if types := s.types(); len(types) != 0 {
		t.Fatalf("the dialer answered the agent's close with %v; it must send nothing", types)
	}
	if m.Len() != 0 {
		t.Fatalf("%d connections left open", m.Len())
	}
}

func TestAcceptorAnswersCloseRequest(t *testing.T) {
	var s sent
	m := NewMux(s.send, MuxOptions{Side: Acceptor})
	c, _ := m.Open(3, "cluster c1: connection to c1:443", nil, nil)
	m.RemoteClosed(3, "")
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after CLOSE_REQ: %v", err)
	}
	_ = c.Close()
	_ = c.Close()
	if types := s.types(); len(types) != 1 || types[0] != konnectivity.PacketType_CLOSE_RSP {
		t.Fatalf("sent %v, want one CLOSE_RSP", types)
	}
}

func TestConnReadDeadline(t *testing.T) {
	var s sent
	m := NewMux(s.send, MuxOptions{})
	c, _ := m.Open(1, "c", nil, nil)
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the deadline took %s", d)
	}
	// A later deadline lets a read wait for data again.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	go func() { time.Sleep(50 * time.Millisecond); m.Data(data(1, "x")) }()
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read after extending the deadline: %d, %v", n, err)
	}
}

func TestConnStallTimeout(t *testing.T) {
	var s sent
	var cut error
	var mu sync.Mutex
	m := NewMux(s.send, MuxOptions{Side: Dialer, Limits: Limits{StallTimeout: 200 * time.Millisecond},
		Cut: func(_ *Conn, err error) { mu.Lock(); cut = err; mu.Unlock() }})
	c, _ := m.Open(5, "cluster c1: connection to c1:443", nil, nil)
	m.Data(data(5, "unread"))
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a connection whose data nobody read was not cut within 10s (StallTimeout 200ms)")
	}
	_, err := c.Read(make([]byte, 10))
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "cluster c1: connection to c1:443") {
		t.Fatalf("read after the cut: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		told := cut != nil
		mu.Unlock()
		if told {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Cut was not told within 5s of the cut")
		}
	}
	if types := s.types(); len(types) != 1 || types[0] != konnectivity.PacketType_CLOSE_REQ {
		t.Fatalf("sent %v, want one CLOSE_REQ", types)
	}
}

func TestListenerKeepsBufferedBytes(t *testing.T) {
	l := NewListener()
	a, b := net.Pipe()
	defer a.Close()
	br := bufio.NewReader(io.MultiReader(strings.NewReader("early"), b))
	if _, err := br.Peek(5); err != nil {
		t.Fatal(err)
	}
	go func() { _ = l.Offer(context.Background(), b, br, AuthInfo{Cluster: "c1"}) }()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = a.Write([]byte(" late")) }()
	buf := make([]byte, 10)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "early late" {
		t.Fatalf("read %q, %v; want the buffered bytes first", buf, err)
	}
	_, info, err := l.Credentials().ServerHandshake(c)
	if err != nil || info.(AuthInfo).Cluster != "c1" {
		t.Fatalf("handshake: %v, %v", info, err)
	}
	_ = l.Close()
	if _, err := l.Accept(); !errors.Is(err, ErrListenerClosed) {
		t.Fatalf("accept after close: %v", err)
	}
	x, _ := net.Pipe()
	if err := l.Offer(context.Background(), x, nil, AuthInfo{}); !errors.Is(err, ErrListenerClosed) {
		t.Fatalf("offer after close: %v", err)
	}
}
