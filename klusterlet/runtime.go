package klusterlet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/core/backoff"
	flotillale "github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// LeaderElection lets several klusterlet replicas run for one managed cluster: the holder of
// a Lease on the management cluster (the managed one in Default mode) runs the agents, the others wait to take over. Zero values
// take the defaults: the Lease DefaultLeaderElectionName in the agent namespace
// (Registration.AgentNamespace, created when missing), OCM's timings (the hub's too).
type LeaderElection = flotillale.Config

// DefaultLeaderElectionName is the klusterlet's Lease.
const DefaultLeaderElectionName = "klusterlet-agent-lock"

// ErrLeaderElectionLost is Run's error when the replica could not renew its Lease: its agents
// have stopped, and a process should exit (non-zero, as controller-runtime's managers do) for
// a fresh start as a standby.
var ErrLeaderElectionLost = fmt.Errorf("klusterlet: %w", flotillale.ErrLost)

// lifecycle is what runs around the agents on every replica: the election and the metrics and
// health endpoints. An Agent runs once.
type lifecycle struct {
	elector      *flotillale.Elector // nil without leader election
	metricsAddr  string
	healthAddr   string
	retryInitial time.Duration
	retryMax     time.Duration
	log          logr.Logger
	// kubeconfigLoaded says whether registration has read its bootstrap or hub kubeconfig.
	kubeconfigLoaded func() bool
	// notLoaded is readiness's message while kubeconfigLoaded is false; empty: registration's.
	notLoaded          string
	running            atomic.Bool
	mu                 sync.Mutex
	metricsLn, probeLn net.Addr

	// managedKubeconfigError is why registration could not use its managed kubeconfig Secret
	// ("" when it could, or has none).
	managedKubeconfigError func() string
}

func newLifecycle(opts Options) (*lifecycle, error) {
	r := opts.Registration
	l := &lifecycle{
		metricsAddr:  endpoint(opts.MetricsBindAddress),
		healthAddr:   endpoint(opts.HealthProbeBindAddress),
		retryInitial: r.RetryInitial,
		retryMax:     cmp.Or(r.RetryMax, registration.DefaultRetryMax),
		log:          r.Logger,
	}
	if l.log.GetSink() == nil {
		l.log = logr.Discard()
	}
	if !opts.LeaderElection.Enabled {
		return l, nil
	}
	// The Lease is on the cluster the agent runs on, beside its Secrets.
	cfg := cmp.Or(r.ManagementConfig, r.ManagedConfig)
	if cfg == nil {
		return nil, errors.New("leader election needs Registration.ManagementConfig or ManagedConfig")
	}
	le := opts.LeaderElection.WithDefaults(cmp.Or(r.AgentNamespace, registration.DefaultAgentNamespace), DefaultLeaderElectionName)
	e, err := flotillale.New(cfg, le, "flotilla-klusterlet", l.log)
	if err != nil {
		return nil, err
	}
	l.elector = e
	return l, nil
}

// endpoint is addr, or "" when it disables the endpoint.
func endpoint(addr string) string {
	if addr == "0" {
		return ""
	}
	return addr
}

// run serves the endpoints (every replica, leader or not) and runs agents, in the leader only
// with leader election.
func (l *lifecycle) run(ctx context.Context, agents func(context.Context) error) error {
	stop, err := l.serveEndpoints(ctx)
	if err != nil {
		return fmt.Errorf("klusterlet: %w", err)
	}
	defer stop()
	runAgents := func(ctx context.Context) error {
		l.running.Store(true)
		defer l.running.Store(false)
		return agents(ctx)
	}
	if l.elector == nil {
		return runAgents(ctx)
	}
	if !l.ensureLeaseNamespace(ctx) {
		return nil
	}
	err = l.elector.Run(ctx, runAgents)
	if errors.Is(err, flotillale.ErrLost) {
		return ErrLeaderElectionLost
	}
	return err
}

// ensureLeaseNamespace makes sure the Lease's namespace exists, retrying until ctx ends
// (false).
func (l *lifecycle) ensureLeaseNamespace(ctx context.Context) bool {
	b := backoff.New(l.retryInitial, l.retryMax)
	for {
		err := l.elector.EnsureNamespace(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.log.Error(err, "Ensuring the leader election namespace; retrying")
		t := time.NewTimer(b.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// readyCheck is /readyz's check: a standby is ready once it campaigns; the agents' replica
// once they run and registration has read its bootstrap or hub kubeconfig.
func (l *lifecycle) readyCheck(*http.Request) error {
	switch {
	case l.elector != nil && !l.elector.Leading():
		if !l.elector.Campaigning() {
			return errors.New("not campaigning for the leader Lease yet")
		}
		return nil
	case !l.running.Load():
		return errors.New("the agents are not running")
	case l.managedKubeconfigError != nil && l.managedKubeconfigError() != "":
		return errors.New(l.managedKubeconfigError())
	case !l.kubeconfigLoaded():
		return errors.New(cmp.Or(l.notLoaded, "the registration agent has not read a bootstrap or hub kubeconfig yet"))
	}
	return nil
}

// serveEndpoints listens on the metrics and health addresses (one listener when they are the
// same) and serves until stop is called.
func (l *lifecycle) serveEndpoints(ctx context.Context) (stop func(), err error) {
	muxes := map[string]*http.ServeMux{}
	mux := func(addr string) *http.ServeMux {
		if muxes[addr] == nil {
			muxes[addr] = http.NewServeMux()
		}
		return muxes[addr]
	}
	if l.metricsAddr != "" {
		// controller-runtime's registry: the work agent's controllers, client-go's requests,
		// the leader election, and Go's runtime and the process (registered there by
		// controller-runtime's controller package).
		mux(l.metricsAddr).Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry,
			promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	if l.healthAddr != "" {
		m := mux(l.healthAddr)
		handle := func(path string, h http.Handler) {
			m.Handle(path, http.StripPrefix(path, h))
			m.Handle(path+"/", http.StripPrefix(path, h)) // /readyz/<check>
		}
		handle("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}})
		handle("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"klusterlet": l.readyCheck}})
	}
	var (
		servers []*http.Server
		wg      sync.WaitGroup
	)
	stop = func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(shutdownCtx)
		}
		wg.Wait()
	}
	for addr, m := range muxes {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
		if err != nil {
			stop()
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
		l.mu.Lock()
		if addr == l.metricsAddr {
			l.metricsLn = ln.Addr()
		}
		if addr == l.healthAddr {
			l.probeLn = ln.Addr()
		}
		l.mu.Unlock()
		s := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s)
		wg.Go(func() {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				l.log.Error(err, "Serving metrics or health probes", "address", ln.Addr().String())
			}
		})
		l.log.Info("Serving", "address", ln.Addr().String(), "metrics", addr == l.metricsAddr, "healthProbes", addr == l.healthAddr)
	}
	return stop, nil
}
