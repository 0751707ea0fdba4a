package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"

	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// Backend is the server's end of one agent's stream: connections are dialed through it.
type Backend struct {
	stream PacketStream
	mux    *Mux
	// what names the agent in errors, e.g. "cluster cluster1".
	what     string
	draining atomic.Bool

	done chan struct{}
	err  error // why the stream ended, once done is closed

	mu      sync.Mutex
	pending map[int64]pendingDial
}

type dialResult struct {
	conn *Conn
	err  string
}

type pendingDial struct {
	address string
	result  chan dialResult // capacity 1
}

// NewBackend returns the server's end of the agent stream s; what names the agent in
// errors. Serve must run for dials to complete.
func NewBackend(s PacketStream, what string, opts MuxOptions) *Backend {
	opts.Side = Dialer
	return &Backend{stream: s, what: what, mux: NewMux(s.Send, opts), pending: map[int64]pendingDial{}, done: make(chan struct{})}
}

// Draining reports whether the agent announced that it is stopping (DRAIN): new dials should
// prefer other backends.
func (b *Backend) Draining() bool { return b.draining.Load() }

// Open is the number of open connections.
func (b *Backend) Open() int { return b.mux.Len() }

// Serve reads the stream until it ends, then closes every connection on it.
func (b *Backend) Serve() error {
	err := b.serve()
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: agent stream closed", b.what)
	} else {
		err = fmt.Errorf("%s: agent stream: %w", b.what, err)
	}
	b.mux.Shutdown(err)
	b.mu.Lock()
	for r, pd := range b.pending {
		pd.result <- dialResult{err: err.Error()}
		delete(b.pending, r)
	}
	b.mu.Unlock()
	b.err = err
	close(b.done)
	return err
}

// Done is closed when Serve has returned.
func (b *Backend) Done() <-chan struct{} { return b.done }

func (b *Backend) serve() error {
	for {
		p, err := b.stream.Recv()
		if err != nil {
			return err
		}
		switch p.Type {
		case konnectivity.PacketType_DIAL_RSP:
			r := p.GetDialResponse()
			if r == nil {
				continue
			}
			// The connection is registered before the next packet is read (its DATA may
			// follow at once), and answered under the lock (the channel has room), so that a
			// dialer giving up sees either its answer or its pending entry.
			b.mu.Lock()
			pd, ok := b.pending[r.Random]
			delete(b.pending, r.Random)
			orphan := !ok && r.Error == "" && r.ConnectID != 0 // the dialer gave up (DIAL_CLS raced the answer)
			if ok {
				res := dialResult{err: r.Error}
				if r.Error == "" {
					c, err := b.mux.Open(r.ConnectID, fmt.Sprintf("%s: connection to %s", b.what, pd.address), addr("tunnel"), addr(pd.address))
					res.conn = c
					if err != nil {
						res.err, orphan = err.Error(), true
					}
				}
				pd.result <- res
			}
			b.mu.Unlock()
			if orphan { // close what the agent opened
				_ = b.mux.Send(b.mux.closePacket(r.ConnectID, ""))
			}
		case konnectivity.PacketType_DATA:
			if d := p.GetData(); d != nil && !b.mux.Data(d) && d.Error == "" {
				_ = b.mux.Send(b.mux.closePacket(d.ConnectID, ""))
			}
		case konnectivity.PacketType_CLOSE_RSP:
			if r := p.GetCloseResponse(); r != nil {
				b.mux.RemoteClosed(r.ConnectID, r.Error)
			}
		case konnectivity.PacketType_DRAIN:
			b.draining.Store(true)
		}
	}
}

// Dial asks the agent to dial address (host:port) and returns the connection. The agent
// answers within its own dial timeout; ctx bounds the wait here.
func (b *Backend) Dial(ctx context.Context, address string) (*Conn, error) {
	random := rand.Int64()
	ch := make(chan dialResult, 1)
	b.mu.Lock()
	for _, dup := b.pending[random]; dup || random == 0; _, dup = b.pending[random] {
		random = rand.Int64()
	}
	b.pending[random] = pendingDial{address: address, result: ch}
	b.mu.Unlock()
	forget := func() {
		b.mu.Lock()
		delete(b.pending, random)
		b.mu.Unlock()
	}
	err := b.mux.Send(&konnectivity.Packet{Type: konnectivity.PacketType_DIAL_REQ,
		Payload: &konnectivity.Packet_DialRequest{DialRequest: &konnectivity.DialRequest{Protocol: "tcp", Address: address, Random: random}}})
	if err != nil {
		forget()
		return nil, fmt.Errorf("%s: sending the dial request for %s: %w", b.what, address, err)
	}
	var res dialResult
	select {
	case res = <-ch:
	case <-b.done:
		forget()
		return nil, fmt.Errorf("dialing %s: %w", address, b.err)
	case <-ctx.Done():
		forget()
		_ = b.mux.Send(&konnectivity.Packet{Type: konnectivity.PacketType_DIAL_CLS,
			Payload: &konnectivity.Packet_CloseDial{CloseDial: &konnectivity.CloseDial{Random: random}}})
		// An answer that arrived meanwhile still holds an open connection.
		select {
		case res = <-ch:
			if res.conn != nil {
				_ = res.conn.Close()
			}
		default:
		}
		return nil, fmt.Errorf("%s: dialing %s: %w", b.what, address, context.Cause(ctx))
	}
	if res.err != "" {
		return nil, &DialError{What: b.what, Address: address, Reason: res.err}
	}
	return res.conn, nil
}

// DialError is a dial the agent refused or failed (DIAL_RSP with an error).
type DialError struct{ What, Address, Reason string }

func (e *DialError) Error() string {
	return fmt.Sprintf("%s: dialing %s: %s", e.What, e.Address, e.Reason)
}

// addr is a net.Addr for tunnelled connections.
type addr string

func (a addr) Network() string { return "konnectivity" }
func (a addr) String() string  { return string(a) }

var _ net.Addr = addr("")
