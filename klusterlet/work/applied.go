package work

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// deleteOwned deletes one applied resource if the AppliedManifestWork ownerUID owns it alone;
// if other owners remain (another work declares it too) it only drops this owner. A resource
// that is gone, was recreated (another UID) or is not owned by ownerUID (orphaned) is left
// alone and reported gone. Deletion is foreground, so gone means its dependents are gone too.
func deleteOwned(ctx context.Context, dyn dynamic.Interface, a workv1.AppliedManifestResourceMeta, ownerUID types.UID) (bool, error) {
	gvr := schema.GroupVersionResource{Group: a.Group, Version: a.Version, Resource: a.Resource}
	c := resourceClient(dyn, gvr, a.Namespace)
	obj, err := c.Get(ctx, a.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s/%s: %w", a.Resource, a.Namespace, a.Name, err)
	case a.UID != "" && string(obj.GetUID()) != a.UID:
		return true, nil
	case !obj.GetDeletionTimestamp().IsZero():
		return false, nil
	}
	owned, others := false, 0
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == ownerUID {
			owned = true
		} else {
			others++
		}
	}
	if !owned {
		return true, nil
	}
	if others > 0 {
		if _, err := patchOwner(ctx, c, obj, owner{ref: metav1.OwnerReference{UID: ownerUID}}); err != nil {
			return false, fmt.Errorf("releasing %s %s/%s to its other owners: %w", a.Resource, a.Namespace, a.Name, err)
		}
		return true, nil
	}
	uid := obj.GetUID()
	fg := metav1.DeletePropagationForeground
	err = c.Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &fg})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return false, fmt.Errorf("deleting %s %s/%s: %w", a.Resource, a.Namespace, a.Name, err)
	}
	return false, nil
}

// deleteApplied deletes resources (deleteOwned) and returns those not gone yet. RBAC objects go
// only once the others are gone: they may hold the work agent's own permission to delete
// those (the seeds' aggregate-to-work ClusterRole shipped with the custom resources it grants).
func deleteApplied(ctx context.Context, dyn dynamic.Interface, resources []workv1.AppliedManifestResourceMeta, ownerUID types.UID) []workv1.AppliedManifestResourceMeta {
	kept := make([]bool, len(resources))
	others := false
	del := func(i int) {
		gone, err := deleteOwned(ctx, dyn, resources[i], ownerUID)
		if err != nil {
			log.FromContext(ctx).Error(err, "deleting an applied resource")
		}
		kept[i] = !gone
	}
	for i, a := range resources {
		if a.Group != rbacv1.GroupName {
			del(i)
			others = others || kept[i]
		}
	}
	for i, a := range resources {
		if a.Group == rbacv1.GroupName {
			if others {
				kept[i] = true
				continue
			}
			del(i)
		}
	}
	var remaining []workv1.AppliedManifestResourceMeta
	for i, a := range resources {
		if kept[i] {
			remaining = append(remaining, a)
		}
	}
	return remaining
}

// finalize handles a deleted ManifestWork: delete its AppliedManifestWork (whose own
// finalizer deletes the applied resources), wait until it is gone, then release the work.
func (r *workReconciler) finalize(ctx context.Context, work *workv1.ManifestWork) (reconcile.Result, error) {
	if !hasFinalizer(work, workv1.ManifestWorkFinalizer) {
		return reconcile.Result{}, nil
	}
	amw := &workv1.AppliedManifestWork{}
	err := r.reader.Get(ctx, client.ObjectKey{Name: r.appliedName(work.Name)}, amw)
	switch {
	case apierrors.IsNotFound(err):
		if err := apply.RemoveFinalizer(ctx, r.hub, work, workv1.ManifestWorkFinalizer); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWork %s/%s: %w", work.Namespace, work.Name, err)
		}
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("ManifestWork %s/%s: reading its AppliedManifestWork: %w", work.Namespace, work.Name, err)
	}
	if amw.DeletionTimestamp.IsZero() {
		if err := r.managed.Delete(ctx, amw); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWork %s/%s: deleting AppliedManifestWork %s: %w", work.Namespace, work.Name, amw.Name, err)
		}
	}
	// The AppliedManifestWork watch brings the work back when it is gone; this is the backstop.
	return reconcile.Result{RequeueAfter: cleanupRetry}, nil
}

// appliedReconciler owns AppliedManifestWorks on the managed cluster: it deletes what a
// deleted one applied before releasing it, and evicts those whose ManifestWork is gone from
// the hub (or that another hub's connection left behind) after the grace period.
type appliedReconciler struct {
	cfg     Config
	hubHash string
	hub     client.Client
	managed client.Client
	dyn     dynamic.Interface
	now     func() time.Time
}

func (r *appliedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	amw := &workv1.AppliedManifestWork{}
	if err := r.managed.Get(ctx, req.NamespacedName, amw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !amw.DeletionTimestamp.IsZero() {
		return r.cleanup(ctx, amw)
	}
	return r.evict(ctx, amw)
}

// cleanup deletes the resources a deleted AppliedManifestWork owns, then removes its finalizer.
func (r *appliedReconciler) cleanup(ctx context.Context, amw *workv1.AppliedManifestWork) (reconcile.Result, error) {
	if !hasFinalizer(amw, workv1.AppliedManifestWorkFinalizer) {
		return reconcile.Result{}, nil
	}
	remaining := deleteApplied(log.IntoContext(ctx, log.FromContext(ctx).WithValues("appliedManifestWork", amw.Name)), r.dyn, amw.Status.AppliedResources, amw.UID)
	if len(remaining) > 0 {
		if len(remaining) != len(amw.Status.AppliedResources) {
			if err := apply.Guarded(ctx, r.managed, amw, fieldManager, true, appliedStatus(remaining, amw.Status.EvictionStartTime)); err != nil {
				return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: recording remaining resources: %w", amw.Name, err)
			}
		}
		return reconcile.Result{RequeueAfter: cleanupRetry}, nil
	}
	if err := apply.RemoveFinalizer(ctx, r.managed, amw, workv1.AppliedManifestWorkFinalizer); err != nil {
		return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: %w", amw.Name, err)
	}
	return reconcile.Result{}, nil
}

// evict starts, stops or completes the eviction of an AppliedManifestWork with no ManifestWork.
func (r *appliedReconciler) evict(ctx context.Context, amw *workv1.AppliedManifestWork) (reconcile.Result, error) {
	if amw.Spec.AgentID != r.cfg.AgentID && (amw.Spec.AgentID != "" || amw.Spec.HubHash != r.hubHash) {
		// Another agent's (a klusterlet for another hub, or for another cluster name, on
		// this managed cluster): not ours to judge.
		return reconcile.Result{}, nil
	}
	// This agent's, left by its connection to another hub, or whose ManifestWork is gone.
	orphaned := amw.Spec.HubHash != r.hubHash
	if !orphaned {
		err := r.hub.Get(ctx, client.ObjectKey{Namespace: r.cfg.ClusterName, Name: amw.Spec.ManifestWorkName}, &workv1.ManifestWork{})
		switch {
		case apierrors.IsNotFound(err):
			orphaned = true
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: reading ManifestWork %s: %w", amw.Name, amw.Spec.ManifestWorkName, err)
		}
	}
	if !orphaned {
		if amw.Status.EvictionStartTime != nil {
			if err := apply.Guarded(ctx, r.managed, amw, fieldManager, true, appliedStatus(amw.Status.AppliedResources, nil)); err != nil {
				return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: stopping eviction: %w", amw.Name, err)
			}
		}
		return reconcile.Result{}, nil
	}
	now := r.now()
	if amw.Status.EvictionStartTime == nil {
		if err := apply.Guarded(ctx, r.managed, amw, fieldManager, true, appliedStatus(amw.Status.AppliedResources, &metav1.Time{Time: now})); err != nil {
			return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: starting eviction: %w", amw.Name, err)
		}
		log.FromContext(ctx).Info("ManifestWork is gone from the hub; evicting its AppliedManifestWork after the grace period",
			"appliedManifestWork", amw.Name, "gracePeriod", r.cfg.EvictionGracePeriod.String())
		return reconcile.Result{RequeueAfter: r.cfg.EvictionGracePeriod}, nil
	}
	if left := amw.Status.EvictionStartTime.Add(r.cfg.EvictionGracePeriod).Sub(now); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	log.FromContext(ctx).Info("evicting AppliedManifestWork", "appliedManifestWork", amw.Name)
	if err := r.managed.Delete(ctx, amw); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("AppliedManifestWork %s: evicting: %w", amw.Name, err)
	}
	return reconcile.Result{}, nil
}

// appliedStatus is an AppliedManifestWork's whole status, as the agent applies it (guarded by
// the resourceVersion it was computed from).
func appliedStatus(resources []workv1.AppliedManifestResourceMeta, evictionStart *metav1.Time) map[string]any {
	st := workv1.AppliedManifestWorkStatus{AppliedResources: resources, EvictionStartTime: evictionStart}
	return map[string]any{"status": st}
}
