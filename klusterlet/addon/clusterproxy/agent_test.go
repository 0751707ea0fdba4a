package clusterproxy_test

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	coreclusterproxy "github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/tunnel"
	hubclusterproxy "github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/clusterproxy"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// hub is the hub's tunnel API on a TLS test server, standing in for the hub API server: it
// authenticates bearer tokens (token → user) and passes the user on, as the aggregator does.
type hub struct {
	*httptest.Server
	srv *hubclusterproxy.Server

	requests atomic.Int64
	mu       sync.Mutex
	hijacked []net.Conn
}

func startHub(t *testing.T, users map[string]user.Info) *hub {
	t.Helper()
	srv, err := hubclusterproxy.NewServer(hubclusterproxy.Options{Logger: testr.New(t).WithName("hub")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Start(ctx) }()
	api := srv.APIService().Handler
	h := &hub{srv: srv}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		u, ok := users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		api.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	}))
	h.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateHijacked {
			h.mu.Lock()
			h.hijacked = append(h.hijacked, c)
			h.mu.Unlock()
		}
	}
	h.StartTLS()
	t.Cleanup(func() {
		h.Close()
		cancel()
		<-done
	})
	return h
}

// cut closes every tunnel connection the hub holds.
func (h *hub) cut() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.hijacked {
		_ = c.Close()
	}
	n := len(h.hijacked)
	h.hijacked = nil
	return n
}

func (h *hub) config(token string) *rest.Config {
	return &rest.Config{Host: h.URL, BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})}}
}

func agentUser(cluster string) user.Info {
	return &user.DefaultInfo{Name: "system:open-cluster-management:cluster:" + cluster + ":addon:cluster-proxy:agent:proxy-agent",
		Groups: []string{coreclusterproxy.AgentGroup(cluster), "system:open-cluster-management:addon:cluster-proxy", user.AllAuthenticated}}
}

// connectProxy is an HTTP CONNECT proxy counting the tunnels it opened.
func connectProxy(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var tunnels atomic.Int64
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		tunnels.Add(1)
		_, _ = rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
		_ = rw.Flush()
		go func() { _, _ = io.Copy(up, rw); up.Close() }()
		_, _ = io.Copy(c, up)
		c.Close()
	}))
	t.Cleanup(p.Close)
	return p, &tunnels
}

// health records the agent's Healthy reports.
type health struct {
	mu      sync.Mutex
	current bool
	changes []bool
}

func (h *health) set(v bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.changes) == 0 || h.changes[len(h.changes)-1] != v {
		h.changes = append(h.changes, v)
	}
	h.current = v
}

func (h *health) get() (bool, []bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.current, append([]bool(nil), h.changes...)
}

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

// runAgent runs the built-in agent until the test ends.
func runAgent(t *testing.T, env addon.BuiltinEnv) *health {
	t.Helper()
	h := &health{}
	env.Healthy = h.set
	env.Logger = testr.New(t).WithName("agent")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&clusterproxy.Agent{RetryInitial: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond}).Run(ctx, env)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("the agent did not stop within 15s")
		}
	})
	return h
}

// The agent connects through the hub kubeconfig's proxy-url, serves the API server at its hosts
// and nothing else, is healthy only while connected, and reconnects when the stream is cut.
func TestAgent(t *testing.T) {
	managed := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "managed "+r.URL.Path)
	}))
	defer managed.Close()
	h := startHub(t, map[string]user.Info{"ka1": agentUser("ka1")})
	proxy, tunnels := connectProxy(t)
	health := runAgent(t, addon.BuiltinEnv{ClusterName: "ka1", InstallNamespace: "proxy-ns",
		HubConfig: h.config("ka1"), HubEndpoint: registration.HubEndpoint{Server: h.URL, ProxyURL: proxy.URL},
		ManagedConfig: &rest.Config{Host: managed.URL}})
	eventually(t, 10*time.Second, "the agent of ka1 to connect and report healthy", func() bool {
		ok, _ := h.srv.Connected("ka1")
		healthy, _ := health.get()
		return ok && healthy
	})
	if tunnels.Load() < 1 {
		t.Fatal("the agent did not connect through the hub kubeconfig's proxy-url")
	}

	get := func(address string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client := &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: managed.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "example.com"},
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return h.srv.DialCluster(ctx, "ka1", address)
			},
		}}
		defer client.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/version", nil)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	for _, address := range []string{"ka1:443", "ka1.proxy-ns:443"} {
		if body, err := get(address); err != nil || body != "managed /version" {
			t.Fatalf("GET through %s: %q, %v", address, body, err)
		}
	}
	for _, address := range []string{"ka1:80", "ka1.other-ns:443", "kubernetes.default.svc:443", "127.0.0.1:443"} {
		_, err := get(address)
		var de *tunnel.DialError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "address "+address+" is not exposed by cluster ka1") {
			t.Fatalf("dialing %s: got %v, want the agent's refusal naming the address and the cluster", address, err)
		}
	}

	if n := h.cut(); n == 0 {
		t.Fatal("the hub held no tunnel connection to cut")
	}
	eventually(t, 10*time.Second, "the agent to report unhealthy once its stream is cut, then reconnect", func() bool {
		ok, _ := h.srv.Connected("ka1")
		healthy, changes := health.get()
		return ok && healthy && len(changes) >= 3 // true, false, true
	})
	if body, err := get("ka1:443"); err != nil || body != "managed /version" {
		t.Fatalf("GET after the reconnect: %q, %v", body, err)
	}
}

// An agent whose hub identity is cluster A's cannot open cluster B's tunnel.
func TestAgentOfAnotherCluster(t *testing.T) {
	managed := httptest.NewTLSServer(http.NotFoundHandler())
	defer managed.Close()
	h := startHub(t, map[string]user.Info{"kb1": agentUser("kb1")})
	health := runAgent(t, addon.BuiltinEnv{ClusterName: "kb2", HubConfig: h.config("kb1"), ManagedConfig: &rest.Config{Host: managed.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := tunnel.DialUpgrade(ctx, h.config("kb1"), coreclusterproxy.TunnelPath("kb2"))
	if err == nil {
		conn.Close()
	}
	var ue *tunnel.UpgradeError
	if !errors.As(err, &ue) || ue.Status != http.StatusForbidden || !strings.Contains(ue.Body, "may not open the cluster-proxy tunnel of cluster kb2") {
		t.Fatalf("upgrading kb2's tunnel as kb1's agent: got %v, want 403", err)
	}
	// The agent keeps retrying: none of its attempts may be accepted.
	eventually(t, 10*time.Second, "the agent to try three times", func() bool { return h.requests.Load() >= 4 })
	for _, c := range []string{"kb1", "kb2"} {
		if ok, _ := h.srv.Connected(c); ok {
			t.Fatalf("an agent of kb1 opened a tunnel (for %s) while configured for kb2", c)
		}
	}
	if _, changes := health.get(); len(changes) > 0 && changes[0] {
		t.Fatalf("the agent reported healthy: %v", changes)
	}
}
