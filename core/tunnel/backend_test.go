package tunnel

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// fakeStream is a PacketStream fed by the test.
type fakeStream struct {
	ctx  context.Context
	recv chan *konnectivity.Packet
	mu   sync.Mutex
	sent []*konnectivity.Packet
	on   func(*konnectivity.Packet)
}

func (f *fakeStream) Context() context.Context { return f.ctx }

func (f *fakeStream) Send(p *konnectivity.Packet) error {
	f.mu.Lock()
	f.sent = append(f.sent, p)
	on := f.on
	f.mu.Unlock()
	if on != nil {
		on(p)
	}
	return nil
}

func (f *fakeStream) Recv() (*konnectivity.Packet, error) {
	select {
	case p := <-f.recv:
		return p, nil
	case <-f.ctx.Done():
		return nil, io.EOF
	}
}

// The agent's first DATA may follow its DIAL_RSP at once: it belongs to the new connection,
// however late the dialer wakes up.
func TestBackendDataRightAfterDialResponse(t *testing.T) {
	for i := range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s := &fakeStream{ctx: ctx, recv: make(chan *konnectivity.Packet, 4)}
		s.on = func(p *konnectivity.Packet) {
			if r := p.GetDialRequest(); r != nil {
				id := int64(100 + i)
				s.recv <- &konnectivity.Packet{Type: konnectivity.PacketType_DIAL_RSP,
					Payload: &konnectivity.Packet_DialResponse{DialResponse: &konnectivity.DialResponse{Random: r.Random, ConnectID: id}}}
				s.recv <- &konnectivity.Packet{Type: konnectivity.PacketType_DATA,
					Payload: &konnectivity.Packet_Data{Data: &konnectivity.Data{ConnectID: id, Data: []byte("banner")}}}
			}
		}
		b := NewBackend(s, "cluster c1", MuxOptions{})
		go func() { _ = b.Serve() }()
		c, err := b.Dial(ctx, "c1:443")
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 6)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "banner" {
			t.Fatalf("dial %d: read %q, %v; want the DATA sent right after the DIAL_RSP", i, buf, err)
		}
		cancel()
		<-b.Done()
		if _, err := c.Read(buf); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("dial %d: read after the stream ended: %v, want the stream's error", i, err)
		}
	}
}
