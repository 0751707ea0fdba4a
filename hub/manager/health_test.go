package manager

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// freeAddr is a loopback address nothing listens on (for a moment).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// probe GETs path and returns the status and body, 0 while nothing answers.
func probe(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitFor polls cond until it holds or a minute passes.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last %s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func elected(h *Hub) bool {
	select {
	case <-h.Manager().Elected():
		return true
	default:
		return false
	}
}

// TestHealthProbes runs a leader hub without webhooks and a standby with them: each is ready
// once its caches have synced and, for the standby, its webhook server serves.
func TestHealthProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	cp, err := environment.StartControlPlane(t.Context(), environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	le := LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond}
	newHub := func(name string, wh webhook.Options) (*Hub, string) {
		addr := freeAddr(t)
		h, err := New(Options{Config: cp.Config, SkipCRDInstall: true, HealthProbeBindAddress: addr,
			Webhook: wh, LeaderElection: le, Logger: testr.New(t).WithName(name)})
		if err != nil {
			t.Fatal(err)
		}
		// The per-cluster controllers (every controller that sets no count of its own)
		// reconcile ControllerWorkers objects at once: with one, a fleet joining queued
		// behind them (make bench-fleet's controller table).
		if got := h.Manager().GetControllerOptions().MaxConcurrentReconciles; got != ControllerWorkers || got < 2 {
			t.Fatalf("the hub's controllers reconcile %d objects at once, want %d", got, ControllerWorkers)
		}
		return h, addr
	}
	start := func(name string, h *Hub) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	ready := func(addr string, checks ...string) func() (bool, string) {
		return func() (bool, string) {
			code, body := probe(addr, "/readyz?verbose")
			ok := code == http.StatusOK
			for _, c := range checks {
				ok = ok && strings.Contains(body, "[+]"+c+" ok")
			}
			return ok, body
		}
	}

	leader, leaderAddr := newHub("leader", webhook.Options{Disabled: true})
	start("leader", leader)
	waitFor(t, "the first hub leads", func() (bool, string) { return elected(leader), "not elected" })
	waitFor(t, "the leader is ready", ready(leaderAddr, "caches"))
	if code, body := probe(leaderAddr, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}

	standby, standbyAddr := newHub("standby", webhook.Options{})
	if err := standby.webhookServing(httptest.NewRequest(http.MethodGet, "/readyz", nil)); err == nil {
		t.Fatal("a webhook server that has not started passes the check")
	}
	start("standby", standby)
	waitFor(t, "the standby is alive", func() (bool, string) {
		code, body := probe(standbyAddr, "/healthz")
		return code == http.StatusOK, body
	})
	waitFor(t, "the standby is ready once its webhooks serve", ready(standbyAddr, "caches", "webhook"))
	if elected(standby) {
		t.Fatal("the standby leads while the first hub runs")
	}
	if err := standby.webhookServing(httptest.NewRequest(http.MethodGet, "/readyz", nil)); err != nil {
		t.Fatalf("webhook check: %v", err)
	}
}

// roundTripperFunc adapts a function to http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestNotReadyUntilThePoliciesLoad: a hub whose policy loader's list of the policy ConfigMaps
// is held has synced its caches and serves TLS, yet is not ready and applies no webhook
// configuration (its policy webhook would judge by the embedded policies alone); once the list
// goes through, it is ready and the configuration in effect.
func TestNotReadyUntilThePoliciesLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	cp, err := environment.StartControlPlane(t.Context(), environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	release := make(chan struct{})
	var held atomic.Int32
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Path == "/api/v1/namespaces/"+policy.DefaultNamespace+"/configmaps" &&
				strings.Contains(req.URL.Query().Get("labelSelector"), policy.ConfigMapLabel) {
				held.Add(1)
				select {
				case <-release:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
			}
			return rt.RoundTrip(req)
		})
	})
	addr := freeAddr(t)
	h, err := New(Options{Config: cfg, SkipCRDInstall: true, SkipWasmPluginController: true, HealthProbeBindAddress: addr, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	waitFor(t, "caches synced and the webhook serving while the policies' list is held", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return held.Load() > 0 && strings.Contains(body, "[+]caches ok") && strings.Contains(body, "[+]webhook ok"), fmt.Sprintf("%d %s", code, body)
	})
	if code, body := probe(addr, "/readyz?verbose"); code == http.StatusOK || !strings.Contains(body, "[-]policies failed") {
		t.Fatalf("ready before the policies loaded: %d %s", code, body)
	}
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), webhook.DefaultConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the webhook configuration was applied before the policies loaded (get: %v)", err)
	}

	close(release)
	waitFor(t, "ready once the policies loaded", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return code == http.StatusOK && strings.Contains(body, "[+]policies ok"), fmt.Sprintf("%d %s", code, body)
	})
	select {
	case <-h.Webhooks().Ready():
	case <-time.After(time.Minute):
		t.Fatal("the webhook configuration was not in effect within a minute of the policies loading")
	}
}
