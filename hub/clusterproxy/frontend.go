package clusterproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"

	"github.com/flotilla-dev/flotilla/core/tunnel"
)

// frontendService is ProxyService for konnectivity clients (konnectivity-client's
// CreateSingleUseGrpcTunnelWithContext): DIAL_REQ "host:port" reaches the cluster named by the
// host (or whose agent announced it).
type frontendService struct{ s *Server }

func (f frontendService) Proxy(stream konnectivity.ProxyService_ProxyServer) error {
	f.s.handlers.Add(1)
	defer f.s.handlers.Done()
	if p, ok := peer.FromContext(stream.Context()); ok {
		if _, agent := p.AuthInfo.(tunnel.AuthInfo); agent {
			return status.Error(codes.PermissionDenied, "cluster-proxy agents may not dial through the hub")
		}
	}
	fs := &frontendStream{s: f.s, stream: stream, conns: map[int64]net.Conn{}, pending: map[int64]context.CancelFunc{}}
	err := fs.serve()
	fs.shutdown()
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// frontendStream is one client's stream: its connections are numbered by the stream.
type frontendStream struct {
	s      *Server
	stream konnectivity.ProxyService_ProxyServer
	sendMu sync.Mutex

	mu      sync.Mutex
	next    int64
	conns   map[int64]net.Conn
	pending map[int64]context.CancelFunc
	closed  bool
}

func (f *frontendStream) send(p *konnectivity.Packet) error {
	f.sendMu.Lock()
	defer f.sendMu.Unlock()
	return f.stream.Send(p)
}

func (f *frontendStream) serve() error {
	for {
		p, err := f.stream.Recv()
		if err != nil {
			return err
		}
		switch p.Type {
		case konnectivity.PacketType_DIAL_REQ:
			if r := p.GetDialRequest(); r != nil {
				f.dial(r)
			}
		case konnectivity.PacketType_DIAL_CLS:
			if r := p.GetCloseDial(); r != nil {
				f.mu.Lock()
				if cancel := f.pending[r.Random]; cancel != nil {
					cancel()
				}
				f.mu.Unlock()
			}
		case konnectivity.PacketType_DATA:
			if d := p.GetData(); d != nil {
				if c := f.conn(d.ConnectID); c != nil {
					if _, err := c.Write(d.Data); err != nil {
						f.closeConn(d.ConnectID, err.Error(), false)
					}
				}
			}
		case konnectivity.PacketType_CLOSE_REQ:
			if r := p.GetCloseRequest(); r != nil {
				f.closeConn(r.ConnectID, "", true)
			}
		}
	}
}

func (f *frontendStream) conn(id int64) net.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns[id]
}

// closeConn closes connection id and sends CLOSE_RSP: always when the client asked
// (CLOSE_REQ), else only if the connection was still open.
func (f *frontendStream) closeConn(id int64, errMsg string, asked bool) {
	f.mu.Lock()
	c := f.conns[id]
	delete(f.conns, id)
	f.mu.Unlock()
	if c != nil {
		_ = c.Close()
	} else if !asked {
		return
	}
	_ = f.send(&konnectivity.Packet{Type: konnectivity.PacketType_CLOSE_RSP,
		Payload: &konnectivity.Packet_CloseResponse{CloseResponse: &konnectivity.CloseResponse{ConnectID: id, Error: errMsg}}})
}

func (f *frontendStream) dialResponse(random, id int64, errMsg string) {
	_ = f.send(&konnectivity.Packet{Type: konnectivity.PacketType_DIAL_RSP,
		Payload: &konnectivity.Packet_DialResponse{DialResponse: &konnectivity.DialResponse{Random: random, ConnectID: id, Error: errMsg}}})
}

func (f *frontendStream) dial(r *konnectivity.DialRequest) {
	ctx, cancel := context.WithCancel(f.stream.Context())
	f.mu.Lock()
	f.pending[r.Random] = cancel
	f.mu.Unlock()
	go func() {
		defer func() {
			f.mu.Lock()
			delete(f.pending, r.Random)
			f.mu.Unlock()
			cancel()
		}()
		host, _, err := net.SplitHostPort(r.Address)
		if err != nil {
			f.dialResponse(r.Random, 0, "address "+r.Address+": "+err.Error())
			return
		}
		cluster, err := f.s.clusterForHost(ctx, host)
		if err != nil {
			f.s.metrics.dials.WithLabelValues(DialNoTunnel).Inc()
			f.dialResponse(r.Random, 0, err.Error())
			return
		}
		c, err := f.s.DialCluster(ctx, cluster, r.Address)
		if err != nil {
			f.dialResponse(r.Random, 0, err.Error())
			return
		}
		f.mu.Lock()
		if f.closed || ctx.Err() != nil {
			f.mu.Unlock()
			_ = c.Close()
			return
		}
		f.next++
		id := f.next
		f.conns[id] = c
		f.mu.Unlock()
		f.dialResponse(r.Random, id, "")
		f.pump(id, c)
	}()
}

// pump sends what the cluster sends on c to the client, then CLOSE_RSP.
func (f *frontendStream) pump(id int64, c net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if f.send(&konnectivity.Packet{Type: konnectivity.PacketType_DATA,
				Payload: &konnectivity.Packet_Data{Data: &konnectivity.Data{ConnectID: id, Data: buf[:n]}}}) != nil {
				_ = c.Close()
				return
			}
		}
		if err != nil {
			msg := ""
			if !errors.Is(err, io.EOF) {
				msg = err.Error()
			}
			f.closeConn(id, msg, false) // a no-op if the client closed it
			return
		}
	}
}

// shutdown closes every connection of the stream once it ended.
func (f *frontendStream) shutdown() {
	f.mu.Lock()
	f.closed = true
	conns := f.conns
	f.conns = map[int64]net.Conn{}
	for _, cancel := range f.pending {
		cancel()
	}
	f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
