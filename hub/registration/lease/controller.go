// Package lease watches each accepted cluster's heartbeat: the agent renews the Lease
// managed-cluster-lease in the cluster namespace every leaseDurationSeconds, and when it has not
// done so for GraceFactor times that long the hub marks the cluster Available=Unknown.
package lease

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

const (
	// Name is the Lease every agent renews in its cluster namespace.
	Name = "managed-cluster-lease"
	// GraceFactor is OCM's multiple of leaseDurationSeconds after which a lease is stale.
	GraceFactor = 5
	// DefaultDurationSeconds applies when a ManagedCluster's leaseDurationSeconds is zero.
	DefaultDurationSeconds = 60

	controllerName = "registration-lease"
	// fieldManager owns the Available=Unknown condition it sets on stale clusters.
	fieldManager = apply.FieldManagerPrefix + controllerName
)

// GracePeriod is how long a cluster's lease may go unrenewed before it is considered stale.
func GracePeriod(mc *clusterv1.ManagedCluster) time.Duration {
	d := mc.Spec.LeaseDurationSeconds
	if d <= 0 {
		d = DefaultDurationSeconds
	}
	return time.Duration(GraceFactor*d) * time.Second
}

// Reconciler checks cluster leases.
type Reconciler struct {
	Client client.Client
	// APIReader reads a Lease that looks stale again from the API server before the cluster
	// is marked Unknown: a hub whose cache fell behind (thousands of renewals a minute) must
	// not take its own lag for a silent cluster. Nil means Client.
	APIReader client.Reader
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the reconciler. The manager's cache should restrict Leases to
// Name (see CacheByObject) so node and leader-election leases are not cached.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&clusterv1.ManagedCluster{}).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if o.GetName() != Name {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
		})).
		Complete(apply.Quiet(r))
}

// Reconcile creates the lease of a newly accepted cluster, marks the cluster Unknown once the
// lease is stale, and schedules the next check for the moment the lease would expire.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A cluster that was never accepted has no namespace and no heartbeat to watch.
	if meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) == nil {
		return reconcile.Result{}, nil
	}
	grace := GracePeriod(mc)
	l := &coordinationv1.Lease{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: mc.Name, Name: Name}, l)
	if apierrors.IsNotFound(err) {
		if !mc.DeletionTimestamp.IsZero() {
			return reconcile.Result{}, r.markUnknown(ctx, mc)
		}
		now := metav1.NewMicroTime(r.now())
		holder := Name
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: mc.Name, Labels: map[string]string{clusterv1.ClusterNameLabelKey: mc.Name}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &now},
		}
		if err := r.Client.Create(ctx, l); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: creating Lease %s/%s: %w", mc.Name, mc.Name, Name, err)
		}
		return reconcile.Result{RequeueAfter: grace}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: reading Lease %s/%s: %w", mc.Name, mc.Name, Name, err)
	}
	var renewed time.Time
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	expires := renewed.Add(grace)
	if now := r.now(); now.Before(expires) {
		return reconcile.Result{RequeueAfter: expires.Sub(now)}, nil
	}
	if r.APIReader != nil && mc.DeletionTimestamp.IsZero() {
		fresh := &coordinationv1.Lease{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(l), fresh); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("ManagedCluster %s: reading Lease %s/%s from the API server: %w", mc.Name, mc.Name, Name, err)
		} else if err == nil && fresh.Spec.RenewTime != nil {
			if exp := fresh.Spec.RenewTime.Add(grace); r.now().Before(exp) {
				return reconcile.Result{RequeueAfter: exp.Sub(r.now())}, nil // the cache lags; the cluster is alive
			}
		}
	}
	if err := r.markUnknown(ctx, mc); err != nil {
		return reconcile.Result{}, err
	}
	// Recovery arrives through the Lease watch; the periodic check only guards against a missed event.
	return reconcile.Result{RequeueAfter: grace}, nil
}

// markUnknown applies Available=Unknown. The agent writes the same condition when it reports
// again; the other conditions are left alone.
func (r *Reconciler) markUnknown(ctx context.Context, mc *clusterv1.ManagedCluster) error {
	if meta.IsStatusConditionPresentAndEqual(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable, metav1.ConditionUnknown) {
		return nil
	}
	_, err := apply.Condition(ctx, r.Client, mc, mc.Status.Conditions, fieldManager, metav1.Condition{
		Type:    clusterv1.ManagedClusterConditionAvailable,
		Status:  metav1.ConditionUnknown,
		Reason:  clusterv1.ConditionReasonManagedClusterLeaseUpdateStopped,
		Message: "Registration agent stopped updating its lease.",
	})
	if err != nil {
		return fmt.Errorf("ManagedCluster %s: setting %s=Unknown: %w", mc.Name, clusterv1.ManagedClusterConditionAvailable, err)
	}
	return nil
}
