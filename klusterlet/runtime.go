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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	flotillale "github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// LeaderElection lets several klusterlet replicas run for one managed cluster: the holder of
// a Lease on the managed cluster runs the agents, the others wait to take over. Zero values
// take the defaults (OCM's timings, the hub's too).
type LeaderElection struct {
	Enabled bool
	// Namespace of the Lease on the managed cluster; default the agent namespace
	// (Registration.AgentNamespace), created when missing.
	Namespace string
	// Name of the Lease; default DefaultLeaderElectionName.
	Name string
	// LeaseDuration (default 137 s) is how long a Lease holds without renewal, RenewDeadline
	// (107 s) how long the leader tries to renew before it stops leading, RetryPeriod (26 s)
	// how often replicas try to acquire or renew.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity is this replica's holder identity; default its host name (the Pod's name) and
	// a random suffix.
	Identity string
}

// DefaultLeaderElectionName is the klusterlet's Lease.
const DefaultLeaderElectionName = "klusterlet-agent-lock"

// ErrLeaderElectionLost is Run's error when the replica could not renew its Lease: its agents
// have stopped, and a process should exit (non-zero, as controller-runtime's managers do) for
// a fresh start as a standby.
var ErrLeaderElectionLost = errors.New("klusterlet: leader election lost")

func (l LeaderElection) withDefaults(agentNamespace string) LeaderElection {
	l.Namespace = cmp.Or(l.Namespace, agentNamespace, registration.DefaultAgentNamespace)
	l.Name = cmp.Or(l.Name, DefaultLeaderElectionName)
	l.LeaseDuration = cmp.Or(l.LeaseDuration, flotillale.DefaultLeaseDuration)
	l.RenewDeadline = cmp.Or(l.RenewDeadline, flotillale.DefaultRenewDeadline)
	l.RetryPeriod = cmp.Or(l.RetryPeriod, flotillale.DefaultRetryPeriod)
	if l.Identity == "" {
		l.Identity = flotillale.Identity()
	}
	return l
}

// validate applies client-go's rules up front, so that New reports them.
func (l LeaderElection) validate() error {
	switch {
	case l.LeaseDuration <= 0 || l.RenewDeadline <= 0 || l.RetryPeriod <= 0:
		return fmt.Errorf("leader election: lease duration %s, renew deadline %s and retry period %s must be positive", l.LeaseDuration, l.RenewDeadline, l.RetryPeriod)
	case l.LeaseDuration <= l.RenewDeadline:
		return fmt.Errorf("leader election: lease duration %s must exceed the renew deadline %s", l.LeaseDuration, l.RenewDeadline)
	case float64(l.RenewDeadline) <= leaderelection.JitterFactor*float64(l.RetryPeriod):
		return fmt.Errorf("leader election: renew deadline %s must exceed %v times the retry period %s", l.RenewDeadline, leaderelection.JitterFactor, l.RetryPeriod)
	}
	return nil
}

// lifecycle is what runs around the agents on every replica: the election and the metrics and
// health endpoints. An Agent runs once.
type lifecycle struct {
	election       LeaderElection
	electionConfig leaderelection.LeaderElectionConfig // without callbacks; nil Lock without election
	kube           kubernetes.Interface                // the managed cluster's
	metricsAddr    string
	healthAddr     string
	retryInitial   time.Duration
	retryMax       time.Duration
	log            logr.Logger
	// kubeconfigLoaded says whether registration has read its bootstrap or hub kubeconfig.
	kubeconfigLoaded   func() bool
	electing, leading  atomic.Bool
	running            atomic.Bool
	mu                 sync.Mutex
	metricsLn, probeLn net.Addr
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
	if r.ManagedConfig == nil {
		return nil, errors.New("leader election needs Registration.ManagedConfig")
	}
	le := opts.LeaderElection.withDefaults(r.AgentNamespace)
	if err := le.validate(); err != nil {
		return nil, err
	}
	// One hung request must not cost the leader its Lease (client-go's heuristic).
	cfg := rest.AddUserAgent(rest.CopyConfig(r.ManagedConfig), "flotilla-klusterlet-leader-election")
	cfg.Timeout = max(time.Second, le.RenewDeadline/2)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election: managed cluster client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.Namespace, le.Name,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: le.Identity})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	l.election, l.kube = le, kube
	l.electionConfig = leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		// A replica stopping cleanly hands over at once; runElected stops the agents first.
		ReleaseOnCancel: true,
		Name:            le.Namespace + "/" + le.Name,
	}
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
	if l.electionConfig.Lock == nil {
		l.running.Store(true)
		defer l.running.Store(false)
		return agents(ctx)
	}
	return l.runElected(ctx, agents)
}

// runElected campaigns for the Lease and runs agents while it holds it. On ctx's end the
// agents stop before the Lease is released, so two replicas never run them at once.
func (l *lifecycle) runElected(ctx context.Context, agents func(context.Context) error) error {
	le := l.election
	log := l.log.WithValues("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	if !l.ensureLeaseNamespace(ctx) {
		return nil
	}
	// The elector's context outlives ctx: it ends once the agents have (ReleaseOnCancel).
	electCtx, stopElecting := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), l.log))
	defer stopElecting()
	var (
		mu                        sync.Mutex
		leading, stopping, closed bool
		agentsDone                = make(chan struct{})
		agentsErr                 error
	)
	// On ctx's end a standby stops campaigning now, the leader once its agents have stopped.
	defer context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		stopping = true
		if !leading {
			stopElecting()
		}
	})()
	cfg := l.electionConfig
	cfg.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(leadCtx context.Context) {
			mu.Lock()
			if stopping || closed {
				mu.Unlock()
				return
			}
			leading = true
			mu.Unlock()
			defer close(agentsDone)
			log.Info("Acquired the leader Lease; starting the agents")
			l.leading.Store(true)
			defer l.leading.Store(false)
			// leadCtx ends when the Lease is lost, ctx when the replica stops.
			runCtx, cancel := context.WithCancel(leadCtx)
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			l.running.Store(true)
			agentsErr = agents(runCtx)
			l.running.Store(false)
			// The Lease guards nothing any more: release it.
			stopElecting()
		},
		OnStoppedLeading: func() {},
		OnNewLeader: func(identity string) {
			if identity != le.Identity {
				log.Info("Waiting as a standby", "leader", identity)
			}
		},
	}
	elector, err := leaderelection.NewLeaderElector(cfg)
	if err != nil {
		return fmt.Errorf("klusterlet: %w", err)
	}
	log.Info("Campaigning for the leader Lease")
	l.electing.Store(true)
	elector.Run(electCtx)
	l.electing.Store(false)
	mu.Lock()
	wasLeading := leading
	closed = true // OnStartedLeading may still be about to run: it must not start the agents
	mu.Unlock()
	if wasLeading {
		<-agentsDone
	}
	switch {
	case agentsErr != nil:
		return agentsErr
	case ctx.Err() != nil:
		return nil
	default:
		log.Info("Lost the leader Lease; the agents have stopped")
		return ErrLeaderElectionLost
	}
}

// ensureLeaseNamespace makes sure the Lease's namespace exists, retrying until ctx ends
// (false). It reads before creating: a klusterlet may read its namespace but not create one.
func (l *lifecycle) ensureLeaseNamespace(ctx context.Context) bool {
	ns := l.election.Namespace
	b := registration.NewBackoff(l.retryInitial, l.retryMax)
	for {
		_, err := l.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = l.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.log.Error(err, "Ensuring the leader election namespace; retrying", "namespace", ns)
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
	case l.electionConfig.Lock != nil && !l.leading.Load():
		if !l.electing.Load() {
			return errors.New("not campaigning for the leader Lease yet")
		}
		return nil
	case !l.running.Load():
		return errors.New("the agents are not running")
	case !l.kubeconfigLoaded():
		return errors.New("the registration agent has not read a bootstrap or hub kubeconfig yet")
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
