// Package clustersetbinding reports whether each ManagedClusterSetBinding is Bound.
//
// A binding is Bound when its ManagedClusterSet exists and the binding is named after the set
// (the OCM rule that keeps one binding per set and namespace). Who may bind is not decided here:
// as in OCM, creating or updating a binding requires "create" on managedclustersets/bind for the
// set, which the hub's admission policy policies/bind.rego (evaluated by hub/admission) enforces.
package clustersetbinding

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// ReasonNameMismatch is the Bound reason when a binding is not named after its set.
const ReasonNameMismatch = "ClusterSetNameMismatch"

// BoundCondition computes the Bound condition of binding given whether its set exists.
func BoundCondition(binding *clusterv1beta2.ManagedClusterSetBinding, setExists bool) metav1.Condition {
	c := metav1.Condition{Type: clusterv1beta2.ClusterSetBindingBoundType}
	switch {
	case binding.Name != binding.Spec.ClusterSet:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNameMismatch
		c.Message = fmt.Sprintf("ManagedClusterSetBinding %s/%s: spec.clusterSet %q must equal the binding's name",
			binding.Namespace, binding.Name, binding.Spec.ClusterSet)
	case !setExists:
		c.Status, c.Reason = metav1.ConditionFalse, clusterv1beta2.ConditionReasonClusterSetNotFound
		c.Message = fmt.Sprintf("ManagedClusterSet %s does not exist", binding.Spec.ClusterSet)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, clusterv1beta2.ConditionReasonClusterSetBound
	}
	return c
}

const (
	controllerName = "registration-clustersetbinding"
	// fieldManager owns status.conditions of bindings.
	fieldManager = apply.FieldManagerPrefix + controllerName
)

// Reconciler maintains the Bound condition.
type Reconciler struct {
	Client client.Client
}

// SetupWithManager registers the reconciler; set changes re-evaluate the bindings naming the set.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&clusterv1beta2.ManagedClusterSetBinding{}).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &clusterv1beta2.ManagedClusterSetBindingList{}
			if err := r.Client.List(ctx, list); err != nil {
				return nil
			}
			var out []reconcile.Request
			for i := range list.Items {
				if list.Items[i].Spec.ClusterSet == o.GetName() {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				}
			}
			return out
		})).
		Complete(apply.Quiet(r))
}

// Reconcile updates one binding's status. status.conditions of a binding is an atomic list, so
// it is applied whole, guarded by the resourceVersion it was computed from.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &clusterv1beta2.ManagedClusterSetBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	set := &clusterv1beta2.ManagedClusterSet{}
	exists := true
	if err := r.Client.Get(ctx, client.ObjectKey{Name: b.Spec.ClusterSet}, set); apierrors.IsNotFound(err) {
		exists = false
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterSetBinding %s/%s: reading ManagedClusterSet %s: %w", b.Namespace, b.Name, b.Spec.ClusterSet, err)
	} else if !set.DeletionTimestamp.IsZero() {
		exists = false
	}
	conds := append([]metav1.Condition(nil), b.Status.Conditions...)
	if !meta.SetStatusCondition(&conds, BoundCondition(b, exists)) {
		return reconcile.Result{}, nil
	}
	err := apply.Guarded(ctx, r.Client, b, fieldManager, true, map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterSetBinding %s/%s: updating status.conditions: %w", b.Namespace, b.Name, err)
	}
	return reconcile.Result{}, nil
}
