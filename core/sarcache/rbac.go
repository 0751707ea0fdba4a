package sarcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// DefaultCoalesce is how long RBACWatch gathers RBAC events before acting once on all of them.
const DefaultCoalesce = 250 * time.Millisecond

// rbacChange is the one request every RBAC event maps to: the queue holds it once, so a burst
// of events is one reconcile.
var rbacChange = reconcile.Request{}

// RBACWatch is a Component that, when any Role, ClusterRole, RoleBinding or ClusterRoleBinding
// of its manager's cluster changes, invalidates Cache and then runs OnChange: once for all the
// events within Coalesce of the first. It watches their metadata only, so the process holds
// no rules or subjects. It runs on every replica (a cache is per process), not only the leader.
type RBACWatch struct {
	// Name names the controller.
	Name string
	// Cache, if set, is invalidated.
	Cache *Cache
	// OnChange, if set, runs after the invalidation (the work agent requeues the works that
	// have an executor); an error is logged and retried with backoff.
	OnChange func(ctx context.Context) error
	// Coalesce defaults to DefaultCoalesce.
	Coalesce time.Duration
}

// SetupWithManager adds the watch to mgr.
func (w *RBACWatch) SetupWithManager(mgr ctrl.Manager) error {
	if w.Name == "" {
		return errors.New("sarcache: RBACWatch.Name is required")
	}
	coalesce := w.Coalesce
	if coalesce <= 0 {
		coalesce = DefaultCoalesce
	}
	// The queue keeps the earliest ready time of a waiting request: the burst's first event
	// decides when it is handled.
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) { q.AddAfter(rbacChange, coalesce) }
	events := handler.Funcs{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// A resync repeats the same version: nothing changed.
			if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
				enqueue(q)
			}
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q)
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(w.Name).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, NeedLeaderElection: ptr.To(false)})
	for _, o := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
		b = b.WatchesMetadata(o, events)
	}
	if err := b.Complete(reconcile.Func(w.reconcile)); err != nil {
		return fmt.Errorf("sarcache: RBAC watch %s: %w", w.Name, err)
	}
	return nil
}

func (w *RBACWatch) reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if w.Cache != nil {
		w.Cache.Invalidate()
	}
	log.FromContext(ctx).V(1).Info("RBAC changed: cached SubjectAccessReview answers dropped")
	if w.OnChange != nil {
		if err := w.OnChange(ctx); err != nil {
			return reconcile.Result{}, fmt.Errorf("after an RBAC change: %w", err)
		}
	}
	return reconcile.Result{}, nil
}
