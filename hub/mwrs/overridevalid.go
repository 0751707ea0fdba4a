package mwrs

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

const (
	// OverrideControllerName names the controller of the overrides' Valid condition.
	OverrideControllerName = "manifestworkreplicasetoverride"
	// overrideValidFieldManager writes Valid and status.observedGeneration.
	overrideValidFieldManager = apply.FieldManagerPrefix + OverrideControllerName
)

// OverrideReconciler says whether each ManifestWorkReplicaSetOverride compiles: its Valid
// condition and status.observedGeneration. The replica set controller compiles it again
// when it renders (an invalid override fails every cluster of its replica sets).
type OverrideReconciler struct {
	Client client.Client
}

// SetupWithManager watches the overrides.
func (r *OverrideReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(OverrideControllerName).
		For(&flotillav1alpha1.ManifestWorkReplicaSetOverride{}).
		Complete(apply.Quiet(r))
}

// Reconcile writes one override's Valid condition when it changed.
func (r *OverrideReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	if err := r.Client.Get(ctx, req.NamespacedName, o); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := validCondition(o)
	conds := append([]metav1.Condition(nil), o.Status.Conditions...)
	if !meta.SetStatusCondition(&conds, cond) && o.Status.ObservedGeneration == o.Generation {
		return reconcile.Result{}, nil
	}
	c := meta.FindStatusCondition(conds, cond.Type)
	if err := apply.Guarded(ctx, r.Client, o, overrideValidFieldManager, true, map[string]any{"status": map[string]any{
		"observedGeneration": o.Generation, "conditions": []any{*c},
	}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("ManifestWorkReplicaSetOverride %s/%s: Valid condition: %w", o.Namespace, o.Name, err)
	}
	return reconcile.Result{}, nil
}

// validCondition compiles o's spec as the renderer does.
func validCondition(o *flotillav1alpha1.ManifestWorkReplicaSetOverride) metav1.Condition {
	c := metav1.Condition{Type: flotillav1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: flotillav1alpha1.ReasonCompiled,
		ObservedGeneration: o.Generation, Message: fmt.Sprintf("%d rules compiled", len(o.Spec.Rules))}
	if _, errs := override.Compile(o.Name, &o.Spec, field.NewPath("spec")); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, flotillav1alpha1.ReasonInvalidSpec, strings.Join(msgs, "; ")
		if len(c.Message) > 4096 {
			c.Message = c.Message[:4093] + "..."
		}
	}
	return c
}
