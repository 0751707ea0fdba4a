// Package plugins is the klusterlet's Wasm plugin loader on its managed cluster. It installs
// the WasmPlugin CRD there (as OCM's klusterlet operator installs the agent's CRDs), installs
// Flotilla's own FeedbackExtractors (the Default ones of plugins/dist, today
// feedback-wellknown) as WasmPlugin + ConfigMap in the agent namespace, and runs the
// WasmPlugin controller (core/wasmplugin) against the managed cluster, loading FeedbackExtractor
// plugins into a wasm.Registry with an engine of its own. The work agent reads WellKnownStatus
// feedback through that registry. It needs no hub, so it starts next to registration.
//
// Only FeedbackExtractor plugins are used on a managed cluster, so the loader ignores
// WasmPlugins of other types: it neither loads them nor writes their status (on a hub that is
// also its own managed cluster, those are the hub's to serve).
//
// One loader runs per managed API server per process. WasmPlugins are cluster-scoped objects
// of the managed cluster, so klusterlets sharing a process and a managed cluster (flotilla dev
// with several clusters on one API server, the test suites, the 100-klusterlet registration
// benchmark) share one engine, registry and controller instead of each compiling every module,
// storing its own copy of every built-in module and writing every status. Start returns the
// loader of a cluster and its release; the last release stops it. The klusterlet hands the
// loader to each work agent it starts (work.Config.FeedbackExtractors).
package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

const (
	// CRD is the WasmPlugin CustomResourceDefinition the loader installs on the managed cluster.
	CRD = "wasmplugins.flotilla.dev"
	// InstalledBy is the wasmplugin.InstalledByLabel value (and field manager) of the plugins
	// the klusterlet installs.
	InstalledBy = "flotilla-klusterlet"
	// DefaultRetryInitial and DefaultRetryMax bound the backoff between attempts to start
	// when the managed cluster refuses or is unreachable.
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = time.Minute
)

// Config configures a loader.
type Config struct {
	// ManagedConfig reaches the managed cluster with the rights to install the CRD and the
	// built-in plugins and to read WasmPlugins and ConfigMaps. Required.
	ManagedConfig *rest.Config
	// Namespace holds the ConfigMaps of the built-in plugins (the agent namespace). Required
	// unless SkipInstall.
	Namespace string
	// CacheDir, when set, keeps compiled modules on disk across restarts.
	CacheDir string
	// SkipInstall does not install the built-in FeedbackExtractors.
	SkipInstall bool
	// Logger receives the loader's logs. Default: discard.
	Logger logr.Logger
	// RetryInitial and RetryMax: see DefaultRetryInitial.
	RetryInitial, RetryMax time.Duration
}

// Loader serves the FeedbackExtractor plugins of one managed cluster.
type Loader struct {
	cfg      Config
	key      string
	log      logr.Logger
	engine   *wasm.Engine
	registry *wasm.Registry
	builtin  []dist.Plugin

	refs   int // guarded by mu
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	mu      sync.Mutex
	running = map[string]*Loader{}
)

func keyOf(c *rest.Config) string { return c.Host }

// Start returns the loader of cfg.ManagedConfig's API server, starting one when this process
// runs none, and the function that releases it: the last release stops the loader and waits
// for it. A loader already running keeps the options it was started with. A loader that
// cannot reach or install on its cluster retries with backoff until released; only invalid
// options are errors.
func Start(cfg Config) (*Loader, func(), error) {
	if cfg.ManagedConfig == nil {
		return nil, nil, errors.New("plugin loader: ManagedConfig is required")
	}
	if cfg.Namespace == "" && !cfg.SkipInstall {
		return nil, nil, errors.New("plugin loader: Namespace is required to install the built-in plugins")
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = DefaultRetryInitial
	}
	if cfg.RetryMax < cfg.RetryInitial {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryInitial)
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
	key := keyOf(cfg.ManagedConfig)
	mu.Lock()
	defer mu.Unlock()
	if l, ok := running[key]; ok {
		l.refs++
		return l, l.releaseFunc(), nil
	}
	all, err := dist.Plugins()
	if err != nil {
		return nil, nil, fmt.Errorf("plugin loader: %w", err)
	}
	var builtin []dist.Plugin
	for _, p := range all {
		if p.Default && p.Type == abi.TypeFeedbackExtractor {
			builtin = append(builtin, p)
		}
	}
	log := cfg.Logger.WithName("plugins")
	engine, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{CacheDir: cfg.CacheDir, Logger: log.WithName("wasm")})
	if err != nil {
		return nil, nil, fmt.Errorf("plugin loader: wasm engine: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loader{cfg: cfg, key: key, log: log, engine: engine, registry: wasm.NewRegistry(), builtin: builtin,
		refs: 1, cancel: cancel, done: make(chan struct{})}
	running[key] = l
	go l.run(ctx)
	return l, l.releaseFunc(), nil
}

// forCluster returns the loader running in this process for the managed API server of c,
// or nil (tests observe sharing and release with it).
func forCluster(c *rest.Config) *Loader {
	if c == nil {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	return running[keyOf(c)]
}

func (l *Loader) releaseFunc() func() {
	var once sync.Once
	return func() { once.Do(l.release) }
}

func (l *Loader) release() {
	mu.Lock()
	l.refs--
	last := l.refs == 0
	if last && running[l.key] == l {
		delete(running, l.key)
	}
	mu.Unlock()
	if !last {
		return
	}
	l.cancel()
	<-l.done
	if err := l.engine.Close(context.Background()); err != nil {
		l.log.Error(err, "closing the wasm engine")
	}
}

// Registry holds the FeedbackExtractor modules loaded on the cluster.
func (l *Loader) Registry() *wasm.Registry { return l.registry }

// Builtin reports whether name is one of the klusterlet's own plugins (which an admin's
// plugin declaring the same kind takes precedence over).
func (l *Loader) Builtin(name string) bool {
	for _, p := range l.builtin {
		if p.Name == name {
			return true
		}
	}
	return false
}

// run serves until ctx ends, starting over with backoff when the cluster fails it, and
// installs the built-in plugins beside it (retrying until done): a klusterlet that cannot
// install them still loads the plugins others installed.
func (l *Loader) run(ctx context.Context) {
	defer close(l.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	if !l.cfg.SkipInstall && len(l.builtin) > 0 {
		wg.Go(func() { l.retry(ctx, "installing the klusterlet's own plugins", l.install) })
	}
	l.retry(ctx, "plugin loader stopped", l.serve)
}

// retry runs f until it succeeds or ctx ends, with backoff after failures.
func (l *Loader) retry(ctx context.Context, what string, f func(context.Context) error) {
	delay := l.cfg.RetryInitial
	for {
		err := f(ctx)
		if ctx.Err() != nil || err == nil {
			return
		}
		if meta.IsNoMatchError(err) {
			// The WasmPlugin CRD this loader installs is not served yet (it was just created,
			// or discovery has not caught up): a start-up wait, not an error.
			l.log.V(1).Info(what+": the WasmPlugin CRD is not served yet; retrying", "in", delay.String())
		} else {
			l.log.Error(err, what+"; retrying", "in", delay.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, l.cfg.RetryMax)
	}
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := flotillav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// install applies the built-in FeedbackExtractors (WasmPlugin + ConfigMap, server-side, so
// drift is reverted at every start).
func (l *Loader) install(ctx context.Context) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	c, err := client.New(l.cfg.ManagedConfig, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("managed cluster client: %w", err)
	}
	inst := wasmplugin.Installer{Client: c, Namespace: l.cfg.Namespace, FieldManager: InstalledBy, InstalledBy: InstalledBy}
	for _, p := range l.builtin {
		if err := inst.Apply(ctx, p.Bundled(nil)); err != nil {
			return err
		}
	}
	l.log.V(1).Info("installed the klusterlet's own plugins", "count", len(l.builtin))
	return nil
}

// serve installs the WasmPlugin CRD, then runs the WasmPlugin controller until ctx ends
// (nil) or it fails. A klusterlet that may not update the CRD uses the one installed.
func (l *Loader) serve(ctx context.Context) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	if err := crds.InstallNamed(ctx, l.cfg.ManagedConfig, CRD); err != nil {
		c, cerr := client.New(l.cfg.ManagedConfig, client.Options{Scheme: scheme})
		if cerr != nil || !established(ctx, c) {
			return fmt.Errorf("installing the WasmPlugin CRD: %w", err)
		}
		l.log.Info("could not update the WasmPlugin CRD; using the one installed", "error", err.Error())
	}
	skip := true
	mgr, err := ctrl.NewManager(l.cfg.ManagedConfig, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 l.log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A process may run loaders for several clusters, and a hub: controller names repeat.
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return fmt.Errorf("managed cluster manager: %w", err)
	}
	if err := wasmplugin.SetupWithManager(mgr, l.engine, l.registry, abi.TypeFeedbackExtractor); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// established reports whether the WasmPlugin CRD exists and is Established.
func established(ctx context.Context, c client.Client) bool {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: CRD}, crd); err != nil {
		return false
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
