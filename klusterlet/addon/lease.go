package addon

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// startLease makes sure the add-on's Lease in ns is watched (and no other of its Leases), on
// the management cluster when hosted.
func (a *Agent) startLease(ctx context.Context, addon, ns string, hosted bool) {
	if l, ok := a.leases[addon]; ok {
		if l.namespace == ns && l.hosted == hosted {
			return
		}
		l.stop()
	}
	r := a.start(ctx, func(ctx context.Context) { a.leaseLoop(ctx, addon, ns, hosted) })
	r.namespace, r.hosted = ns, hosted
	a.leases[addon] = r
}

func (a *Agent) stopLease(addon string) {
	if l, ok := a.leases[addon]; ok {
		l.stop()
		delete(a.leases, addon)
	}
}

// leaseLoop keeps the add-on's Available condition in step with its Lease: it looks again on
// every change of the Lease, when the Lease is due to turn stale, and every LeaseResync.
func (a *Agent) leaseLoop(ctx context.Context, addon, ns string, hosted bool) {
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	store, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: toolscache.NewListWatchFromClient(a.kube(hosted).CoordinationV1().RESTClient(), "leases", ns,
			fields.OneTermEqualSelector("metadata.name", addon)),
		ObjectType: &coordinationv1.Lease{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
		},
	})
	go informer.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	b := a.cfg.backoff()
	for ctx.Err() == nil {
		var lease *coordinationv1.Lease
		if obj, ok, _ := store.GetByKey(ns + "/" + addon); ok {
			lease, _ = obj.(*coordinationv1.Lease)
		}
		next, err := a.checkHealth(ctx, addon, ns, hosted, lease)
		if err != nil {
			a.log.Info("Updating add-on health failed; retrying", "addon", addon, "error", err.Error())
			next = b.Next()
		} else {
			b.Reset()
		}
		t := a.cfg.Clock.NewTimer(min(next, a.cfg.LeaseResync))
		select {
		case <-ctx.Done():
		case <-changed:
		case <-t.C():
		}
		t.Stop()
	}
}

// checkHealth sets the add-on's Available condition from lease (nil: none on the managed
// cluster, or on the management cluster when hosted) and returns when to look again at the
// latest.
func (a *Agent) checkHealth(ctx context.Context, addon, ns string, hosted bool, lease *coordinationv1.Lease) (time.Duration, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := a.addons.Get(ctx, client.ObjectKey{Namespace: a.cfg.ClusterName, Name: addon}, mca); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: the worker stops this loop.
			return a.cfg.LeaseResync, nil
		}
		return 0, fmt.Errorf("reading ManagedClusterAddOn %s/%s: %w", a.cfg.ClusterName, addon, err)
	}
	if mca.Status.HealthCheck.Mode == addonv1alpha1.HealthCheckModeCustomized {
		return a.cfg.LeaseResync, nil
	}
	now := a.cfg.Clock.Now()
	grace := time.Duration(LeaseGraceTimes*a.cfg.LeaseDurationSeconds) * time.Second
	next := a.cfg.LeaseResync
	var cond metav1.Condition
	if lease == nil && hosted {
		// OCM's message: the add-on runs where the klusterlet runs, which may not be the
		// hosting cluster the annotation names.
		cond = metav1.Condition{
			Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionUnknown,
			Reason: addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound,
			Message: fmt.Sprintf("The status of %s add-on is unknown. No lease found on hosting cluster %q; verify it matches the cluster "+
				"where this managed cluster's klusterlet actually runs.", addon, mca.Annotations[addonv1alpha1.HostingClusterNameAnnotationKey]),
		}
	} else if lease == nil {
		// As OCM: add-ons of old Kubernetes versions renew their Lease on the hub, in the
		// cluster namespace.
		hubLease, err := a.hubKube.CoordinationV1().Leases(a.cfg.ClusterName).Get(ctx, addon, metav1.GetOptions{})
		if err == nil {
			lease = hubLease
			next = time.Duration(a.cfg.LeaseDurationSeconds) * time.Second
		} else if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return 0, fmt.Errorf("reading Lease %s/%s on the hub: %w", a.cfg.ClusterName, addon, err)
		} else {
			cond = metav1.Condition{
				Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionUnknown,
				Reason:  addonv1alpha1.AddonAvailableReasonLeaseLeaseNotFound,
				Message: fmt.Sprintf("The status of %s add-on is unknown because get lease from hub failed: %v", addon, err),
			}
		}
	}
	if lease != nil {
		var renewed time.Time
		if lease.Spec.RenewTime != nil {
			renewed = lease.Spec.RenewTime.Time
		}
		if deadline := renewed.Add(grace); now.Before(deadline) {
			cond = metav1.Condition{
				Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue,
				Reason: addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated, Message: fmt.Sprintf("%s add-on is available.", addon),
			}
			next = min(next, deadline.Sub(now)+time.Second)
		} else {
			cond = metav1.Condition{
				Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionFalse,
				Reason: addonv1alpha1.AddonAvailableReasonLeaseUpdateStopped, Message: fmt.Sprintf("%s add-on is not available.", addon),
			}
		}
	}
	// status.conditions is keyed by type: the agent applies just the condition it owns.
	wrote, err := apply.Condition(ctx, a.hub, mca, mca.Status.Conditions, FieldManager, cond)
	if err != nil {
		return 0, fmt.Errorf("setting condition %s of ManagedClusterAddOn %s/%s: %w", cond.Type, mca.Namespace, mca.Name, err)
	}
	if !wrote {
		return next, nil
	}
	a.log.Info("Add-on health updated from its Lease", "addon", addon, "lease", ns+"/"+addon,
		"status", cond.Status, "reason", cond.Reason)
	return next, nil
}
