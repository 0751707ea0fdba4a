// Package clusterproxy is the hub's end of OCM's cluster-proxy add-on: agents on managed
// clusters hold konnectivity AgentService streams open to the hub (through the hub API
// server's aggregated tunnel API, tunnelapi.go), and the hub dials TCP connections into the
// clusters through them (Dialer), for itself (the cluster gateway) and for konnectivity
// clients of its ProxyService.
package clusterproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	konnectivity "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"

	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/tunnel"
)

// Dialer dials TCP connections into managed clusters through their cluster-proxy tunnels.
type Dialer interface {
	// DialCluster dials address (host:port, e.g. <cluster>:443 for its API server) through
	// cluster's tunnel.
	DialCluster(ctx context.Context, cluster, address string) (net.Conn, error)
	// Connected reports whether cluster has a tunnel, and since when (or, when not, when it
	// last had one; zero if never).
	Connected(cluster string) (bool, time.Time)
}

// Options configure a Server.
type Options struct {
	// ServerID and ServerCount are sent to agents (serverID, serverCount): the agents keep a
	// stream to each of ServerCount distinct servers (hub replicas). Defaults: a random UUID, 1.
	ServerID    string
	ServerCount int
	// Limits bound each tunnelled connection (tunnel.DefaultLimits).
	Limits tunnel.Limits
	// DialTimeout bounds a dial when the caller's context has no earlier deadline (default 10s).
	DialTimeout time.Duration
	// MaxStreamsPerCluster caps the agent streams one cluster may hold on this server
	// (default 4: an agent keeps one per server, more only while it replaces them).
	MaxStreamsPerCluster int
	// ServiceHost, if set, names the cluster exposing a Service at a host that no connected
	// cluster is named and no agent announced (a ManagedProxyServiceResolver's
	// cluster-proxy-<hash>, for ProxyService clients).
	ServiceHost func(ctx context.Context, host string) (cluster string, ok bool, err error)
	Logger      logr.Logger
}

// Server holds the agents' streams. It serves AgentService on its Listener (fed by the tunnel
// API) and ProxyService on frontend listeners (ServeFrontend), and is the hub's Dialer.
type Server struct {
	opts     Options
	listener *tunnel.Listener
	agents   *grpc.Server
	metrics  *metrics
	log      logr.Logger
	// handlers are the running stream handlers: Start and ServeFrontend return after theirs.
	handlers sync.WaitGroup

	mu       sync.Mutex
	clusters map[string]*clusterTunnels
}

// clusterTunnels are one cluster's agent streams, in the order they connected.
type clusterTunnels struct {
	backends []*backend
	reserved int       // streams added but not active yet
	since    time.Time // when the first of the current streams connected
	lastSeen time.Time // when the last stream ended
}

type backend struct {
	*tunnel.Backend
	cluster, agentID, user string
	hosts                  []string
	active                 bool // guarded by Server.mu
}

var _ Dialer = (*Server)(nil)

// NewServer returns a Server; Start runs it.
func NewServer(opts Options) (*Server, error) {
	if opts.ServerID == "" {
		opts.ServerID = uuid.NewString()
	}
	if opts.ServerCount < 1 {
		opts.ServerCount = 1
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.MaxStreamsPerCluster <= 0 {
		opts.MaxStreamsPerCluster = 4
	}
	m, err := registerMetrics()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, listener: tunnel.NewListener(), metrics: m, log: opts.Logger, clusters: map[string]*clusterTunnels{}}
	s.agents = grpc.NewServer(append(keepaliveOptions(), grpc.Creds(s.listener.Credentials()))...)
	tunnel.RegisterAgentService(s.agents, agentService{s})
	return s, nil
}

// keepaliveOptions accept the agents' pings (tunnel.Keepalive) and ping idle agents.
func keepaliveOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: tunnel.Keepalive / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: tunnel.Keepalive, Timeout: tunnel.Keepalive}),
		// A connection that does not start HTTP/2 soon is dropped (the default waits 120s).
		grpc.ConnectionTimeout(10 * time.Second),
	}
}

// Listener takes the agents' connections (from the tunnel API's upgrades).
func (s *Server) Listener() *tunnel.Listener { return s.listener }

// Start serves agents until ctx ends (a controller-runtime Runnable).
func (s *Server) Start(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		s.agents.Stop()
		_ = s.listener.Close()
	})
	defer stop()
	err := s.agents.Serve(s.listener)
	s.agents.Stop()
	s.handlers.Wait()
	if ctx.Err() != nil || errors.Is(err, grpc.ErrServerStopped) || errors.Is(err, tunnel.ErrListenerClosed) {
		return nil
	}
	return err
}

// ServeFrontend serves ProxyService (konnectivity clients) on l with creds until ctx ends.
// Who reaches l may dial into every connected cluster: creds must authenticate clients
// (mutual TLS with the proxy-client certificate, as OCM's proxy server).
func (s *Server) ServeFrontend(ctx context.Context, l net.Listener, creds grpc.ServerOption) error {
	srv := grpc.NewServer(append(keepaliveOptions(), creds)...)
	konnectivity.RegisterProxyServiceServer(srv, frontendService{s})
	stop := context.AfterFunc(ctx, srv.Stop)
	defer stop()
	err := srv.Serve(l)
	srv.Stop()
	s.handlers.Wait()
	if ctx.Err() != nil || errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

type agentService struct{ s *Server }

// Connect serves one agent's stream. The cluster is the one the connection was authenticated
// as (tunnel.AuthInfo), never what the agent's metadata says.
func (a agentService) Connect(stream tunnel.AgentConnectServer) error {
	s := a.s
	s.handlers.Add(1)
	defer s.handlers.Done()
	p, _ := peer.FromContext(stream.Context())
	var info tunnel.AuthInfo
	if p != nil {
		info, _ = p.AuthInfo.(tunnel.AuthInfo)
	}
	if info.Cluster == "" {
		return status.Error(codes.Unauthenticated, "cluster-proxy agent stream without an authenticated cluster")
	}
	md, _ := metadata.FromIncomingContext(stream.Context())
	agentID := first(md.Get(tunnel.MetadataAgentID))
	ids, err := url.ParseQuery(first(md.Get(tunnel.MetadataAgentIdentifiers)))
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "cluster %s: agentIdentifiers: %v", info.Cluster, err)
	}
	// Routing is by identity; the announced hosts only serve ProxyService clients, and must
	// be the cluster's own.
	hosts := ids["host"]
	for _, h := range hosts {
		if !clusterproxy.IsKubeAPIHost(info.Cluster, h) && h != clusterproxy.ServiceProxyHost(info.Cluster) {
			s.log.Info("Refused a cluster-proxy agent announcing another cluster's host", "cluster", info.Cluster, "user", info.User, "host", h)
			return status.Errorf(codes.PermissionDenied, "cluster-proxy agent of cluster %s (user %s) announced host %q, which is not a host of cluster %s", info.Cluster, info.User, h, info.Cluster)
		}
	}
	cluster := info.Cluster
	b := &backend{cluster: cluster, agentID: agentID, user: info.User, hosts: hosts}
	if n, ok := s.add(b); !ok {
		s.log.Info("Refused a cluster-proxy agent stream over the cluster's limit", "cluster", cluster, "user", info.User, "streams", n)
		return status.Errorf(codes.ResourceExhausted, "cluster %s already has %d cluster-proxy agent streams on this server (the limit)", cluster, n)
	}
	defer s.remove(b)
	if err := stream.SendHeader(metadata.Pairs(tunnel.MetadataServerID, s.opts.ServerID, tunnel.MetadataServerCount, strconv.Itoa(s.opts.ServerCount))); err != nil {
		return err
	}
	b.Backend = tunnel.NewBackend(stream, "cluster "+cluster, tunnel.MuxOptions{Limits: s.opts.Limits,
		Bytes: func(in bool, n int) {
			dir := "to_cluster"
			if in {
				dir = "from_cluster"
			}
			s.metrics.bytes.WithLabelValues(cluster, dir).Add(float64(n))
		},
		Cut: func(c *tunnel.Conn, err error) {
			s.log.Info("Cut a tunnelled connection", "cluster", cluster, "error", err.Error())
		},
	})
	s.activate(b)
	s.log.Info("Cluster-proxy agent connected", "cluster", cluster, "user", info.User, "agentID", agentID, "hosts", hosts)
	err = b.Serve()
	s.log.Info("Cluster-proxy agent stream ended", "cluster", cluster, "agentID", agentID, "reason", err.Error())
	return nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// add reserves a place for b among its cluster's streams, unless the cluster has
// MaxStreamsPerCluster already (then it returns their number and false).
func (s *Server) add(b *backend) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct := s.clusters[b.cluster]
	if ct == nil {
		ct = &clusterTunnels{}
		s.clusters[b.cluster] = ct
	}
	if n := len(ct.backends) + ct.reserved; n >= s.opts.MaxStreamsPerCluster {
		return n, false
	}
	ct.reserved++
	return 0, true
}

// activate makes b, added before, a stream dials may use.
func (s *Server) activate(b *backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct := s.clusters[b.cluster]
	ct.reserved--
	if len(ct.backends) == 0 {
		ct.since = time.Now()
	}
	ct.backends = append(ct.backends, b)
	b.active = true
	s.metrics.streams.WithLabelValues(b.cluster).Set(float64(len(ct.backends)))
	s.metrics.connects.WithLabelValues(b.cluster).Inc()
}

// remove undoes add (and activate).
func (s *Server) remove(b *backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct := s.clusters[b.cluster]
	if !b.active {
		ct.reserved--
		return
	}
	ct.backends = slices.DeleteFunc(ct.backends, func(x *backend) bool { return x == b })
	if len(ct.backends) == 0 {
		ct.lastSeen = time.Now()
	}
	s.metrics.streams.WithLabelValues(b.cluster).Set(float64(len(ct.backends)))
}

// Connected reports whether cluster has an agent stream, and since when (or when it last had one).
func (s *Server) Connected(cluster string) (bool, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct := s.clusters[cluster]
	switch {
	case ct == nil:
		return false, time.Time{}
	case len(ct.backends) > 0:
		return true, ct.since
	default:
		return false, ct.lastSeen
	}
}

// pick is the stream of cluster new dials go to: the first that is not draining (else the first).
func (s *Server) pick(cluster string) (*backend, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ct := s.clusters[cluster]
	if ct == nil {
		return nil, time.Time{}
	}
	if len(ct.backends) == 0 {
		return nil, ct.lastSeen
	}
	for _, b := range ct.backends {
		if !b.Draining() {
			return b, ct.since
		}
	}
	return ct.backends[0], ct.since
}

// NotConnectedError is a dial to a cluster without a tunnel.
type NotConnectedError struct {
	Cluster  string
	LastSeen time.Time
}

func (e *NotConnectedError) Error() string {
	if e.LastSeen.IsZero() {
		return fmt.Sprintf("cluster %s: cluster-proxy tunnel not connected (never connected to this hub server)", e.Cluster)
	}
	return fmt.Sprintf("cluster %s: cluster-proxy tunnel not connected (last seen %s)", e.Cluster, e.LastSeen.UTC().Format(time.RFC3339))
}

// DialCluster dials address through cluster's tunnel. The agent refuses addresses it does
// not serve (a *tunnel.DialError naming the address and the cluster).
func (s *Server) DialCluster(ctx context.Context, cluster, address string) (net.Conn, error) {
	b, lastSeen := s.pick(cluster)
	if b == nil {
		s.metrics.dials.WithLabelValues(DialNoTunnel).Inc()
		return nil, &NotConnectedError{Cluster: cluster, LastSeen: lastSeen}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.DialTimeout, fmt.Errorf("no answer from the agent within %s", s.opts.DialTimeout))
	defer cancel()
	c, err := b.Dial(ctx, address)
	var de *tunnel.DialError
	switch {
	case err == nil:
		s.metrics.dials.WithLabelValues(DialOK).Inc()
	case errors.As(err, &de):
		s.metrics.dials.WithLabelValues(DialRefused).Inc()
		return nil, err
	case ctx.Err() != nil:
		s.metrics.dials.WithLabelValues(DialTimeout).Inc()
		return nil, err
	default:
		s.metrics.dials.WithLabelValues(DialError).Inc()
		return nil, err
	}
	open := s.metrics.open.WithLabelValues(cluster)
	open.Inc()
	go func() {
		<-c.Done()
		open.Dec()
	}()
	return c, nil
}

// clusterForHost is the cluster a ProxyService client means by host: the cluster of that
// name if connected, else the one whose agent announced host, else the one exposing a
// resolved Service there (Options.ServiceHost).
func (s *Server) clusterForHost(ctx context.Context, host string) (string, error) {
	cluster, err := s.announcedHost(host)
	if err == nil || s.opts.ServiceHost == nil {
		return cluster, err
	}
	// Bounded: the lookup may wait for a cache to sync.
	ctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
	defer cancel()
	c, ok, lookupErr := s.opts.ServiceHost(ctx, host)
	switch {
	case lookupErr != nil:
		return "", fmt.Errorf("host %s: %w", host, lookupErr)
	case !ok:
		return "", fmt.Errorf("%w, and no ManagedProxyServiceResolver exposes a Service there", err)
	}
	return c, nil
}

func (s *Server) announcedHost(host string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ct := s.clusters[host]; ct != nil && len(ct.backends) > 0 {
		return host, nil
	}
	var found []string
	for name, ct := range s.clusters {
		for _, b := range ct.backends {
			if slices.Contains(b.hosts, host) {
				found = append(found, name)
				break
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no connected cluster-proxy agent serves host %s", host)
	default:
		slices.Sort(found)
		return "", fmt.Errorf("host %s is announced by the agents of several clusters (%v)", host, found)
	}
}
