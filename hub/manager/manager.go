// Package manager assembles the hub: it prepares the hub API server (CRDs, bootstrap identity,
// shared agent roles) and runs the registration and work controllers, the admission webhook
// (Rego policies: hub/admission; ManifestWork validation) and the policy loader in one
// controller-runtime manager.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/addon"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/hub/managedserviceaccount"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
	"github.com/flotilla-dev/flotilla/hub/registration/clustersetbinding"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/lease"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/hub/registration/taint"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/addonconversion"
	managedclusterwebhook "github.com/flotilla-dev/flotilla/hub/webhook/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
	overridewebhook "github.com/flotilla-dev/flotilla/hub/webhook/override"
	hubwork "github.com/flotilla-dev/flotilla/hub/work"
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
	// HealthProbeBindAddress serves /healthz (alive) and /readyz (caches synced, webhooks
	// serving) on every replica, leader or not; empty or "0" disables the endpoint.
	HealthProbeBindAddress string
	// PlacementDebugBindAddress serves OCM's placement debug endpoint over HTTPS
	// (placement.DebugServer: GET /debug/placements/<namespace>/<name>; OCM serves it on
	// :8443); empty or "0" disables it.
	PlacementDebugBindAddress string
	// Registry holds the loaded Wasm plugins; nil means a new, empty registry.
	Registry *wasm.Registry
	// Engine compiles Wasm plugins; nil means a new engine caching compiled code in
	// PluginCacheDir (when set), closed when the hub stops.
	Engine         *wasm.Engine
	PluginCacheDir string
	// SkipWasmPluginController leaves loading WasmPlugins into Registry to the caller.
	SkipWasmPluginController bool
	// SkipPluginInstall does not install the built-in plugins (csr-renewal, ...).
	SkipPluginInstall bool
	// AutoApprove configures the csr-autoapprove plugin; it is installed only when set.
	AutoApprove plugininstall.AutoApprove
	// Webhook configures the admission webhook server (hub/webhook): the Rego policies
	// (hub/admission) and the ManifestWork validation; the zero value serves on a free port of
	// 127.0.0.1. Webhook.Disabled turns it off, and with it every admission gate.
	Webhook webhook.Options
	// PolicyEvalTimeout bounds the evaluation of one admission request's policies; 0 means
	// admission.DefaultEvalTimeout.
	PolicyEvalTimeout time.Duration
	// PolicyNamespace holds the policy ConfigMaps; empty means policy.DefaultNamespace.
	PolicyNamespace string
	// WorkMaxSize caps the total size of a ManifestWork's manifests in bytes; 0 means
	// manifestwork.DefaultMaxSize (500 KiB).
	WorkMaxSize int
	// CleanupHooks run when a ManagedCluster is deleted, before its namespace goes (after
	// the hub's own, which waits for the cluster's ManifestWorks to be cleaned up).
	CleanupHooks []managedcluster.CleanupHook
	// Addons names the built-in add-ons the hub serves (hub/addon/builtin.Names():
	// cluster-proxy, managed-serviceaccount, cluster-gateway; none by default). cluster-gateway
	// needs the other two; cluster-proxy and cluster-gateway serve aggregated APIs on the
	// webhook server (Webhook must not be disabled).
	Addons []string
	// AddonsInstallAll installs the built-in add-ons of Addons on every cluster: their
	// ClusterManagementAddOns, when the hub creates them, use installStrategy Placements over
	// Placement global in open-cluster-management-addon, which the hub creates with its
	// ManagedClusterSetBinding when absent (as upstream's charts' agentInstallAll).
	AddonsInstallAll bool
	// GatewaySecretNamespace holds the cluster-gateway's credential Secrets; empty means
	// open-cluster-management-credentials (created when absent).
	GatewaySecretNamespace string
	// ClusterProxyServerCount is the number of hub replicas serving cluster-proxy tunnels:
	// each agent keeps a stream to that many distinct replicas. 0 means 1.
	ClusterProxyServerCount int
	// ClusterProxyBindAddress serves cluster-proxy's ProxyService (konnectivity clients, as
	// OCM's proxy server's port 8090) with mutual TLS: clients present the proxy-client
	// certificate (clusterproxy.FrontendTLS). Empty or "0": off. Needs add-on cluster-proxy.
	ClusterProxyBindAddress string
	// Dashboard serves the fleet dashboard (hub/dashboard) as the aggregated API
	// dashboard.flotilla.dev/v1alpha1 on the webhook server (DashboardPath), in the
	// add-on manager's process: viewers authenticate to the hub API server, need get on
	// dashboards/proxy (DashboardViewerClusterRole) and see what their own RBAC lets them list.
	// The hub's identity then needs list and watch of everything the page shows.
	Dashboard bool
	// Components are further controllers added to the same manager (the WasmPlugin
	// controller, the plugin installer, later issues' hub controllers), in every process
	// whatever Run says.
	Components []Component
	// Run names the hub components (ComponentNames, OCM's) this process runs; empty means
	// every one, the single-process hub. Each component's controllers, webhook handlers and
	// cluster-wide setup (Prepare) run only where it is named; a process without
	// RegistrationController installs no CRDs (call WaitForCRDs before New); one
	// without RegistrationWebhook, WorkWebhook and AddonManager runs no webhook server, and
	// one of webhook components only runs no leader election.
	Run ComponentSet
	// LeaderElection lets several hub replicas run: one (the holder of a Lease) runs the
	// controllers, every replica serves the webhooks with the policies loaded.
	LeaderElection LeaderElection
	Logger         logr.Logger
}

// LeaderElection configures the hub replicas' election (core/leaderelection, the klusterlet's
// too). Zero values take the defaults: the Lease DefaultLeaderElectionName in
// DefaultLeaderElectionNamespace, OCM's controller timings (137 s lease, 107 s renew deadline,
// 26 s retry), which ride out an API server restart without a change of leader.
type LeaderElection = leaderelection.Config

// Defaults of LeaderElection.
const (
	DefaultLeaderElectionNamespace = "open-cluster-management-hub"
	DefaultLeaderElectionName      = "flotilla-hub-lock"
	DefaultLeaseDuration           = leaderelection.DefaultLeaseDuration
	DefaultRenewDeadline           = leaderelection.DefaultRenewDeadline
	DefaultRetryPeriod             = leaderelection.DefaultRetryPeriod
)

// The hub's client rate when its config sets none.
const (
	DefaultQPS   = 200
	DefaultBurst = 400
)

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
	opts      Options
	mgr       ctrl.Manager
	elector   *leaderelection.Elector // nil without leader election
	registry  *wasm.Registry
	engine    *wasm.Engine
	ownEngine bool
	webhooks  *webhook.Server
	// policyLoader keeps the admission policies in step with the policy ConfigMaps.
	policyLoader *admission.Loader
	// policyRBAC drops the admission's cached SubjectAccessReview answers when RBAC changes.
	policyRBAC *sarcache.RBACWatch
	// addons are the components of the enabled built-in add-ons (setupAddons).
	addons []Component
	// clusterProxy is the cluster-proxy server when that add-on is enabled.
	clusterProxy *clusterproxy.Server
	// clusterProxyFrontendAddr is where the ProxyService frontend listens, if it does.
	clusterProxyFrontendAddr net.Addr
	// dashboard are the dashboard's components when Options.Dashboard is set.
	dashboard []Component
	// parts are what setup added, with the component each belongs to.
	parts []part
}

// part is one controller, runnable or webhook handler set up, and its hub component ("":
// the WasmPlugin controller, in every process whose components load plugins).
type part struct {
	component string
	what      any
}

// NewScheme returns a scheme with client-go's types and every Flotilla API group.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := apischeme.AddToScheme(s); err != nil {
		return nil, err
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
	if err := opts.validateAddons(); err != nil {
		return nil, err
	}
	if err := opts.validateRun(); err != nil {
		return nil, err
	}
	// client-go's defaults (5 requests a second) would throttle a hub deciding thousands of
	// placements; a config that sets its own rate keeps it.
	if opts.Config.QPS == 0 {
		opts.Config = rest.CopyConfig(opts.Config)
		opts.Config.QPS, opts.Config.Burst = DefaultQPS, DefaultBurst
	}
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, fmt.Errorf("hub: scheme: %w", err)
	}
	skip := true
	opts.LeaderElection = opts.LeaderElection.WithDefaults(DefaultLeaderElectionNamespace, DefaultLeaderElectionName)
	mgrOpts := ctrl.Options{
		Scheme:  scheme,
		Logger:  opts.Logger,
		Metrics: metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		// Several hubs may share a process (tests, benchmarks): controller names repeat.
		// Each controller reconciles up to ControllerWorkers objects at once (one at a time
		// per object, as controller-runtime guarantees): with one worker, 5,000 clusters
		// joining queued hours of work behind the per-cluster controllers (managed cluster
		// namespace and RBAC, CSR approval, taints; make bench-fleet's controller table).
		Controller:             config.Controller{SkipNameValidation: &skip, MaxConcurrentReconciles: ControllerWorkers},
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			// Only cluster heartbeats, not node or leader-election leases.
			&coordinationv1.Lease{}: {Field: fields.OneTermEqualSelector("metadata.name", lease.Name)},
		}},
	}
	var elector *leaderelection.Elector
	// Webhooks serve on every replica: a process of webhook components only has nothing to elect for.
	if opts.LeaderElection.Enabled && !opts.webhookOnly() {
		if elector, err = leaderelection.New(opts.Config, opts.LeaderElection, "flotilla-hub", opts.Logger.WithName("leader-election")); err != nil {
			return nil, fmt.Errorf("hub: %w", err)
		}
		elector.ManagerOptions(&mgrOpts)
	}
	mgr, err := ctrl.NewManager(opts.Config, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("hub: manager: %w", err)
	}
	h := &Hub{opts: opts, mgr: mgr, elector: elector, registry: opts.Registry, engine: opts.Engine}
	if h.engine == nil && !opts.SkipWasmPluginController {
		e, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{CacheDir: opts.PluginCacheDir, Logger: opts.Logger.WithName("wasm")})
		if err != nil {
			return nil, fmt.Errorf("hub: wasm engine: %w", err)
		}
		h.engine, h.ownEngine = e, true
	}
	if err := h.setup(); err != nil {
		return nil, errors.Join(err, h.closeEngine())
	}
	if err := h.addHealthChecks(); err != nil {
		return nil, errors.Join(err, h.closeEngine())
	}
	return h, nil
}

// ControllerWorkers is how many objects each hub controller reconciles at once unless it sets
// its own count (placement, add-on deploy).
const ControllerWorkers = 8

func (h *Hub) setup() error {
	mgr, c := h.mgr, h.mgr.GetClient()
	kube, err := kubernetes.NewForConfig(h.opts.Config)
	if err != nil {
		return fmt.Errorf("hub: clientset: %w", err)
	}
	placements := &placement.Reconciler{Client: c, Scheduler: scheduler.New(h.registry, plugininstall.BuiltinPrioritizerPlugin), Registry: h.registry}
	parts := []part{
		// The works of a deleted cluster are cleaned before its namespace goes.
		{RegistrationController, &managedcluster.Reconciler{Client: c, Hooks: append([]managedcluster.CleanupHook{hubwork.CleanupHook(c)}, h.opts.CleanupHooks...)}},
		{WorkController, &hubwork.AvailabilityReconciler{Client: c}},
		{WorkController, &hubwork.CompletedReconciler{Client: c, Gates: h.opts.FeatureGates}},
		{RegistrationController, &lease.Reconciler{Client: c, APIReader: mgr.GetAPIReader()}},
		{RegistrationController, &taint.Reconciler{Client: c}},
		{RegistrationController, &clusterset.StatusReconciler{Client: c}},
		{RegistrationController, &clustersetbinding.Reconciler{Client: c}},
		{PlacementController, placements},
		{RegistrationController, &csr.Reconciler{
			Client:    c,
			Kube:      kube,
			Reviewers: csr.RegistryReviewers{Registry: h.registry},
			Recorder:  mgr.GetEventRecorder("flotilla-csr-approval"),
			AutoAccept: func() bool {
				return h.opts.FeatureGates.Enabled(featuregates.ManagedClusterAutoApproval)
			},
		}},
	}
	if h.opts.FeatureGates.Enabled(featuregates.ManifestWorkReplicaSet) {
		parts = append(parts, part{WorkController, &mwrs.Reconciler{Client: c, CEL: &scheduler.CELMatcher{},
			Transformer: &override.WasmTransformer{Registry: h.registry, Reader: c}}},
			part{WorkController, &mwrs.OverrideReconciler{Client: c}})
	}
	if h.opts.FeatureGates.Enabled(featuregates.AddonManagement) {
		parts = append(parts, part{AddonManager, &addon.Manager{Client: c, Registry: h.registry, MaxWorkSize: h.opts.WorkMaxSize, Builtins: h.opts.Addons, BuiltinsInstallAll: h.opts.AddonsInstallAll}})
	}
	if h.addonEnabled(builtin.ManagedServiceAccount) {
		parts = append(parts, part{AddonManager, &managedserviceaccount.TTLReconciler{Client: c, Gates: h.opts.FeatureGates,
			Recorder: mgr.GetEventRecorder("flotilla-" + managedserviceaccount.ControllerName)}})
	}
	if h.opts.FeatureGates.Enabled(featuregates.DefaultClusterSet) {
		parts = append(parts,
			part{RegistrationController, &clusterset.DefaultSetsReconciler{Client: c}},
			part{RegistrationController, &clusterset.DefaultLabelReconciler{Client: c}})
	}
	if addr := h.opts.PlacementDebugBindAddress; addr != "" && addr != "0" {
		parts = append(parts, part{PlacementController, &placementDebug{ComponentFunc(func(mgr ctrl.Manager) error {
			srv, err := placement.NewDebugServer(h.opts.Config, placements,
				placement.DebugOptions{BindAddress: addr, Logger: h.opts.Logger.WithName("placement-debug")})
			if err != nil {
				return err
			}
			return mgr.Add(srv)
		})}})
	}
	// Each process loads the plugin types its components use (all of them in the
	// single-process hub), and leaves the status of the others to the process that does.
	if types := h.opts.pluginTypes(); !h.opts.SkipWasmPluginController && (types == nil || len(types) > 0) {
		parts = append(parts, part{"", &wasmPluginController{ComponentFunc(func(mgr ctrl.Manager) error {
			return wasmplugin.SetupWithManager(mgr, h.engine, h.registry, types...)
		})}})
	}
	var components []Component
	for _, p := range parts {
		if p.component == "" || h.opts.runs(p.component) {
			components = append(components, p.what.(Component))
			h.parts = append(h.parts, p)
		}
	}
	if err := h.setupWebhooks(kube); err != nil {
		return err
	}
	if h.webhooks != nil {
		components = append(components, h.webhooks)
	}
	if h.policyLoader != nil {
		components = append(components, h.policyLoader, h.policyRBAC)
	}
	components = append(components, h.addons...)
	components = append(components, h.dashboard...)
	components = append(components, h.opts.Components...)
	for _, comp := range components {
		if err := comp.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("hub: setting up %T: %w", comp, err)
		}
	}
	return nil
}

// placementDebug and wasmPluginController name their ComponentFuncs in Hub.parts.
type (
	placementDebug       struct{ ComponentFunc }
	wasmPluginController struct{ ComponentFunc }
)

// Manager is the underlying controller-runtime manager.
func (h *Hub) Manager() ctrl.Manager { return h.mgr }

// Registry is the Wasm plugin registry CSR approval reads from.
func (h *Hub) Registry() *wasm.Registry { return h.registry }

// Prepare installs what the controllers and agents rely on: CRDs (unless skipped), the
// bootstrap identity, the shared registration and work roles and the agents' API Priority
// and Fairness levels; it removes the
// ValidatingAdmissionPolicies older hubs installed (the Rego policies replace them). Each
// step is its component's (Options.Run): only the registration controller installs the CRDs
// (the others wait for them before New: WaitForCRDs).
func (h *Hub) Prepare(ctx context.Context) error {
	o := &h.opts
	registration := o.runs(RegistrationController)
	if registration && !o.SkipCRDInstall {
		if err := crds.Install(ctx, o.Config); err != nil {
			return fmt.Errorf("hub: installing CRDs: %w", err)
		}
	}
	c, err := client.New(o.Config, client.Options{Scheme: h.mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("hub: client: %w", err)
	}
	if h.elector != nil {
		// The election's Lease lives there: it must exist before the manager starts.
		if err := h.elector.EnsureNamespace(ctx); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	if registration {
		if err := bootstrap.Ensure(ctx, c); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		for _, role := range []client.Object{rbac.RegistrationClusterRole(), rbac.WorkClusterRole()} {
			if err := rbac.Apply(ctx, c, role); err != nil {
				return fmt.Errorf("hub: shared agent roles: %w", err)
			}
		}
		// The agents' own API Priority and Fairness levels, so a large fleet's heartbeats are
		// never queued behind its other requests (rbac.FlowControl).
		for _, obj := range rbac.FlowControl() {
			if err := rbac.Apply(ctx, c, obj); err != nil {
				return fmt.Errorf("hub: flow control for the managed clusters' agents: %w", err)
			}
		}
	}
	if err := h.hubFlowControl(ctx, c); err != nil {
		return err
	}
	if o.runs(RegistrationWebhook) {
		if err := admission.RemoveLegacy(ctx, c); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	if registration && !o.SkipPluginInstall {
		if err := plugininstall.Install(ctx, c, o.AutoApprove); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
	}
	if !o.runs(AddonManager) {
		return nil
	}
	return h.prepareAddons(ctx, c)
}

// FlowSchemaName is the FlowSchema of a hub process running components (rbac.HubName for
// the single-process hub): flotilla-hub-<component>[-<component>...], sorted.
func FlowSchemaName(components ComponentSet) string {
	if len(components) == 0 || components.Len() == len(ComponentNames()) {
		return rbac.HubName
	}
	return rbac.HubName + "-" + strings.Join(sets.List(components), "-")
}

// hubFlowControl puts the hub's own requests in the workload-high priority level
// (rbac.HubFlowSchema), under the identity the API server sees for it.
func (h *Hub) hubFlowControl(ctx context.Context, c client.Client) error {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return fmt.Errorf("hub: learning its own identity for its flow schema: %w", err)
	}
	fs := rbac.HubFlowSchema(review.Status.UserInfo.Username, review.Status.UserInfo.Groups)
	if fs == nil {
		return nil
	}
	// Each process of a split hub runs as its own identity: one FlowSchema each, named after
	// its components, so that none replaces another's subject.
	if !h.opts.runsAll() {
		fs.Name = FlowSchemaName(h.opts.Run)
	}
	if err := rbac.Apply(ctx, c, fs); err != nil {
		return fmt.Errorf("hub: flow schema %s for its own requests: %w", fs.Name, err)
	}
	return nil
}

func (h *Hub) closeEngine() error {
	if !h.ownEngine {
		return nil
	}
	return h.engine.Close(context.Background())
}

// Start prepares the hub API server and runs the controllers until ctx ends. The engine the
// hub created is closed when it returns; a Hub is started once.
func (h *Hub) Start(ctx context.Context) error {
	if err := h.Prepare(ctx); err != nil {
		return errors.Join(err, h.closeEngine())
	}
	return h.Run(ctx)
}

// Run runs the controllers until ctx ends, for callers that called Prepare themselves.
func (h *Hub) Run(ctx context.Context) error {
	return errors.Join(h.mgr.Start(ctx), h.closeEngine())
}

// setupWebhooks creates the admission webhook server with the handlers of the process's
// webhook components (registration-webhook: ManagedCluster defaults and the policy admission;
// work-webhook: ManifestWork validation and the policy admission; addon-manager: the add-on
// conversion, the built-in add-ons' APIs and the dashboard), unless disabled or none of them
// runs.
func (h *Hub) setupWebhooks(kube kubernetes.Interface) error {
	o := &h.opts
	if o.Webhook.Disabled || !(o.runs(RegistrationWebhook) || o.runs(WorkWebhook) || o.runs(AddonManager)) {
		return nil
	}
	opts := o.Webhook
	if opts.Logger.GetSink() == nil {
		opts.Logger = o.Logger.WithName("webhook")
	}
	srv, err := webhook.New(o.Config, opts)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	register := func(component string, r webhook.Validating) error {
		if !o.runs(component) {
			return nil
		}
		if err := srv.Register(r); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		h.parts = append(h.parts, part{component, r})
		return nil
	}
	if err := register(WorkWebhook, manifestwork.New(manifestwork.Options{MaxSize: o.WorkMaxSize})); err != nil {
		return err
	}
	if err := register(WorkWebhook, manifestwork.NewFinalizer(h.mgr.GetClient())); err != nil {
		return err
	}
	if err := register(WorkWebhook, overridewebhook.New(overridewebhook.Options{})); err != nil {
		return err
	}
	if err := register(RegistrationWebhook, managedclusterwebhook.NewDefaults()); err != nil {
		return err
	}
	// The add-on kinds are served at v1beta1 too, converted here (v1alpha1 is stored).
	if o.runs(AddonManager) {
		conv := addonconversion.New()
		if err := srv.RegisterConversion(conv); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		h.parts = append(h.parts, part{AddonManager, conv})
	}
	// The policies gate both webhook components' groups (each registers its own when they run
	// apart), and the cluster-gateway's requests.
	admits := o.runs(RegistrationWebhook) || o.runs(WorkWebhook)
	var policies *admission.Handler
	if admits || h.addonEnabled(builtin.ClusterGateway) {
		if policies, err = h.setupPolicies(kube, srv); err != nil {
			return err
		}
	}
	if admits {
		if err := srv.Register(policies); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		h.parts = append(h.parts, part{RegistrationWebhook + "," + WorkWebhook, policies})
	}
	if h.addons, err = h.setupAddons(kube, srv, policies); err != nil {
		return err
	}
	for _, a := range h.addons {
		h.parts = append(h.parts, part{AddonManager, a})
	}
	if o.Dashboard {
		if h.dashboard, err = h.setupDashboard(kube, srv); err != nil {
			return err
		}
		for _, d := range h.dashboard {
			h.parts = append(h.parts, part{AddonManager, d})
		}
	}
	h.webhooks = srv
	return nil
}

// policyGroups are the API groups whose policies the process's webhook registers: the
// work-webhook serves work.open-cluster-management.io (execute-as), the registration-webhook
// every other group; a process running both (or neither: the cluster-gateway only evaluates)
// registers all.
func (o *Options) policyGroups() admission.Groups {
	work := []string{workv1.GroupVersion.Group}
	switch reg, wrk := o.runs(RegistrationWebhook), o.runs(WorkWebhook); {
	case reg && !wrk:
		return admission.Groups{Except: work}
	case wrk && !reg:
		return admission.Groups{Only: work}
	}
	return admission.Groups{}
}

// setupPolicies builds the policy admission: the handler and the loader of policy ConfigMaps.
func (h *Hub) setupPolicies(kube kubernetes.Interface, srv *webhook.Server) (*admission.Handler, error) {
	sars, err := sarcache.New(sarcache.Options{Reviews: kube.AuthorizationV1().SubjectAccessReviews(), Name: "admission"})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	handler, loader, err := admission.New(admission.Options{
		Reviews:      sars,
		WhoAmI:       admission.WhoAmI(kube),
		Clusters:     h.mgr.GetClient(),
		FeatureGates: h.opts.FeatureGates,
		EvalTimeout:  h.opts.PolicyEvalTimeout,
		Namespace:    h.opts.PolicyNamespace,
		Groups:       h.opts.policyGroups(),
		Logger:       h.opts.Logger.WithName("admission"),
	})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	loader.Resync = srv.Resync
	h.policyLoader = loader
	h.policyRBAC = &sarcache.RBACWatch{Name: "admission-rbac", Cache: sars}
	return handler, nil
}

// ClusterProxy is the cluster-proxy server (the hub's Dialer into its clusters), nil unless
// the add-on cluster-proxy is enabled.
func (h *Hub) ClusterProxy() *clusterproxy.Server { return h.clusterProxy }

// Webhooks is the admission webhook server, nil when Options.Webhook.Disabled. Further
// handlers register with it (before or after Run); Ready says when they are in effect.
func (h *Hub) Webhooks() *webhook.Server { return h.webhooks }
