package work

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

const completedControllerName = "work-completed-cleanup"

// CompletedReconciler deletes a ManifestWork deleteOption.ttlSecondsAfterFinished seconds
// after its Complete condition (the aggregate of its manifests' Complete condition rules)
// turned True, as OCM's hub does behind the CleanUpCompletedManifestWork gate. It waits by
// requeueing for exactly the time left, so nothing polls; a change of the work (its status
// reported again, its TTL edited) computes the deadline anew. The deletion is an ordinary
// one: the work's finalizer holds it until the agent has removed what it applied, as the
// work's propagation policy says.
type CompletedReconciler struct {
	Client client.Client
	// Gates are the hub's feature gates: nothing runs unless CleanUpCompletedManifestWork is on.
	Gates featuregate.FeatureGate
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// SetupWithManager watches ManifestWorks that have a TTL, when the gate is on.
func (r *CompletedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Gates == nil || !r.Gates.Enabled(featuregates.CleanUpCompletedManifestWork) {
		return nil
	}
	withTTL := predicate.NewPredicateFuncs(func(o client.Object) bool {
		w, ok := o.(*workv1.ManifestWork)
		return ok && w.Spec.DeleteOption != nil && w.Spec.DeleteOption.TTLSecondsAfterFinished != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(completedControllerName).
		For(&workv1.ManifestWork{}, builder.WithPredicates(withTTL)).
		Complete(apply.Quiet(r))
}

// Reconcile deletes one work whose TTL after completion ran out, or requeues it for then.
func (r *CompletedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &workv1.ManifestWork{}
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() || w.Spec.DeleteOption == nil || w.Spec.DeleteOption.TTLSecondsAfterFinished == nil {
		return reconcile.Result{}, nil
	}
	complete := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkComplete)
	if complete == nil || complete.Status != metav1.ConditionTrue {
		return reconcile.Result{}, nil
	}
	ttl := time.Duration(*w.Spec.DeleteOption.TTLSecondsAfterFinished) * time.Second
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	left, err := apply.DeleteAt(ctx, r.Client, w, complete.LastTransitionTime.Add(ttl), now(), "Complete and ttlSecondsAfterFinished "+ttl.String())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManifestWork %s: deleting after ttlSecondsAfterFinished: %w", req, err)
	}
	return reconcile.Result{RequeueAfter: left}, nil
}
