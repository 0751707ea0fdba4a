package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
)

// Backoff paces reconnects (core/backoff.Backoff is one).
type Backoff interface {
	Next() time.Duration
	Reset()
}

// Keepalive is the interval of gRPC keepalive pings on agent streams: it keeps idle streams
// alive through proxies and load balancers that cut idle connections, and notices dead ones.
const Keepalive = 20 * time.Second

// Agent is the managed cluster's end of the protocol: it keeps AgentService/Connect streams
// open to the servers (one to each of serverCount distinct servers) and dials what they ask
// for, if Allow lets it.
type Agent struct {
	// Name names the agent in logs and errors sent to servers, e.g. "cluster cluster1".
	Name string
	// ID is the agentID sent to servers (default: a random UUID).
	ID string
	// Identifiers are sent as agentIdentifiers.
	Identifiers url.Values
	// Transport opens the connection one stream runs on (e.g. DialUpgrade to the hub's tunnel
	// API); ctx bounds the dial. Required.
	Transport func(ctx context.Context) (net.Conn, error)
	// Allow returns the address to dial for a requested one, or an error saying why it is
	// not served (sent back in DIAL_RSP). Required: the agent dials nothing else.
	Allow func(ctx context.Context, address string) (string, error)
	// Dial dials allowed targets (default net.Dialer), each within DialTimeout (default 5s).
	Dial        func(ctx context.Context, network, address string) (net.Conn, error)
	DialTimeout time.Duration
	// MaxConns caps the open connections of one stream (default 512).
	MaxConns int
	Limits   Limits
	// Backoff paces reconnects after failures. Required.
	Backoff Backoff
	// ResetAfter: a stream that stayed up this long resets Backoff when it ends (default 60s).
	ResetAfter time.Duration
	// DrainTimeout: when Run's context ends, the agent sends DRAIN and lets open connections
	// finish for at most this long before it closes the streams (default 5s).
	DrainTimeout time.Duration
	// Streams, if set, is told the number of connected streams whenever it changes.
	Streams func(n int)
	// Dials, if set, counts dial results: ok, refused (by Allow or MaxConns), error.
	Dials func(result string)
	// Bytes, if set, counts the payload bytes received from (in) and sent to (out) servers.
	Bytes  func(in bool, n int)
	Logger logr.Logger

	nextID atomic.Int64
}

func (a *Agent) defaults() error {
	if a.Transport == nil || a.Allow == nil || a.Backoff == nil {
		return errors.New("tunnel agent: Transport, Allow and Backoff are required")
	}
	if a.ID == "" {
		a.ID = uuid.NewString()
	}
	if a.Dial == nil {
		a.Dial = (&net.Dialer{}).DialContext
	}
	if a.DialTimeout <= 0 {
		a.DialTimeout = 5 * time.Second
	}
	if a.MaxConns <= 0 {
		a.MaxConns = 512
	}
	if a.ResetAfter <= 0 {
		a.ResetAfter = time.Minute
	}
	if a.DrainTimeout <= 0 {
		a.DrainTimeout = 5 * time.Second
	}
	a.Limits = a.Limits.withDefaults()
	return nil
}

// Run keeps the streams open until ctx ends, then drains them and returns nil.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.defaults(); err != nil {
		return err
	}
	log := a.Logger
	streams := map[string]*agentStream{}
	ended := make(chan *agentStream)
	want := 1
	report := func() {
		if a.Streams != nil {
			a.Streams(len(streams))
		}
	}
	defer func() {
		a.drain(streams, ended)
		clear(streams)
		report()
	}()
	for {
		if len(streams) < want {
			s, err := a.connect(ctx)
			switch {
			case ctx.Err() != nil:
				if s != nil {
					s.close()
				}
				return nil
			case err != nil:
				d := a.Backoff.Next()
				log.Info("Could not connect to the tunnel server; retrying", "error", err.Error(), "after", d.Round(time.Millisecond))
				if !a.wait(ctx, d, streams, ended, report) {
					return nil
				}
				continue
			}
			if _, dup := streams[s.serverID]; dup {
				// Behind a load balancer: this server already has a stream; look for another.
				s.close()
				d := a.Backoff.Next()
				log.V(1).Info("Reached a tunnel server already connected; retrying for another", "serverID", s.serverID, "after", d.Round(time.Millisecond))
				if !a.wait(ctx, d, streams, ended, report) {
					return nil
				}
				continue
			}
			streams[s.serverID] = s
			want = max(1, s.serverCount)
			log.Info("Tunnel stream connected", "serverID", s.serverID, "serverCount", s.serverCount, "streams", len(streams))
			report()
			go func() {
				err := s.serve()
				log.Info("Tunnel stream ended", "serverID", s.serverID, "error", err.Error())
				ended <- s
			}()
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case s := <-ended:
			a.ended(s, streams, report)
			if !a.wait(ctx, a.Backoff.Next(), streams, ended, report) {
				return nil
			}
		}
	}
}

// wait sleeps d while collecting ended streams; false when ctx ended.
func (a *Agent) wait(ctx context.Context, d time.Duration, streams map[string]*agentStream, ended chan *agentStream, report func()) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case s := <-ended:
			a.ended(s, streams, report)
		case <-t.C:
			return true
		}
	}
}

func (a *Agent) ended(s *agentStream, streams map[string]*agentStream, report func()) {
	if streams[s.serverID] == s {
		delete(streams, s.serverID)
	}
	s.close()
	if time.Since(s.started) >= a.ResetAfter {
		a.Backoff.Reset()
	}
	report()
}

// drain sends DRAIN on every stream, waits up to DrainTimeout for their connections to
// finish, and closes them.
func (a *Agent) drain(streams map[string]*agentStream, ended chan *agentStream) {
	if len(streams) == 0 {
		return
	}
	deadline := time.Now().Add(a.DrainTimeout)
	for _, s := range streams {
		_ = s.mux.Send(&konnectivity.Packet{Type: konnectivity.PacketType_DRAIN, Payload: &konnectivity.Packet_Drain{Drain: &konnectivity.Drain{}}})
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		open := 0
		for _, s := range streams {
			open += s.mux.Len()
		}
		if open == 0 {
			break
		}
		select {
		case s := <-ended:
			delete(streams, s.serverID)
		case <-tick.C:
		}
	}
	for _, s := range streams {
		s.close()
	}
	// Let the serving goroutines finish.
	for range streams {
		<-ended
	}
}

// agentStream is one AgentService/Connect stream.
type agentStream struct {
	a           *Agent
	cc          *grpc.ClientConn
	stream      AgentConnectClient
	cancel      context.CancelFunc
	mux         *Mux
	serverID    string
	serverCount int
	started     time.Time

	mu      sync.Mutex
	pending map[int64]context.CancelFunc // dials in progress by random
}

// connect opens a stream and reads the server's header. The stream outlives ctx (it is
// drained and closed by Run).
func (a *Agent) connect(ctx context.Context) (*agentStream, error) {
	cc, err := grpc.NewClient("passthrough:///konnectivity",
		grpc.WithTransportCredentials(insecure.NewCredentials()), // inside the authenticated Transport
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return a.Transport(ctx) }),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: Keepalive, Timeout: Keepalive, PermitWithoutStream: true}))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel) // until the header is read, ctx ends the attempt
	md := metadata.Pairs(MetadataAgentID, a.ID, MetadataAgentIdentifiers, a.Identifiers.Encode())
	s := &agentStream{a: a, cc: cc, cancel: cancel, started: time.Now(), pending: map[int64]context.CancelFunc{}}
	fail := func(err error) (*agentStream, error) {
		stop()
		s.close()
		return nil, err
	}
	timeout := time.AfterFunc(30*time.Second, cancel)
	defer timeout.Stop()
	if s.stream, err = Connect(metadata.NewOutgoingContext(sctx, md), cc); err != nil {
		return fail(err)
	}
	hdr, err := s.stream.Header()
	if err != nil {
		return fail(err)
	}
	if !timeout.Stop() || !stop() {
		return fail(errors.New("timed out or stopped before the server answered"))
	}
	if v := hdr.Get(MetadataServerID); len(v) > 0 && v[0] != "" {
		s.serverID = v[0]
	} else {
		// A refusal comes as a trailers-only response: no header; Recv has the status.
		if _, err := s.stream.Recv(); err != nil {
			return fail(err)
		}
		return fail(errors.New("the server sent no serverID"))
	}
	if v := hdr.Get(MetadataServerCount); len(v) > 0 {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 {
			return fail(fmt.Errorf("server sent serverCount %q: want a positive number", v[0]))
		}
		s.serverCount = n
	}
	s.mux = NewMux(s.stream.Send, MuxOptions{Side: Acceptor, Limits: a.Limits, Bytes: a.Bytes,
		Cut: func(c *Conn, err error) { a.Logger.Info("Cut a tunnelled connection", "error", err.Error()) }})
	return s, nil
}

func (s *agentStream) close() {
	s.cancel()
	_ = s.cc.Close()
}

// serve handles the server's packets until the stream ends.
func (s *agentStream) serve() error {
	defer func() {
		s.mux.Shutdown(errors.New("tunnel stream ended"))
		s.mu.Lock()
		for _, cancel := range s.pending {
			cancel()
		}
		s.mu.Unlock()
	}()
	for {
		p, err := s.stream.Recv()
		if err != nil {
			return err
		}
		switch p.Type {
		case konnectivity.PacketType_DIAL_REQ:
			if r := p.GetDialRequest(); r != nil {
				s.dial(r)
			}
		case konnectivity.PacketType_DIAL_CLS:
			if r := p.GetCloseDial(); r != nil {
				s.mu.Lock()
				if cancel := s.pending[r.Random]; cancel != nil {
					cancel()
				}
				s.mu.Unlock()
			}
		case konnectivity.PacketType_DATA:
			if d := p.GetData(); d != nil && !s.mux.Data(d) {
				_ = s.mux.Send(s.mux.closePacket(d.ConnectID, "unknown connection"))
			}
		case konnectivity.PacketType_CLOSE_REQ:
			if r := p.GetCloseRequest(); r != nil && !s.mux.RemoteClosed(r.ConnectID, "") {
				_ = s.mux.Send(s.mux.closePacket(r.ConnectID, ""))
			}
		}
	}
}

func (s *agentStream) dialResponse(random, id int64, errMsg string) error {
	return s.mux.Send(&konnectivity.Packet{Type: konnectivity.PacketType_DIAL_RSP,
		Payload: &konnectivity.Packet_DialResponse{DialResponse: &konnectivity.DialResponse{Random: random, ConnectID: id, Error: errMsg}}})
}

func (s *agentStream) count(result string) {
	if s.a.Dials != nil {
		s.a.Dials(result)
	}
}

// dial handles a DIAL_REQ: refused unless Allow maps the address; otherwise dialed in the
// background and spliced.
func (s *agentStream) dial(r *konnectivity.DialRequest) {
	a := s.a
	if r.Protocol != "" && r.Protocol != "tcp" {
		s.count("refused")
		_ = s.dialResponse(r.Random, 0, fmt.Sprintf("%s: protocol %q is not supported (tcp only)", a.Name, r.Protocol))
		return
	}
	if n := s.mux.Len(); n >= a.MaxConns {
		s.count("refused")
		_ = s.dialResponse(r.Random, 0, fmt.Sprintf("%s: too many open connections (%d)", a.Name, n))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.DialTimeout)
	s.mu.Lock()
	s.pending[r.Random] = cancel
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.pending, r.Random)
			s.mu.Unlock()
			cancel()
		}()
		target, err := a.Allow(ctx, r.Address)
		if err != nil {
			s.count("refused")
			a.Logger.V(1).Info("Refused a tunnel dial", "address", r.Address, "reason", err.Error())
			_ = s.dialResponse(r.Random, 0, err.Error())
			return
		}
		tc, err := a.Dial(ctx, "tcp", target)
		if err != nil {
			s.count("error")
			_ = s.dialResponse(r.Random, 0, fmt.Sprintf("%s: dialing %s (for %s): %v", a.Name, target, r.Address, err))
			return
		}
		if ctx.Err() != nil { // DIAL_CLS: the server gave up
			_ = tc.Close()
			return
		}
		id := a.nextID.Add(1)
		c, err := s.mux.Open(id, fmt.Sprintf("%s: connection to %s", a.Name, r.Address), addr(r.Address), tc.RemoteAddr())
		if err != nil {
			_ = tc.Close()
			return
		}
		if err := s.dialResponse(r.Random, id, ""); err != nil {
			_ = tc.Close()
			_ = c.Close()
			return
		}
		s.count("ok")
		go splice(c, tc)
	}()
}

// splice copies between the tunnelled connection and the target until either ends.
func splice(c *Conn, tc net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(tc, c) // ends when the server closes (CLOSE_REQ) or the connection is cut
		_ = tc.Close()
	}()
	_, _ = io.Copy(c, tc) // ends when the target closes
	_ = c.Close()         // CLOSE_RSP
	_ = tc.Close()
	<-done
}
