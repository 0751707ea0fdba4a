// Package klusterlet is the agent that runs on each managed cluster: the registration agent
// (klusterlet/registration) joins the cluster to a hub and keeps it registered, and for each
// accepted hub session the work agent (klusterlet/work) applies the cluster's ManifestWorks
// with the identity registration obtained. Later agents (add-ons) share its Options and
// lifetime.
package klusterlet

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/satoken"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/clustergateway"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/clusterproxy"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/msa"
	"github.com/flotilla-dev/flotilla/klusterlet/plugins"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/klusterlet/work"
)

// Options configures a klusterlet: one section per agent it runs.
type Options struct {
	// Registration configures the registration agent; registration.Config documents each
	// field and its default. Only Registration.ManagedConfig (or ManagementConfig with
	// ManagedKubeconfigSecret, the hosted agent) is required.
	Registration registration.Config
	// BootstrapKubeconfigFile is read into Registration.BootstrapKubeconfig when that is
	// empty; with both empty the agent reads the secret bootstrap-hub-kubeconfig.
	BootstrapKubeconfigFile string
	// Work configures the work agent.
	Work WorkOptions
	// Plugins configures the Wasm plugin loader that serves the work agent's
	// WellKnownStatus feedback rules.
	Plugins PluginOptions
	// AddOn configures add-on registration and health (klusterlet/addon).
	AddOn AddOnOptions
	// LeaderElection lets several replicas run for the cluster: the holder of a Lease on the
	// management cluster (Registration.ManagementConfig) runs the agents (runtime.go).
	LeaderElection LeaderElection
	// MetricsBindAddress serves Prometheus metrics at /metrics (controller-runtime's
	// registry); HealthProbeBindAddress serves /healthz and /readyz. Both run on every
	// replica, leader or not; empty or "0" disables them.
	MetricsBindAddress, HealthProbeBindAddress string
	// Scheme, when set, is the scheme of every agent's clients (it must hold
	// core/apis/scheme's types and is only read), shared with other klusterlets in the
	// process: a fleet simulator builds one for thousands. Nil: one per klusterlet.
	Scheme *runtime.Scheme
	// HubMapper, when set, maps kinds to resources on the hub for every agent's hub clients
	// (registration.Config.HubMapper), shared with other klusterlets of the same hub in the
	// process. Nil: one per hub session, shared by the agents of the session.
	HubMapper meta.RESTMapper
	// OnRun, when set, runs beside the agents while they run (with leader election, in the
	// leader only), with a context that ends when they stop: klusterlet/operator reports the
	// Klusterlet's status from it.
	OnRun func(ctx context.Context, a *Agent)
}

// AddOnOptions configures the add-on agent: the hub credentials of add-on agents (a CSR per
// registration, written as <addon>-hub-kubeconfig in the add-on's namespace) and their Lease
// health.
type AddOnOptions struct {
	// Disabled turns the add-on agent off (OCM's AddonManagement gate off).
	Disabled bool
	// LeaseDurationSeconds is the add-on agents' lease duration assumed for Lease health (an
	// add-on is unavailable 5 durations after its last renewal); 0 means OCM's 60 s.
	LeaseDurationSeconds int32
}

// WorkOptions configures the work agent; zero values take work.Config's defaults.
type WorkOptions struct {
	// Disabled runs registration only.
	Disabled bool
	// Only runs the work agent alone, without registration: it waits for the hub kubeconfig
	// secret (Registration.AgentNamespace/HubKubeconfigSecret) a registration agent with
	// Disabled keeps, runs with its identity, and starts again when its certificate changes
	// (workonly.go). The Lease of leader election defaults to DefaultWorkLeaderElectionName.
	Only bool
	// ServiceAccount, when set, is the ServiceAccount in the agent namespace the work agent
	// acts as on the managed cluster (OCM's <klusterlet>-work-sa), with tokens requested with
	// Registration.ManagedConfig's identity: that identity then needs only create on that
	// ServiceAccount's serviceaccounts/token, and what ManifestWorks may apply is what the
	// ServiceAccount may. Empty: the work agent uses Registration.ManagedConfig's identity.
	// Not used with Registration.ManagedKubeconfigSecret (Hosted modes): the klusterlet
	// operator writes that Secret with the managed-side ServiceAccount's own token, and the
	// agent namespace is on the management cluster, not where that ServiceAccount lives.
	ServiceAccount string
	// StatusSyncInterval is how often applied resources are read back for availability and
	// feedback (OCM's --status-sync-interval).
	StatusSyncInterval time.Duration
	// EvictionGracePeriod is how long an AppliedManifestWork whose ManifestWork is gone is
	// kept (OCM's --appliedmanifestwork-eviction-grace-period).
	EvictionGracePeriod time.Duration
	// ExecutorValidatingCaches caches executor permission checks until RBAC changes (OCM's
	// feature gate of that name).
	ExecutorValidatingCaches bool
	// MaxFeedbackWatch caps the resources watched for feedbackScrapeType Watch (OCM's
	// --max-feedback-watch).
	MaxFeedbackWatch int
	// RawFeedbackJSON allows JsonRaw feedback values (OCM's RawFeedbackJsonString gate).
	RawFeedbackJSON bool
	// Workers is how many ManifestWorks are reconciled at once (work.DefaultWorkers when 0).
	Workers int
	// KubeAPIQPS and KubeAPIBurst limit the work agent's requests to the managed cluster, and
	// HubKubeAPIQPS and HubKubeAPIBurst its requests to the hub (Klusterlet
	// workConfiguration.kubeAPIQPS... ); 0: work.Config's defaults.
	KubeAPIQPS, HubKubeAPIQPS     float32
	KubeAPIBurst, HubKubeAPIBurst int
}

// Agent is a configured klusterlet.
type Agent struct {
	// Registration is nil in a work-only agent (WorkOptions.Only).
	Registration *registration.Agent
	// workOnly runs a work-only agent's sessions.
	workOnly *workOnly
	// plugins configures the plugin loader started by Run; nil for none.
	plugins *plugins.Config
	// loader is the running plugin loader, whose FeedbackExtractors the work agent uses.
	loader atomic.Pointer[plugins.Loader]
	// life runs the election and the endpoints around the agents.
	life *lifecycle
	// onRun is Options.OnRun.
	onRun func(ctx context.Context, a *Agent)
}

// ReadFiles reads BootstrapKubeconfigFile into Registration.BootstrapKubeconfig (when that is
// empty), so that a file that cannot be read is reported before any server is contacted.
func (o *Options) ReadFiles() error {
	if len(o.Registration.BootstrapKubeconfig) == 0 && o.BootstrapKubeconfigFile != "" {
		data, err := os.ReadFile(o.BootstrapKubeconfigFile)
		if err != nil {
			return fmt.Errorf("klusterlet: reading bootstrap kubeconfig file %s: %w", o.BootstrapKubeconfigFile, err)
		}
		o.Registration.BootstrapKubeconfig = data
	}
	return nil
}

// New validates opts and builds the agent without contacting any server.
func New(opts Options) (*Agent, error) {
	if err := opts.ReadFiles(); err != nil {
		return nil, err
	}
	cfg := opts.Registration
	a := &Agent{plugins: pluginConfig(opts), onRun: opts.OnRun}
	// One scheme and one mapper per cluster for all the agents: each holds a copy of every
	// type, or of the cluster's discovery, that the others would duplicate.
	if cfg.Scheme == nil {
		cfg.Scheme = opts.Scheme
	}
	if cfg.Scheme == nil {
		cfg.Scheme = apischeme.New()
	}
	if cfg.HubMapper == nil {
		cfg.HubMapper = opts.HubMapper
	}
	if cfg.ManagementConfig == nil && cfg.ManagedKubeconfigSecret == "" {
		cfg.ManagementConfig = cfg.ManagedConfig
	}
	if cfg.ManagedMapper == nil && cfg.ManagedConfig != nil {
		httpClient, err := rest.HTTPClientFor(cfg.ManagedConfig)
		if err == nil {
			cfg.ManagedMapper, err = apiutil.NewDynamicRESTMapper(cfg.ManagedConfig, httpClient)
		}
		if err != nil {
			return nil, fmt.Errorf("klusterlet: managed cluster REST mapper: %w", err)
		}
	}
	if opts.Work.Only {
		return a.newWorkOnly(opts, cfg)
	}
	if !opts.Work.Disabled || !opts.AddOn.Disabled {
		cfg.OnAccepted = a.session(opts, cfg.ManagedMapper)
	}
	reg, err := registration.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("klusterlet: %w", err)
	}
	a.Registration = reg
	opts.Registration.ManagementConfig = cfg.ManagementConfig
	if a.life, err = newLifecycle(opts); err != nil {
		return nil, fmt.Errorf("klusterlet: %w", err)
	}
	a.life.kubeconfigLoaded = func() bool { return reg.State().KubeconfigLoaded }
	a.life.managedKubeconfigError = func() string { return reg.State().ManagedKubeconfigError }
	return a, nil
}

// session runs the agents of one accepted hub session (work, add-ons) until the session ends
// or one of them fails, which ends the others.
func (a *Agent) session(opts Options, managedMapper meta.RESTMapper) func(ctx context.Context, s registration.Session) error {
	runWork := a.workSession(opts, managedMapper)
	return func(ctx context.Context, s registration.Session) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errs, n := make(chan error, 2), 0
		if !opts.Work.Disabled {
			n++
			go func() { errs <- runWork(ctx, s) }()
		}
		// Built-in add-ons and the Secrets and Leases of add-ons running on the managed
		// cluster go through ManagedConfig; those of hosted add-ons through ManagementConfig.
		managementConfig := cmp.Or(s.ManagementConfig, s.ManagedConfig)
		if !opts.AddOn.Disabled {
			n++
			go func() {
				ag, err := addon.New(addon.Config{
					ClusterName: s.ClusterName, AgentName: s.AgentName, HubConfig: s.HubConfig, HubEndpoint: s.HubEndpoint,
					AgentNamespace:       opts.Registration.AgentNamespace,
					ManagedConfig:        s.ManagedConfig,
					ManagementConfig:     managementConfig,
					CSRExpirationSeconds: opts.Registration.CSRExpirationSeconds, RotationThreshold: opts.Registration.RotationThreshold,
					LeaseDurationSeconds: opts.AddOn.LeaseDurationSeconds,
					Scheme:               s.Scheme,
					HubMapper:            s.HubMapper,
					HubKube:              s.HubKube,
					Builtins:             builtinAgents(),
					Logger:               s.Logger.WithName("addon"),
				})
				if err == nil {
					err = ag.Run(ctx)
				}
				errs <- err
			}()
		}
		var err error
		for range n {
			if e := <-errs; e != nil && err == nil {
				err = e
				cancel()
			}
		}
		return err
	}
}

// workSession runs a work agent for one accepted hub session, until the session ends.
func (a *Agent) workSession(opts Options, managedMapper meta.RESTMapper) func(ctx context.Context, s registration.Session) error {
	return func(ctx context.Context, s registration.Session) error {
		managed, err := workManagedConfig(ctx, opts, s.ManagedConfig)
		if err != nil {
			return err
		}
		// The managed config's rates are the other agents' (--kube-api-qps); the work agent's
		// are Work.KubeAPIQPS and KubeAPIBurst, else its own defaults.
		managed = rest.CopyConfig(managed)
		managed.QPS, managed.Burst = 0, 0
		cfg := work.Config{
			ClusterName:              s.ClusterName,
			AgentID:                  s.AgentName,
			HubConfig:                s.HubConfig,
			HubServer:                s.HubServer,
			ManagedConfig:            managed,
			StatusSyncInterval:       opts.Work.StatusSyncInterval,
			EvictionGracePeriod:      opts.Work.EvictionGracePeriod,
			ExecutorValidatingCaches: opts.Work.ExecutorValidatingCaches,
			MaxFeedbackWatch:         opts.Work.MaxFeedbackWatch,
			RawFeedbackJSON:          opts.Work.RawFeedbackJSON,
			Workers:                  opts.Work.Workers,
			ManagedQPS:               opts.Work.KubeAPIQPS,
			ManagedBurst:             opts.Work.KubeAPIBurst,
			HubQPS:                   opts.Work.HubKubeAPIQPS,
			HubBurst:                 opts.Work.HubKubeAPIBurst,
			Scheme:                   s.Scheme,
			HubMapper:                s.HubMapper,
			ManagedMapper:            cmp.Or(managedMapper, s.ManagedMapper),
			Logger:                   s.Logger.WithName("work"),
		}
		// The loader starts before registration (Run), so it is there for every session.
		if l := a.loader.Load(); l != nil {
			cfg.FeedbackExtractors = l
		}
		w, err := work.New(cfg)
		if err != nil {
			return err
		}
		if err := ensureNamespace(ctx, s.ManagedConfig, AddOnNamespace); err != nil {
			// Not fatal: add-ons installed elsewhere still work, and the next session retries.
			s.Logger.Error(err, "ensuring the add-on namespace")
		}
		return w.Run(ctx)
	}
}

// workManagedConfig is how the work agent reaches the managed cluster: as
// Options.Work.ServiceAccount when set, with tokens from the TokenRequest API. A token, not
// impersonation: the work agent itself impersonates executors (dry-run creates of RBAC
// objects), and Kubernetes does not chain impersonation, so it must authenticate as the
// ServiceAccount, whose own rights (OCM's: impersonate serviceaccounts) allow that.
func workManagedConfig(ctx context.Context, opts Options, managed *rest.Config) (*rest.Config, error) {
	sa := opts.Work.ServiceAccount
	if sa == "" || opts.Registration.ManagedKubeconfigSecret != "" {
		return managed, nil
	}
	ns := cmp.Or(opts.Registration.AgentNamespace, registration.DefaultAgentNamespace)
	cfg, err := satoken.Config(ctx, managed, ns, sa, satoken.Options{})
	if err != nil {
		return nil, fmt.Errorf("work agent: acting as ServiceAccount %s/%s: %w", ns, sa, err)
	}
	return cfg, nil
}

// AddOnNamespace is where add-on agents are installed by default; the klusterlet creates it,
// as OCM's klusterlet operator does, so add-on works can put their agents there.
const AddOnNamespace = "open-cluster-management-agent-addon"

func ensureNamespace(ctx context.Context, cfg *rest.Config, name string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// Run runs the agent until ctx ends; it returns nil then. The metrics and health endpoints
// serve throughout; with leader election the agents run only while this replica holds the
// Lease, and losing it stops them and returns ErrLeaderElectionLost. An Agent runs once.
func (a *Agent) Run(ctx context.Context) error {
	return a.life.run(ctx, a.runAgents)
}

// Leading reports whether the agents run: with leader election, whether this replica holds
// the Lease and has started them.
func (a *Agent) Leading() bool { return a.life.running.Load() }

// MetricsAddr is the address the metrics endpoint listens on, nil before Run listens or when
// disabled; HealthProbeAddr the health endpoints'.
func (a *Agent) MetricsAddr() net.Addr {
	a.life.mu.Lock()
	defer a.life.mu.Unlock()
	return a.life.metricsLn
}

// HealthProbeAddr: see MetricsAddr.
func (a *Agent) HealthProbeAddr() net.Addr {
	a.life.mu.Lock()
	defer a.life.mu.Unlock()
	return a.life.probeLn
}

// runAgents runs the plugin loader and the registration agent (which runs the others) until
// ctx ends. The loader starts first and stops last: it needs no hub.
func (a *Agent) runAgents(ctx context.Context) error {
	release, err := a.startPlugins()
	if err != nil {
		return fmt.Errorf("klusterlet: %w", err)
	}
	defer release()
	if a.onRun != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); a.onRun(ctx, a) }()
		defer func() { cancel(); <-done }()
	}
	if a.workOnly != nil {
		return a.workOnly.Run(ctx)
	}
	return a.Registration.Run(ctx)
}

// Run builds an agent from opts and runs it until ctx ends. Only invalid options, an
// endpoint that cannot listen and a lost leader election (ErrLeaderElectionLost) make it
// return an error; an unreachable or refusing hub does not.
func Run(ctx context.Context, opts Options) error {
	a, err := New(opts)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// builtinAgents are the add-on agents built into the klusterlet, by add-on name; each runs
// only while the hub marks the cluster's add-on built-in (klusterlet/addon Config.Builtins).
// The cluster-gateway agent reports healthy while the cluster-proxy agent holds its tunnel.
func builtinAgents() map[string]addon.BuiltinAgent {
	tunnel := &clustergateway.Tap{Agent: &clusterproxy.Agent{}}
	return map[string]addon.BuiltinAgent{
		authv1beta1.AddonName:            &msa.Agent{},
		proxyv1alpha1.AddonName:          tunnel,
		clustergatewayv1alpha1.AddonName: &clustergateway.Agent{Tunnel: tunnel},
	}
}
