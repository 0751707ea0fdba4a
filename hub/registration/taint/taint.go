// Package taint keeps the two built-in taints of a ManagedCluster in line with its Available
// condition: unreachable (NoSelect) while the condition is missing or Unknown, unavailable
// (NoSelect) while it is False, neither while it is True. A taint that stays keeps its timeAdded.
package taint

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// Desired returns the taints the cluster should carry and whether they differ from current.
func Desired(current []clusterv1.Taint, conds []metav1.Condition, now time.Time) ([]clusterv1.Taint, bool) {
	var want string
	switch c := meta.FindStatusCondition(conds, clusterv1.ManagedClusterConditionAvailable); {
	case c == nil || c.Status == metav1.ConditionUnknown:
		want = clusterv1.ManagedClusterTaintUnreachable
	case c.Status == metav1.ConditionFalse:
		want = clusterv1.ManagedClusterTaintUnavailable
	}
	out := make([]clusterv1.Taint, 0, len(current)+1)
	changed, present := false, false
	for _, t := range current {
		builtin := t.Key == clusterv1.ManagedClusterTaintUnreachable || t.Key == clusterv1.ManagedClusterTaintUnavailable
		switch {
		case !builtin:
			out = append(out, t)
		case t.Key == want && !present:
			present = true
			if t.Effect != clusterv1.TaintEffectNoSelect || t.Value != "" || t.TimeAdded.IsZero() {
				// Someone edited a hub-owned taint: restore its shape, keep when it was added.
				added := t.TimeAdded
				if added.IsZero() {
					added = metav1.NewTime(now)
				}
				t = clusterv1.Taint{Key: want, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: added}
				changed = true
			}
			out = append(out, t)
		default:
			changed = true
		}
	}
	if want != "" && !present {
		out = append(out, clusterv1.Taint{Key: want, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(now)})
		changed = true
	}
	return out, changed
}

const (
	controllerName = "registration-taint"
	// fieldManager owns spec.taints after each change it makes.
	fieldManager = apply.FieldManagerPrefix + controllerName
)

// Reconciler maintains the built-in taints.
type Reconciler struct {
	Client client.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&clusterv1.ManagedCluster{}).
		Complete(apply.Quiet(r))
}

// Reconcile updates spec.taints of one cluster. The list is atomic and holds taints others
// added too, so it is applied whole, guarded by the resourceVersion it was computed from: a
// conflict means someone changed the cluster meanwhile, and it is looked at again.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	taints, changed := Desired(mc.Spec.Taints, mc.Status.Conditions, now)
	if !changed {
		return reconcile.Result{}, nil
	}
	if err := apply.Guarded(ctx, r.Client, mc, fieldManager, false, map[string]any{"spec": map[string]any{"taints": taints}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: updating spec.taints: %w", mc.Name, err)
	}
	return reconcile.Result{}, nil
}
