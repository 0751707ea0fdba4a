package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// OperatorOptions configure the hub operator (`flotilla operator hub`).
type OperatorOptions struct {
	Config *rest.Config
	// ClusterManagerName is the ClusterManager the operator deploys; default
	// operatorv1.ClusterManagerName.
	ClusterManagerName string
	// Namespace holds the values ConfigMap and the Lease; default OperatorNamespace.
	Namespace string
	// Image replaces empty and OCM image pull specs; default $FLOTILLA_IMAGE, "" the chart's.
	Image string
	// LeaderElection of the operator's replicas; its Lease defaults to OperatorLease in
	// Namespace.
	LeaderElection leaderelection.Config
	// HealthProbeBindAddress serves /healthz and /readyz; "" or "0" off.
	HealthProbeBindAddress string
	Logger                 logr.Logger
}

// RunClusterManagerOperator runs the hub operator until ctx ends: one manager, two
// reconcilers (deploy, status) of the one ClusterManager.
func RunClusterManagerOperator(ctx context.Context, opts OperatorOptions) error {
	if opts.Config == nil {
		return errors.New("hub operator: no rest.Config")
	}
	name := cmp.Or(opts.ClusterManagerName, operatorv1.ClusterManagerName)
	ns := cmp.Or(opts.Namespace, OperatorNamespace)
	image := cmp.Or(opts.Image, ownImage())
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		return err
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		return err
	}
	mopts := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: cmp.Or(opts.HealthProbeBindAddress, "0"),
		// Least privilege: the operator reads Deployments in the hub namespace and
		// ConfigMaps in its own only.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Namespaces: map[string]cache.Config{operatorv1.ClusterManagerDefaultNamespace: {}}},
			&corev1.ConfigMap{}:  {Namespaces: map[string]cache.Config{ns: {}}},
		}},
	}
	if opts.LeaderElection.Enabled {
		le := opts.LeaderElection.WithDefaults(ns, OperatorLease)
		if err := leaderelection.Manager(ctx, opts.Config, le, "flotilla-hub-operator", log.WithName("leader-election"), &mopts); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(opts.Config, mopts)
	if err != nil {
		return fmt.Errorf("hub operator: %w", err)
	}
	deploy := &deployReconciler{client: mgr.GetClient(), config: opts.Config, name: name, opNamespace: ns, ownImage: image, log: log}
	status := &statusReconciler{client: mgr.GetClient(), name: name, opNamespace: ns, ownImage: image}
	for _, c := range []manager.Component{
		manager.ComponentFunc(func(mgr ctrl.Manager) error { return deploy.setup(mgr, name) }),
		manager.ComponentFunc(func(mgr ctrl.Manager) error { return status.setup(mgr, name) }),
	} {
		if err := c.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("hub operator: %w", err)
		}
	}
	if opts.HealthProbeBindAddress != "" && opts.HealthProbeBindAddress != "0" {
		if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("cache", func(r *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(r.Context()) {
				return errors.New("caches not synced")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	log.Info("hub operator starting", "clusterManager", name, "namespace", ns, "image", image)
	return mgr.Start(ctx)
}

// toClusterManager maps every event to the one ClusterManager.
func toClusterManager(name string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	})
}

func named(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == name })
}

// ours selects what the operator applied for the ClusterManager.
func ours(name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()
		return l[ManagedByLabel] == ManagedByValue && l[ClusterManagerLabel] == name
	})
}

// Controllers are named after the ClusterManager (cluster-manager-deploy by default): names
// are unique per process.
func (r *deployReconciler) setup(mgr ctrl.Manager, name string) error {
	return ctrl.NewControllerManagedBy(mgr).Named(name+"-deploy").
		For(&operatorv1.ClusterManager{}, builder.WithPredicates(named(name), predicate.Or(predicate.GenerationChangedPredicate{}, deleted()))).
		// A Deployment's spec changed or deleted by someone else is applied again.
		Watches(&appsv1.Deployment{}, toClusterManager(name), builder.WithPredicates(ours(name), predicate.Or(predicate.GenerationChangedPredicate{}, deleted()))).
		Watches(&corev1.ConfigMap{}, toClusterManager(name), builder.WithPredicates(named(ValuesConfigMap))).
		Complete(apply.Quiet(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			r.recheck = false
			err := r.reconcile(ctx)
			if r.recheck && err == nil {
				return reconcile.Result{RequeueAfter: retireGrace}, nil
			}
			return reconcile.Result{}, err
		})))
}

func (r *statusReconciler) setup(mgr ctrl.Manager, name string) error {
	return ctrl.NewControllerManagedBy(mgr).Named(name+"-status").
		For(&operatorv1.ClusterManager{}, builder.WithPredicates(named(name))).
		Watches(&appsv1.Deployment{}, toClusterManager(name), builder.WithPredicates(ours(name))).
		Watches(&corev1.ConfigMap{}, toClusterManager(name), builder.WithPredicates(named(ValuesConfigMap))).
		Complete(apply.Quiet(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, r.reconcile(ctx)
		})))
}

// deleted passes delete events.
func deleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
