// Package managedserviceaccount is the hub's part of the managed-serviceaccount add-on that is
// not the agent's (klusterlet/addon/msa): spec.ttlSecondsAfterCreation.
package managedserviceaccount

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// ControllerName names the TTL controller (and its Events' reporting controller).
const ControllerName = "managedserviceaccount-ttl"

// Reasons of the TTL controller's Events on a ManagedServiceAccount.
const (
	// ReasonTTLExpired: deleted ttlSecondsAfterCreation seconds after its creation.
	ReasonTTLExpired = "TTLExpired"
	// ReasonEphemeralIdentityDisabled: ttlSecondsAfterCreation is set but the gate is off,
	// so the object stays (upstream ignores the field silently; the Event says why).
	ReasonEphemeralIdentityDisabled = "EphemeralIdentityDisabled"
)

// TTLReconciler deletes a ManagedServiceAccount spec.ttlSecondsAfterCreation seconds after
// its creationTimestamp, as upstream's EphemeralIdentity controller does. It waits by
// requeueing for exactly the time left, so nothing polls. The deletion is an ordinary one:
// the hub Secret of the token goes with it (the agent makes the ManagedServiceAccount its
// owner) and the agent removes the ServiceAccount on its cluster. With the gate off the field
// is ignored, and a Warning Event on the object says so.
type TTLReconciler struct {
	Client client.Client
	// Gates are the hub's feature gates: the deletion needs EphemeralIdentity.
	Gates featuregate.FeatureGate
	// Recorder gets the Events; nil records none.
	Recorder events.EventRecorder
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (r *TTLReconciler) enabled() bool {
	return r.Gates != nil && r.Gates.Enabled(featuregates.EphemeralIdentity)
}

// SetupWithManager watches the ManagedServiceAccounts that have a TTL; a status update (the
// agent's token reports) changes no deadline, so only creations and spec changes count.
func (r *TTLReconciler) SetupWithManager(mgr ctrl.Manager) error {
	withTTL := predicate.NewPredicateFuncs(func(o client.Object) bool {
		m, ok := o.(*authv1beta1.ManagedServiceAccount)
		return ok && m.Spec.TTLSecondsAfterCreation != nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&authv1beta1.ManagedServiceAccount{}, builder.WithPredicates(withTTL, predicate.GenerationChangedPredicate{})).
		Complete(apply.Quiet(r))
}

// Reconcile deletes one ManagedServiceAccount whose TTL ran out, or requeues it for then.
func (r *TTLReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &authv1beta1.ManagedServiceAccount{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() || m.Spec.TTLSecondsAfterCreation == nil {
		return reconcile.Result{}, nil
	}
	ttl := time.Duration(*m.Spec.TTLSecondsAfterCreation) * time.Second
	if !r.enabled() {
		r.event(m, corev1.EventTypeWarning, ReasonEphemeralIdentityDisabled, "IgnoreTTL",
			"spec.ttlSecondsAfterCreation (%s) is ignored: the hub's feature gate %s is off", ttl, featuregates.EphemeralIdentity)
		return reconcile.Result{}, nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	left, err := apply.DeleteAt(ctx, r.Client, m, m.CreationTimestamp.Add(ttl), now(), "spec.ttlSecondsAfterCreation "+ttl.String())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedServiceAccount %s: deleting after spec.ttlSecondsAfterCreation %s: %w", req, ttl, err)
	}
	if left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	r.event(m, corev1.EventTypeNormal, ReasonTTLExpired, "Delete", "deleted %s after its creation (spec.ttlSecondsAfterCreation)", ttl)
	return reconcile.Result{}, nil
}

func (r *TTLReconciler) event(m *authv1beta1.ManagedServiceAccount, typ, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(m, nil, typ, reason, action, format, args...)
	}
}
