package work

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

const controllerName = "work-cluster-availability"

// AvailabilityReconciler marks the ManifestWorks of a cluster whose Available condition is
// not True as Unknown. The agent's next status report, once it is back, replaces them.
type AvailabilityReconciler struct {
	Client client.Client
}

// SetupWithManager watches ManagedClusters (their availability) and ManifestWorks (a work
// created or reported while its cluster is away).
func (r *AvailabilityReconciler) SetupWithManager(mgr ctrl.Manager) error {
	availabilityChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*clusterv1.ManagedCluster), e.ObjectNew.(*clusterv1.ManagedCluster)
		return available(o) != available(n)
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&clusterv1.ManagedCluster{}, builder.WithPredicates(availabilityChanged)).
		Watches(&workv1.ManifestWork{}, handlerByNamespace()).
		Complete(apply.Quiet(r))
}

func available(mc *clusterv1.ManagedCluster) bool {
	return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
}

// Reconcile looks at one cluster's works.
func (r *AvailabilityReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Before the first join there is nothing stale to correct; a cluster whose condition is
	// True reports for itself.
	cond := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	if cond == nil || cond.Status == "True" || !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	works := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(mc.Name)); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: listing its ManifestWorks: %w", mc.Name, err)
	}
	for i := range works.Items {
		w := works.Items[i].DeepCopy()
		if !markUnknown(w, mc.Name, cond) {
			continue
		}
		// Guarded by resourceVersion: the agent writes the whole status when it reports.
		if err := apply.Guarded(ctx, r.Client, &works.Items[i], apply.FieldManagerPrefix+controllerName, true, map[string]any{"status": w.Status}); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWork %s/%s: marking its status unknown: %w", w.Namespace, w.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// handlerByNamespace maps a ManifestWork to its cluster (its namespace).
func handlerByNamespace() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
	})
}
