// Package work is the klusterlet's work agent: it pulls the ManifestWorks of its cluster
// namespace from the hub, applies their manifests to the managed cluster, anchors what it
// applied in an AppliedManifestWork, reports status and feedback back to the hub, and cleans
// up when a work (or a manifest of it) goes away.
package work

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/sarcache"
)

// userAgent names the agent in both clusters' audit logs.
const userAgent = "flotilla-work-agent"

// Client rates sized for one cluster's burst of works (a rollout of a ManifestWorkReplicaSet,
// 1,000 works created at once in make bench-work) rather than the klusterlet's shared hub
// connection default (50 a second, OCM's): a work costs one hub write (its status; the hub's
// webhook adds the finalizer at create) and about four requests to the managed cluster
// (AppliedManifestWork, read and write of each manifest, applied resources). At 50 a second
// the rate limiter, not either API server, bounded the fan-out (the agent's CPU profile was
// idle). The hub's API Priority and Fairness still shares the hub among clusters.
const (
	hubQPS, hubBurst         = 200, 400
	managedQPS, managedBurst = 400, 800
)

// clientRates sets the hub and managed clients' rates: Config's when set; else at least the
// work agent's own on the hub, where the klusterlet's connection carries the default of all its
// agents, and on the managed cluster the work agent's own unless the caller's config has one.
func clientRates(hub, managed *rest.Config, c Config) {
	hub.QPS, hub.Burst = max(hub.QPS, hubQPS), max(hub.Burst, hubBurst)
	if managed.QPS == 0 {
		managed.QPS, managed.Burst = managedQPS, managedBurst
	}
	if c.HubQPS > 0 {
		hub.QPS = c.HubQPS
	}
	if c.HubBurst > 0 {
		hub.Burst = c.HubBurst
	}
	if c.ManagedQPS > 0 {
		managed.QPS = c.ManagedQPS
	}
	if c.ManagedBurst > 0 {
		managed.Burst = c.ManagedBurst
	}
}

// Agent is a configured work agent.
type Agent struct {
	cfg     Config
	hubHash string
	mgr     manager.Manager
	// sars answers executors' SubjectAccessReviews: the managed cluster, or with
	// ExecutorValidatingCaches a cache over it.
	sars     sarcache.Reviewer
	sarCache *sarcache.Cache
	// watches wake works whose feedback is scraped by Watch (watchEvents feeds the controller).
	watches     *feedbackWatches
	watchEvents chan event.GenericEvent
	// rbacStarted: the RBAC watch has been added to mgr (watchRBAC).
	rbacMu      sync.Mutex
	rbacStarted bool
}

// New validates cfg and builds the agent's controllers without contacting any server.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	scheme := cfg.Scheme
	if scheme == nil {
		scheme = runtime.NewScheme()
		if err := apischeme.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("work agent: %w", err)
		}
	}
	managedCfg := rest.CopyConfig(cfg.ManagedConfig)
	managedCfg.UserAgent = userAgent
	hubCfg := rest.CopyConfig(cfg.HubConfig)
	hubCfg.UserAgent = userAgent
	clientRates(hubCfg, managedCfg, cfg)
	// One mapper for the manager's clients and caches and the manifests: it reads a group's
	// discovery when first needed and again when a kind is unknown (a work may install a CRD
	// and its custom resources together; the kind appears once the CRD is established).
	managedMapper := cfg.ManagedMapper
	if managedMapper == nil {
		httpClient, err := rest.HTTPClientFor(managedCfg)
		if err == nil {
			managedMapper, err = apiutil.NewDynamicRESTMapper(managedCfg, httpClient)
		}
		if err != nil {
			return nil, fmt.Errorf("work agent: managed cluster REST mapper: %w", err)
		}
	}
	skip := true
	mgr, err := ctrl.NewManager(managedCfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 cfg.Logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several agents (one per cluster, or per hub) may share a process, in tests and
		// in flotilla dev.
		Controller:     config.Controller{SkipNameValidation: &skip},
		MapperProvider: mapperProvider(managedMapper),
	})
	if err != nil {
		return nil, fmt.Errorf("work agent: managed cluster manager: %w", err)
	}
	hub, err := cluster.New(hubCfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = cfg.Logger.WithName("hub")
		o.MapperProvider = mapperProvider(cfg.HubMapper)
		// The agent may only read its own cluster namespace.
		o.Cache.DefaultNamespaces = map[string]cache.Config{cfg.ClusterName: {}}
	})
	if err != nil {
		return nil, fmt.Errorf("work agent: hub client: %w", err)
	}
	if err := mgr.Add(hub); err != nil {
		return nil, fmt.Errorf("work agent: %w", err)
	}
	dyn, err := dynamic.NewForConfig(managedCfg)
	if err != nil {
		return nil, fmt.Errorf("work agent: managed cluster client: %w", err)
	}
	a := &Agent{cfg: cfg, hubHash: HubHash(cfg.HubServer), mgr: mgr}
	// Only the authorization group: a full clientset is a client per API group version.
	authz, err := authorizationv1client.NewForConfig(managedCfg)
	if err != nil {
		return nil, fmt.Errorf("work agent: managed cluster client: %w", err)
	}
	a.sars = authz.SubjectAccessReviews()
	if cfg.ExecutorValidatingCaches {
		// RBAC changes drop the answers (rbacWatch); the TTL bounds what they do not show.
		a.sarCache, err = sarcache.New(sarcache.Options{Reviews: a.sars, Name: "executor",
			AllowedTTL: executorCacheTTL, DeniedTTL: executorCacheTTL})
		if err != nil {
			return nil, fmt.Errorf("work agent: %w", err)
		}
		a.sars = a.sarCache
	}
	watchEvents := make(chan event.GenericEvent, 64)
	a.watches = newFeedbackWatches(dyn, cfg.MaxFeedbackWatch, watchEvents, cfg.Logger.WithName("feedback-watch"))
	if err := mgr.Add(a.watches); err != nil {
		return nil, fmt.Errorf("work agent: %w", err)
	}
	a.watchEvents = watchEvents
	if err := a.setup(hub, dyn, managedCfg, managedMapper); err != nil {
		return nil, err
	}
	return a, nil
}

// mapperProvider provides m when set, else what controller-runtime builds by default.
func mapperProvider(m meta.RESTMapper) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	if m == nil {
		return nil
	}
	return func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return m, nil }
}

func (a *Agent) setup(hub cluster.Cluster, dyn dynamic.Interface, managedCfg *rest.Config, mapper meta.RESTMapper) error {
	works := &workReconciler{
		cfg: a.cfg, hubHash: a.hubHash, hub: hub.GetClient(), managed: a.mgr.GetClient(), reader: a.mgr.GetAPIReader(),
		dyn: dyn, mapper: mapper, feedback: newFeedbackReader(a.cfg.FeedbackExtractors, a.cfg.RawFeedbackJSON),
		executor: &executorValidator{reviews: a.sars, managedConfig: managedCfg, statusSync: a.cfg.StatusSyncInterval,
			watchRBAC: func() error { return a.watchRBAC(hub) }},
		watches: a.watches,
		appliers: map[workv1.UpdateStrategyType]applier{
			workv1.UpdateStrategyTypeUpdate:          updateApplier{dyn},
			workv1.UpdateStrategyTypeCreateOnly:      createOnlyApplier{dyn},
			workv1.UpdateStrategyTypeServerSideApply: serverSideApplier{dyn},
			workv1.UpdateStrategyTypeReadOnly:        readOnlyApplier{dyn},
		},
	}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		amw, ok := o.(*workv1.AppliedManifestWork)
		return ok && amw.Spec.HubHash == a.hubHash
	})
	// An AppliedManifestWork change (gone, say) brings its ManifestWork back.
	toWork := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		amw := o.(*workv1.AppliedManifestWork)
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: a.cfg.ClusterName, Name: amw.Spec.ManifestWorkName}}}
	})
	err := ctrl.NewControllerManagedBy(a.mgr).
		Named("work-manifestwork").
		// Works are independent; applying one waits on the managed API server.
		WithOptions(controller.Options{MaxConcurrentReconciles: a.cfg.Workers}).
		WatchesRawSource(source.Kind(hub.GetCache(), &workv1.ManifestWork{}, &handler.TypedEnqueueRequestForObject[*workv1.ManifestWork]{},
			predicate.Or[*workv1.ManifestWork](predicate.TypedGenerationChangedPredicate[*workv1.ManifestWork]{},
				predicate.TypedFuncs[*workv1.ManifestWork]{UpdateFunc: func(e event.TypedUpdateEvent[*workv1.ManifestWork]) bool {
					// Deletion starts and finalizer changes do not change the generation.
					return !e.ObjectNew.DeletionTimestamp.Equal(e.ObjectOld.DeletionTimestamp) ||
						len(e.ObjectNew.Finalizers) != len(e.ObjectOld.Finalizers)
				}}))).
		Watches(&workv1.AppliedManifestWork{}, toWork, builder.WithPredicates(ours, appliedGoing())).
		// Feedback watches and RBAC changes (rbacWatch) wake works.
		WatchesRawSource(source.Channel(a.watchEvents, &handler.EnqueueRequestForObject{})).
		Complete(apply.Quiet(works))
	if err != nil {
		return fmt.Errorf("work agent: %w", err)
	}

	applied := &appliedReconciler{cfg: a.cfg, hubHash: a.hubHash, hub: hub.GetClient(), managed: a.mgr.GetClient(), dyn: dyn, now: time.Now}
	toApplied := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, w *workv1.ManifestWork) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: a.hubHash + "-" + w.Name}}}
	})
	err = ctrl.NewControllerManagedBy(a.mgr).
		Named("work-appliedmanifestwork").
		For(&workv1.AppliedManifestWork{}).
		// A ManifestWork appearing or vanishing starts or stops its AppliedManifestWork's eviction.
		WatchesRawSource(source.Kind(hub.GetCache(), &workv1.ManifestWork{}, toApplied)).
		Complete(apply.Quiet(applied))
	if err != nil {
		return fmt.Errorf("work agent: %w", err)
	}
	return nil
}

// appliedGoing passes the AppliedManifestWork changes its work waits for: its deletion
// starting and its being gone (finalize, and a work applied again after an eviction). The
// agent's own create and status writes are not passed: each would reconcile the work once
// more, on a cached copy its status write had not reached yet (a conflicting write to the
// hub).
func appliedGoing() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectNew.GetDeletionTimestamp().Equal(e.ObjectOld.GetDeletionTimestamp())
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

// rbacWatch: RBAC changes on the managed cluster can change what an executor may apply, so
// cached answers are dropped and the works with an executor tried again, once for a burst of
// changes.
func (a *Agent) rbacWatch(hub cluster.Cluster) *sarcache.RBACWatch {
	return &sarcache.RBACWatch{Name: "work-rbac", Cache: a.sarCache, OnChange: func(ctx context.Context) error {
		works := &workv1.ManifestWorkList{}
		// Read only: the cache's objects need no copies.
		if err := hub.GetCache().List(ctx, works, client.InNamespace(a.cfg.ClusterName), client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the ManifestWorks of %s to retry their executors: %w", a.cfg.ClusterName, err)
		}
		for i := range works.Items {
			w := &works.Items[i]
			if w.Spec.Executor == nil {
				continue
			}
			// Only the name matters to the work controller's queue.
			wake := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name}}
			select {
			case a.watchEvents <- event.GenericEvent{Object: wake}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
}

// watchRBAC starts the RBAC watch (rbacWatch) once, when a work first has an executor: RBAC
// changes matter only to works with an executor and to the answers cached for them, and most
// clusters have none, so most agents hold no informers on RBAC objects. An RBAC change
// before the watch has listed is seen in its first list, whose objects count as changes.
func (a *Agent) watchRBAC(hub cluster.Cluster) error {
	a.rbacMu.Lock()
	defer a.rbacMu.Unlock()
	if a.rbacStarted {
		return nil
	}
	if err := a.rbacWatch(hub).SetupWithManager(a.mgr); err != nil {
		return fmt.Errorf("work agent: starting the RBAC watch: %w", err)
	}
	a.rbacStarted = true
	return nil
}

// Run runs the agent until ctx ends; it returns nil then, or an error if it cannot start.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.mgr.Start(ctx); err != nil {
		return fmt.Errorf("work agent: %w", err)
	}
	return nil
}
