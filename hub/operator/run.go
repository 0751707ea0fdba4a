package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// Options configures RunHub.
type Options struct {
	// Hub is the hub's configuration from its flags. Hub.FeatureGates holds the defaults and
	// --feature-gates (nil: the defaults); every run works on a copy with the ClusterManager's
	// gates set over them. Hub.Components are set up in every run's manager.
	Hub manager.Options
	// ClusterManagerName is the ClusterManager the hub takes its settings from
	// (operatorv1.ClusterManagerName); empty ignores the API: the hub runs from Hub alone,
	// once, as manager.New and Start would.
	ClusterManagerName string
	// Deployment is the hub's own Deployment, reported in the ClusterManager's status; zero
	// when the hub does not run in one. operatorrun.DeploymentFromEnv reads it from the Pod's
	// environment.
	Deployment types.NamespacedName
	// MinBackoff and MaxBackoff bound the wait before a hub that failed is started again,
	// doubling from one to the other; defaults 1 s and 1 min.
	MinBackoff, MaxBackoff time.Duration
	// StatusResync is how often the status is computed again when nothing was seen to change
	// (a Deployment rolling out is also watched); default DefaultStatusResync.
	StatusResync time.Duration
	// Logger defaults to Hub.Logger.
	Logger logr.Logger
}

// watch follows the ClusterManager and the hub's Deployment.
type watch = operatorrun.Watch[*operatorv1.ClusterManager]

// RunHub runs the hub until ctx ends, with the settings of the ClusterManager named
// opts.ClusterManagerName over those of opts.Hub; see the package documentation. It returns
// nil when ctx ends, and an error only when opts cannot build a hub.
func RunHub(ctx context.Context, opts Options) error {
	if opts.Logger.GetSink() == nil {
		opts.Logger = opts.Hub.Logger
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.Hub.Config == nil {
		return errors.New("hub operator: Options.Hub.Config is required")
	}
	if opts.ClusterManagerName == "" {
		h, err := manager.New(opts.Hub)
		if err != nil {
			return err
		}
		return h.Start(ctx)
	}
	if opts.StatusResync <= 0 {
		opts.StatusResync = DefaultStatusResync
	}
	known, err := knownGates(opts.Hub.FeatureGates)
	if err != nil {
		return err
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return fmt.Errorf("hub operator: scheme: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := opts.Logger.WithName("operator")
	w, err := operatorrun.NewWatch[*operatorv1.ClusterManager](ctx, opts.Hub.Config, scheme, opts.ClusterManagerName, opts.Deployment, log)
	if err != nil {
		return fmt.Errorf("hub operator: %w", err)
	}
	s := &supervisor{opts: opts, known: known, watch: w, log: log}
	err = operatorrun.Runner[*operatorv1.ClusterManager, plan]{
		Source:     w,
		Component:  "the hub",
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
		return fmt.Errorf("hub operator: %w", err)
	}
	return nil
}

// supervisor builds the hubs RunHub runs.
type supervisor struct {
	opts  Options
	known []string
	watch *watch
	log   logr.Logger
}

// plan is a hub to run: its options and what of them the ClusterManager sets.
type plan struct {
	opts    manager.Options
	running running
}

// plan is the hub the ClusterManager cm (nil: none) asks for.
func (s *supervisor) plan(cm *operatorv1.ClusterManager) (plan, error) {
	opts, r, err := readSettings(cm, s.known).apply(s.opts.Hub)
	return plan{opts: opts, running: r}, err
}

// start builds the hub p says, with the status writer as a Component, and runs it until ctx
// ends; as the hub stops it hands its leader Lease over (hub/manager releases it on cancel).
// A hub that cannot be built fails Permanent: its options are wrong.
func (s *supervisor) start(ctx context.Context, p plan) error {
	related, err := relatedResources(p.opts, p.running, s.opts.Deployment)
	if err != nil {
		return operatorrun.Permanent(fmt.Errorf("building the hub: %w", err))
	}
	status := &statusWriter{watch: s.watch, base: s.opts.Hub, known: s.known, running: p.running, related: related,
		resync: s.opts.StatusResync, log: s.log}
	opts := p.opts
	opts.Components = append(append([]manager.Component(nil), opts.Components...), status.component())
	h, err := manager.New(opts)
	if err != nil {
		return operatorrun.Permanent(fmt.Errorf("building the hub: %w", err))
	}
	if wh := h.Webhooks(); wh != nil {
		status.ready = wh.Ready()
	}
	return h.Start(ctx)
}
