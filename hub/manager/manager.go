// Package manager assembles the hub: it prepares the hub API server (CRDs, bootstrap identity,
// shared agent roles, the hubAcceptsClient admission policy) and runs the registration
// controllers in one controller-runtime manager.
package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/registration/admission"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
	"github.com/flotilla-dev/flotilla/hub/registration/clustersetbinding"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/lease"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/hub/registration/taint"
)

// Options configures a hub.
type Options struct {
	// Config reaches the hub API server with enough rights to manage RBAC and approve CSRs.
	Config *rest.Config
	// FeatureGates: nil means the defaults of featuregates.DefaultHubRegistrationFeatureGates.
	FeatureGates featuregate.FeatureGate
	// SkipCRDInstall leaves CRD installation to someone else.
	SkipCRDInstall bool
	// MetricsBindAddress serves Prometheus metrics; empty or "0" disables the endpoint.
	MetricsBindAddress string
	// Registry holds the loaded Wasm plugins; nil means a new, empty registry.
	Registry *wasm.Registry
	// CleanupHooks run when a ManagedCluster is deleted, before its namespace goes.
	CleanupHooks []managedcluster.CleanupHook
	// Components are further controllers added to the same manager (the WasmPlugin
	// controller, the plugin installer, later issues' hub controllers).
	Components []Component
	Logger     logr.Logger
}

// Component adds itself to the hub's manager.
type Component interface {
	SetupWithManager(mgr ctrl.Manager) error
}

// ComponentFunc adapts a function to Component.
type ComponentFunc func(mgr ctrl.Manager) error

// SetupWithManager calls f.
func (f ComponentFunc) SetupWithManager(mgr ctrl.Manager) error { return f(mgr) }

// Hub is a configured, not yet started hub.
type Hub struct {
	opts     Options
	mgr      ctrl.Manager
	registry *wasm.Registry
}

// NewScheme returns a scheme with client-go's types and the registration API groups.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, clusterv1beta2.AddToScheme, clusterv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewFeatureGate returns the hub registration feature gate with its defaults.
func NewFeatureGate() (featuregate.MutableFeatureGate, error) {
	return featuregates.NewGate(featuregates.DefaultHubRegistrationFeatureGates())
}

// New builds the hub's manager and controllers without contacting the API server.
func New(opts Options) (*Hub, error) {
	if opts.Config == nil {
		return nil, errors.New("hub: Options.Config is required")
	}
	if opts.FeatureGates == nil {
		g, err := NewFeatureGate()
		if err != nil {
			return nil, err
		}
		opts.FeatureGates = g
	}
	if opts.Registry == nil {
		opts.Registry = wasm.NewRegistry()
	}
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("hub: scheme: %w", err)
	}
	skip := true
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme:  scheme,
		Logger:  opts.Logger,
		Metrics: metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		// Several hubs may share a process (tests, benchmarks): controller names repeat.
		Controller:             config.Controller{SkipNameValidation: &skip},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Only cluster heartbeats, not node or leader-election leases.
			&coordinationv1.Lease{}: {Field: fields.OneTermEqualSelector("metadata.name", lease.Name)},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("hub: manager: %w", err)
	}
	h := &Hub{opts: opts, mgr: mgr, registry: opts.Registry}
	if err := h.setup(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Hub) setup() error {
	mgr, c := h.mgr, h.mgr.GetClient()
	kube, err := kubernetes.NewForConfig(h.opts.Config)
	if err != nil {
		return fmt.Errorf("hub: clientset: %w", err)
	}
	components := []Component{
		&managedcluster.Reconciler{Client: c, Hooks: h.opts.CleanupHooks},
		&lease.Reconciler{Client: c},
		&taint.Reconciler{Client: c},
		&clusterset.StatusReconciler{Client: c},
		&clustersetbinding.Reconciler{Client: c},
		&csr.Reconciler{
			Client:    c,
			Kube:      kube,
			Reviewers: csr.RegistryReviewers{Registry: h.registry},
			Recorder:  mgr.GetEventRecorder("flotilla-csr-approval"),
		},
	}
	if h.opts.FeatureGates.Enabled(featuregates.DefaultClusterSet) {
		components = append(components,
			&clusterset.DefaultSetsReconciler{Client: c},
			&clusterset.DefaultLabelReconciler{Client: c})
	}
	components = append(components, h.opts.Components...)
	for _, comp := range components {
		if err := comp.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("hub: setting up %T: %w", comp, err)
		}
	}
	return nil
}

// Manager is the underlying controller-runtime manager.
func (h *Hub) Manager() ctrl.Manager { return h.mgr }

// Registry is the Wasm plugin registry CSR approval reads from.
func (h *Hub) Registry() *wasm.Registry { return h.registry }

// Prepare installs what the controllers and agents rely on: CRDs (unless skipped), the
// bootstrap identity, the shared registration and work roles, and the admission policy.
func (h *Hub) Prepare(ctx context.Context) error {
	if !h.opts.SkipCRDInstall {
		if err := crds.Install(ctx, h.opts.Config); err != nil {
			return fmt.Errorf("hub: installing CRDs: %w", err)
		}
	}
	c, err := client.New(h.opts.Config, client.Options{Scheme: h.mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("hub: client: %w", err)
	}
	if err := bootstrap.Ensure(ctx, c); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	for _, role := range []client.Object{rbac.RegistrationClusterRole(), rbac.WorkClusterRole()} {
		if err := rbac.Apply(ctx, c, role); err != nil {
			return fmt.Errorf("hub: shared agent roles: %w", err)
		}
	}
	if err := admission.Ensure(ctx, c); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}

// Start prepares the hub API server and runs the controllers until ctx ends.
func (h *Hub) Start(ctx context.Context) error {
	if err := h.Prepare(ctx); err != nil {
		return err
	}
	return h.mgr.Start(ctx)
}
