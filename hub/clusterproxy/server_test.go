package clusterproxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	konnectivityclient "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"

	"github.com/flotilla-dev/flotilla/core/tunnel"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
)

// quickBackoff retries every few milliseconds.
type quickBackoff struct{}

func (quickBackoff) Next() time.Duration { return 20 * time.Millisecond }
func (quickBackoff) Reset()              {}

// startServer runs a Server until the test ends.
func startServer(t *testing.T, opts clusterproxy.Options) *clusterproxy.Server {
	t.Helper()
	opts.Logger = testr.New(t)
	srv, err := clusterproxy.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop within 10s")
		}
	})
	return srv
}

// transportTo is an agent Transport reaching srv over loopback TCP, authenticated as info.
func transportTo(srv *clusterproxy.Server, info tunnel.AuthInfo) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			if err == nil {
				accepted <- c
			}
			close(accepted)
		}()
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", l.Addr().String())
		if err != nil {
			return nil, err
		}
		sc := <-accepted
		if sc == nil {
			c.Close()
			return nil, errors.New("accept failed")
		}
		go func() { _ = srv.Listener().Offer(context.Background(), sc, nil, info) }()
		return c, nil
	}
}

// runAgent runs agent until the test ends (or stop is called) and returns a function that
// stops it and waits.
func runAgent(t *testing.T, a *tunnel.Agent) (stop func()) {
	t.Helper()
	if a.Backoff == nil {
		a.Backoff = quickBackoff{}
	}
	a.Logger = testr.New(t).WithName(a.Name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent %s: %v", a.Name, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("agent %s did not stop within 20s", a.Name)
		}
	}
	t.Cleanup(stop)
	return stop
}

// allowOnly serves address only, dialing target for it.
func allowOnly(cluster, address, target string) func(context.Context, string) (string, error) {
	return func(_ context.Context, a string) (string, error) {
		if a == address {
			return target, nil
		}
		return "", fmt.Errorf("address %s is not exposed by cluster %s", a, cluster)
	}
}

// eventually polls cond every 20ms until it holds or timeout passes, then fails naming what.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func connected(srv *clusterproxy.Server, cluster string) func() bool {
	return func() bool { ok, _ := srv.Connected(cluster); return ok }
}

// httpGet GETs path over conn (HTTP/1.1) and returns the body.
func httpGet(t *testing.T, conn net.Conn, path string) string {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		t.Fatalf("writing the request for %s: %v", path, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the response for %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body for %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	return string(body)
}

func namedServer(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+" "+r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

// The real konnectivity-client frontend dials through the ProxyService to an agent connected
// over a gRPC stream, and reaches a local HTTP server; the hub's own Dialer does too.
func TestKonnectivityClientThroughProxyService(t *testing.T) {
	target := namedServer(t, "managed")
	srv := startServer(t, clusterproxy.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = srv.ServeFrontend(ctx, l, grpc.Creds(insecure.NewCredentials())) }()

	runAgent(t, &tunnel.Agent{Name: "cluster kc1", Identifiers: url.Values{"host": {"kc1", "kc1.open-cluster-management-cluster-proxy"}},
		Transport: transportTo(srv, tunnel.AuthInfo{Cluster: "kc1", User: "agent-kc1"}),
		Allow:     allowOnly("kc1", "kc1.open-cluster-management-cluster-proxy:443", target.Listener.Addr().String())})
	eventually(t, 10*time.Second, "the agent of kc1 to connect", connected(srv, "kc1"))

	for i := range 3 { // single-use tunnels: one per connection
		tun, err := konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, l.Addr().String(),
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatalf("creating a konnectivity tunnel: %v", err)
		}
		conn, err := tun.DialContext(ctx, "tcp", "kc1.open-cluster-management-cluster-proxy:443")
		if err != nil {
			t.Fatalf("dialing through the konnectivity client: %v", err)
		}
		if got := httpGet(t, conn, fmt.Sprintf("/frontend/%d", i)); got != fmt.Sprintf("managed /frontend/%d", i) {
			t.Fatalf("through the konnectivity client: got %q", got)
		}
		if err := conn.Close(); err != nil {
			t.Fatalf("closing the konnectivity connection (the CLOSE_RSP must come back): %v", err)
		}
		select {
		case <-tun.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the konnectivity tunnel did not finish within 10s of closing its connection")
		}
	}

	tun, err := konnectivityclient.CreateSingleUseGrpcTunnelWithContext(ctx, ctx, l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tun.DialContext(ctx, "tcp", "kc1:8080"); err == nil || !strings.Contains(err.Error(), "address kc1:8080 is not exposed by cluster kc1") {
		t.Fatalf("a dial the agent does not serve: got %v, want its refusal", err)
	}

	conn, err := srv.DialCluster(ctx, "kc1", "kc1.open-cluster-management-cluster-proxy:443")
	if err != nil {
		t.Fatalf("DialCluster: %v", err)
	}
	defer conn.Close()
	if got := httpGet(t, conn, "/dialer"); got != "managed /dialer" {
		t.Fatalf("through the Dialer: got %q", got)
	}
}

// A dial the agent's allowlist refuses fails with the agent's reason, naming address and cluster.
func TestAllowlistRefusal(t *testing.T) {
	srv := startServer(t, clusterproxy.Options{})
	runAgent(t, &tunnel.Agent{Name: "cluster al1", Transport: transportTo(srv, tunnel.AuthInfo{Cluster: "al1", User: "agent-al1"}),
		Allow: allowOnly("al1", "al1:443", "127.0.0.1:1")})
	eventually(t, 10*time.Second, "the agent of al1 to connect", connected(srv, "al1"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := srv.DialCluster(ctx, "al1", "kubernetes.default.svc:443")
	var de *tunnel.DialError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "address kubernetes.default.svc:443 is not exposed by cluster al1") {
		t.Fatalf("got %v, want a DialError naming the address and the cluster", err)
	}
	_, err = srv.DialCluster(ctx, "nope", "nope:443")
	var nc *clusterproxy.NotConnectedError
	if !errors.As(err, &nc) || !strings.Contains(err.Error(), "cluster nope: cluster-proxy tunnel not connected") {
		t.Fatalf("dialing a cluster without a tunnel: got %v", err)
	}
}

// A connection whose reader stalls is cut; another connection on the same stream keeps flowing.
func TestStalledReaderIsCut(t *testing.T) {
	// firehose writes until the connection breaks; echo sends back each line.
	firehose, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer firehose.Close()
	go func() {
		for {
			c, err := firehose.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 16<<10)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()

	limits := tunnel.Limits{QueueBytes: 256 << 10, QueuePackets: 16, OverflowWait: 300 * time.Millisecond, StallTimeout: 5 * time.Second}
	srv := startServer(t, clusterproxy.Options{Limits: limits})
	targets := map[string]string{"sr1:1": firehose.Addr().String(), "sr1:2": echo.Addr().String()}
	runAgent(t, &tunnel.Agent{Name: "cluster sr1", Limits: limits, Transport: transportTo(srv, tunnel.AuthInfo{Cluster: "sr1", User: "agent-sr1"}),
		Allow: func(_ context.Context, a string) (string, error) {
			if t, ok := targets[a]; ok {
				return t, nil
			}
			return "", fmt.Errorf("address %s is not exposed by cluster sr1", a)
		}})
	eventually(t, 10*time.Second, "the agent of sr1 to connect", connected(srv, "sr1"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	stalled, err := srv.DialCluster(ctx, "sr1", "sr1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	flowing, err := srv.DialCluster(ctx, "sr1", "sr1:2")
	if err != nil {
		t.Fatal(err)
	}
	defer flowing.Close()
	r := bufio.NewReader(flowing)
	roundTrip := func(i int) {
		t.Helper()
		_ = flowing.SetDeadline(time.Now().Add(5 * time.Second))
		msg := fmt.Sprintf("line %d\n", i)
		if _, err := io.WriteString(flowing, msg); err != nil {
			t.Fatalf("writing round %d on the flowing connection: %v", i, err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != msg {
			t.Fatalf("round %d on the flowing connection while the other stalls: got %q, %v", i, got, err)
		}
	}
	// Nobody reads the firehose: its queue fills and it is cut, while the echo keeps answering.
	start := time.Now()
	for i := 0; time.Since(start) < 3*time.Second; i++ {
		roundTrip(i)
		time.Sleep(50 * time.Millisecond)
	}
	_ = stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	var readErr error
	for readErr == nil {
		_, readErr = stalled.Read(make([]byte, 64<<10))
	}
	if !errors.Is(readErr, tunnel.ErrStalled) || !strings.Contains(readErr.Error(), "cluster sr1: connection to sr1:1") {
		t.Fatalf("the stalled connection ended with %v, want a cut naming the cluster and address", readErr)
	}
	roundTrip(-1)
}

// An agent whose announced hosts belong to another cluster is refused; the cluster is taken
// from the authenticated identity only.
func TestIdentityMismatchRefused(t *testing.T) {
	target := namedServer(t, "idm1")
	srv := startServer(t, clusterproxy.Options{})
	var maxStreams, attempts atomic.Int64
	transport := transportTo(srv, tunnel.AuthInfo{Cluster: "idm1", User: "agent-idm1"})
	runAgent(t, &tunnel.Agent{Name: "cluster idm1", Identifiers: url.Values{"host": {"idm2"}},
		Transport: func(ctx context.Context) (net.Conn, error) { attempts.Add(1); return transport(ctx) },
		Allow:     allowOnly("idm1", "idm2:443", target.Listener.Addr().String()),
		Streams: func(n int) {
			if int64(n) > maxStreams.Load() {
				maxStreams.Store(int64(n))
			}
		}})
	// The agent keeps retrying: none of its attempts may be accepted.
	eventually(t, 10*time.Second, "the agent to try three times", func() bool { return attempts.Load() >= 3 })
	for _, c := range []string{"idm1", "idm2"} {
		if ok, _ := srv.Connected(c); ok {
			t.Fatalf("an agent of idm1 announcing host idm2 was accepted (as %s)", c)
		}
	}
	if n := maxStreams.Load(); n > 0 {
		t.Fatalf("the agent reported %d streams", n)
	}

	// The hub routes by identity: an agent of idm1 claiming nothing cannot serve idm2.
	runAgent(t, &tunnel.Agent{Name: "cluster idm1", Transport: transportTo(srv, tunnel.AuthInfo{Cluster: "idm1", User: "agent-idm1"}),
		Allow: allowOnly("idm1", "idm2:443", target.Listener.Addr().String())})
	eventually(t, 10*time.Second, "the agent of idm1 to connect", connected(srv, "idm1"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.DialCluster(ctx, "idm2", "idm2:443"); err == nil {
		t.Fatal("dialing idm2 reached the agent of idm1")
	}
}

// An agent that stops sends DRAIN: new dials go to the cluster's other stream while its open
// connections finish.
func TestDrain(t *testing.T) {
	first, second := namedServer(t, "first"), namedServer(t, "second")
	srv := startServer(t, clusterproxy.Options{})
	info := tunnel.AuthInfo{Cluster: "dr1", User: "agent-dr1"}
	stopFirst := runAgent(t, &tunnel.Agent{Name: "cluster dr1 (first)", Transport: transportTo(srv, info), DrainTimeout: 20 * time.Second,
		Allow: allowOnly("dr1", "dr1:443", first.Listener.Addr().String())})
	eventually(t, 10*time.Second, "the first agent of dr1 to connect", connected(srv, "dr1"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := srv.DialCluster(ctx, "dr1", "dr1:443")
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, held, "/a"); got != "first /a" {
		t.Fatalf("before the second agent: got %q", got)
	}
	runAgent(t, &tunnel.Agent{Name: "cluster dr1 (second)", Transport: transportTo(srv, info),
		Allow: allowOnly("dr1", "dr1:443", second.Listener.Addr().String())})
	// Dials go to the first stream until it drains.
	eventually(t, 10*time.Second, "dials to keep reaching the first agent while it is not draining", func() bool {
		c, err := srv.DialCluster(ctx, "dr1", "dr1:443")
		if err != nil {
			return false
		}
		defer c.Close()
		return httpGet(t, c, "/b") == "first /b"
	})
	stopped := make(chan struct{})
	go func() { stopFirst(); close(stopped) }() // waits for the held connection (DrainTimeout)
	eventually(t, 10*time.Second, "a dial to reach the second agent once the first drains", func() bool {
		c, err := srv.DialCluster(ctx, "dr1", "dr1:443")
		if err != nil {
			return false
		}
		defer c.Close()
		return httpGet(t, c, "/c") == "second /c"
	})
	if got := httpGet(t, held, "/d"); got != "first /d" {
		t.Fatalf("the connection held on the draining stream: got %q", got)
	}
	select {
	case <-stopped:
		t.Fatal("the draining agent stopped while a connection was open")
	default:
	}
	held.Close()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the draining agent did not stop within 10s of its last connection closing")
	}
}

// With serverCount 2 the agent keeps a stream to each of two servers, skipping a server it
// reached twice.
func TestServerCount(t *testing.T) {
	a := startServer(t, clusterproxy.Options{ServerID: "a", ServerCount: 2})
	b := startServer(t, clusterproxy.Options{ServerID: "b", ServerCount: 2})
	info := tunnel.AuthInfo{Cluster: "sc1", User: "agent-sc1"}
	order := []*clusterproxy.Server{a, a, b}
	var n atomic.Int64
	var streams atomic.Int64
	runAgent(t, &tunnel.Agent{Name: "cluster sc1",
		Transport: func(ctx context.Context) (net.Conn, error) {
			return transportTo(order[(n.Add(1)-1)%int64(len(order))], info)(ctx)
		},
		Allow:   allowOnly("sc1", "sc1:443", "127.0.0.1:1"),
		Streams: func(k int) { streams.Store(int64(k)) }})
	eventually(t, 10*time.Second, "the agent to connect to both servers", func() bool {
		return streams.Load() == 2 && connected(a, "sc1")() && connected(b, "sc1")()
	})
}

// A cluster holds at most MaxStreamsPerCluster streams on a server; more are refused.
func TestStreamsPerClusterCapped(t *testing.T) {
	srv := startServer(t, clusterproxy.Options{MaxStreamsPerCluster: 1})
	info := tunnel.AuthInfo{Cluster: "cap1", User: "agent-cap1"}
	var firstStreams, secondStreams, secondAttempts atomic.Int64
	runAgent(t, &tunnel.Agent{Name: "cluster cap1 (first)", Transport: transportTo(srv, info), Allow: allowOnly("cap1", "cap1:443", "127.0.0.1:1"),
		Streams: func(n int) { firstStreams.Store(int64(n)) }})
	eventually(t, 10*time.Second, "the first agent of cap1 to connect", func() bool { return firstStreams.Load() == 1 })
	transport := transportTo(srv, info)
	runAgent(t, &tunnel.Agent{Name: "cluster cap1 (second)", Allow: allowOnly("cap1", "cap1:443", "127.0.0.1:1"),
		Transport: func(ctx context.Context) (net.Conn, error) { secondAttempts.Add(1); return transport(ctx) },
		Streams: func(n int) {
			if n > 0 {
				secondStreams.Store(int64(n))
			}
		}})
	eventually(t, 10*time.Second, "the second agent to try three times or connect", func() bool {
		return secondAttempts.Load() >= 3 || secondStreams.Load() > 0
	})
	if n := secondStreams.Load(); n > 0 {
		t.Fatalf("a second stream of cap1 was accepted over the limit of 1")
	}
}
