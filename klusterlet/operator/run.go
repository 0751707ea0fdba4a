package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

// Options configures RunKlusterlet.
type Options struct {
	// Klusterlet is the klusterlet's configuration from its flags (feature gates applied);
	// Klusterlet.Registration.ManagedConfig, required, also reaches the Klusterlet. The
	// Klusterlet's settings are set over it for every run; Klusterlet.OnRun still runs.
	Klusterlet klusterlet.Options
	// KlusterletName is the Klusterlet the agents take their settings from
	// (operatorv1.KlusterletName); empty ignores the API: the agents run from Klusterlet
	// alone, as klusterlet.Run would.
	KlusterletName string
	// Deployment is the klusterlet's own Deployment, reported in the Klusterlet's status; zero
	// when it does not run in one. operatorrun.DeploymentFromEnv reads it from the Pod's
	// environment.
	Deployment types.NamespacedName
	// MinBackoff and MaxBackoff bound the wait before agents that failed are started again,
	// doubling from one to the other; defaults 1 s and 1 min.
	MinBackoff, MaxBackoff time.Duration
	// StatusResync is how often the hub connection is checked again when nothing was seen to
	// change; default DefaultStatusResync.
	StatusResync time.Duration
	// Logger defaults to Klusterlet.Registration.Logger.
	Logger logr.Logger
}

// watch follows the Klusterlet and the klusterlet's Deployment on the managed cluster.
type watch = operatorrun.Watch[*operatorv1.Klusterlet]

// RunKlusterlet runs the klusterlet's agents until ctx ends, with the settings of the
// Klusterlet named opts.KlusterletName over those of opts.Klusterlet; see the package
// documentation. It returns nil when ctx ends, and an error when the flags' options cannot
// build a klusterlet.
func RunKlusterlet(ctx context.Context, opts Options) error {
	if opts.Logger.GetSink() == nil {
		opts.Logger = opts.Klusterlet.Registration.Logger
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.KlusterletName == "" {
		return klusterlet.Run(ctx, opts.Klusterlet)
	}
	if err := opts.Klusterlet.ReadFiles(); err != nil {
		return err
	}
	cfg := opts.Klusterlet.Registration.ManagedConfig
	if cfg == nil {
		return errors.New("klusterlet operator: Options.Klusterlet.Registration.ManagedConfig is required")
	}
	if opts.StatusResync <= 0 {
		opts.StatusResync = DefaultStatusResync
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("klusterlet operator: scheme: %w", err)
	}
	if err := operatorv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("klusterlet operator: scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("klusterlet operator: managed cluster client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := opts.Logger.WithName("operator")
	w, err := operatorrun.NewWatch[*operatorv1.Klusterlet](ctx, cfg, scheme, opts.KlusterletName, opts.Deployment, log)
	if err != nil {
		return fmt.Errorf("klusterlet operator: %w", err)
	}
	s := &supervisor{opts: opts, c: c, watch: w, log: log}
	flags, _ := s.plan(nil)
	s.flags = flags.running
	err = operatorrun.Runner[*operatorv1.Klusterlet, plan]{
		Source:     w,
		Component:  "the agents",
		Plan:       s.plan,
		Equal:      func(a, b plan) bool { return a.running.equal(b.running) },
		Describe:   func(p plan) any { return p.running.describe() },
		Diff:       func(a, b plan) []string { return a.running.diff(b.running) },
		Start:      s.start,
		MinBackoff: opts.MinBackoff,
		MaxBackoff: opts.MaxBackoff,
		Log:        log,
	}.Run(ctx)
	if err != nil {
		return fmt.Errorf("klusterlet operator: %w", err)
	}
	return nil
}

// supervisor builds the agents RunKlusterlet runs.
type supervisor struct {
	opts  Options
	c     client.Client
	watch *watch
	log   logr.Logger
	// flags is what the agents run with from the flags alone.
	flags running
}

// plan is a klusterlet to run: its options and what of them the Klusterlet sets.
type plan struct {
	opts    klusterlet.Options
	running running
}

// plan is the klusterlet the Klusterlet k (nil: none) asks for.
func (s *supervisor) plan(k *operatorv1.Klusterlet) (plan, error) {
	opts, r := readSettings(k).apply(s.opts.Klusterlet)
	return plan{opts: opts, running: r}, nil
}

// start runs the agents p says, with the status writer in OnRun (in the leader only), until
// ctx ends; a leader hands its Lease over as they stop. Agents that cannot be built fail
// Permanent when they were to run as the flags alone say: the flags are wrong, not the
// Klusterlet, which may yet change.
func (s *supervisor) start(ctx context.Context, p plan) error {
	status := &statusWriter{watch: s.watch, c: s.c, base: s.opts.Klusterlet, opts: p.opts, running: p.running,
		resync: s.opts.StatusResync, log: s.log}
	opts := p.opts
	next := opts.OnRun
	opts.OnRun = func(ctx context.Context, a *klusterlet.Agent) {
		if next != nil {
			done := make(chan struct{})
			go func() { defer close(done); next(ctx, a) }()
			defer func() { <-done }()
		}
		status.run(ctx, a)
	}
	a, err := klusterlet.New(opts)
	if err != nil {
		err = fmt.Errorf("building the klusterlet: %w", err)
		if p.running.equal(s.flags) {
			return operatorrun.Permanent(err)
		}
		return err
	}
	return a.Run(ctx)
}
