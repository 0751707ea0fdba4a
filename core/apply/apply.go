// Package apply is how Flotilla's controllers and agents write the fields they own on objects
// that other writers share: a ManagedCluster is written by its agent and by several hub
// controllers at once. Each writer server-side-applies just its own fields under its own field
// manager, so the API server merges the change into the current object and no resourceVersion
// is needed: writers of different fields (a finalizer, a label, one condition of a list keyed
// by type) never conflict. An apply states everything its manager owns of the object (or of
// its status): a field the same manager applied before and leaves out now is removed. So one
// controller's manager applies one set of fields per object and subresource.
//
// An atomic list (spec.taints, the conditions of cluster sets and bindings) is replaced as a
// whole by whoever applies it, so applying a stale copy would drop entries others added. Those
// applies carry the resourceVersion they were computed from (Guarded), and a conflict then only
// means "read it again": Quiet makes it a quiet retry instead of a reconcile error.
package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// FieldManagerPrefix starts the field manager of every Flotilla writer, which is followed by
// its name (a controller's name), so managedFields say which one owns what.
const FieldManagerPrefix = "flotilla-"

// Fields applies fields (for example {"status": {"conditions": [...], "capacity": {...}}},
// typed values allowed) to obj, or to its status subresource when status is set. Only use it
// for fields that merge with other writers' (maps, lists keyed by x-kubernetes-list-type map or
// set, fields no one else writes); see Guarded for atomic lists.
func Fields(ctx context.Context, c client.Client, obj client.Object, manager string, status bool, fields map[string]any) error {
	content, err := jsonValue(fields)
	if err != nil {
		return err
	}
	return do(ctx, c, obj, manager, status, content.(map[string]any))
}

// Finalizer adds finalizer to obj. metadata.finalizers is a set, so other finalizers stay.
func Finalizer(ctx context.Context, c client.Client, obj client.Object, manager, finalizer string) error {
	return do(ctx, c, obj, manager, false, map[string]any{
		"metadata": map[string]any{"finalizers": []any{finalizer}},
	})
}

// RemoveFinalizer removes finalizer from obj (as read), guarded by obj's resourceVersion. It
// is a patch, not an apply: an apply only drops a finalizer no other field manager holds, and
// one added by another writer (an earlier version that patched, another agent) is held by it.
// A conflict means obj changed since it was read (see Quiet); a gone object is no error.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%s: cannot copy %T", obj.GetName(), obj)
	}
	controllerutil.RemoveFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer %s: %w", finalizer, err))
	}
	return nil
}

// Label sets one label on obj; other labels stay.
func Label(ctx context.Context, c client.Client, obj client.Object, manager, key, value string) error {
	return do(ctx, c, obj, manager, false, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{key: value}},
	})
}

// Condition sets cond in obj's status.conditions, which must be a list keyed by type
// (x-kubernetes-list-type: map, as on ManagedCluster), so the conditions other writers own
// stay. current are the conditions as read: cond gets meta.SetStatusCondition's
// lastTransitionTime, and nothing is written when it would not change. It reports whether it
// wrote.
func Condition(ctx context.Context, c client.Client, obj client.Object, current []metav1.Condition, manager string, cond metav1.Condition) (bool, error) {
	conds := append([]metav1.Condition(nil), current...)
	if !meta.SetStatusCondition(&conds, cond) {
		return false, nil
	}
	entry, err := jsonValue(*meta.FindStatusCondition(conds, cond.Type))
	if err != nil {
		return false, err
	}
	err = do(ctx, c, obj, manager, true, map[string]any{
		"status": map[string]any{"conditions": []any{entry}},
	})
	return err == nil, err
}

// Guarded applies fields (for example {"spec": {"taints": [...]}}, typed values allowed) to
// obj, or to its status subresource when status is set, with obj's resourceVersion as
// precondition: for atomic lists, which the apply replaces, and for writes computed from a
// cached copy. It fails with a Conflict when obj has changed or was deleted since it was read
// (see Quiet). The apply also carries obj's uid: an apply creates what does not exist, and
// the API server ignores the resourceVersion of an object it creates, but not a uid no
// existing object has, so an object deleted since it was read is not created again.
func Guarded(ctx context.Context, c client.Client, obj client.Object, manager string, status bool, fields map[string]any) error {
	if obj.GetResourceVersion() == "" {
		return fmt.Errorf("%s: guarded apply needs the resourceVersion it was computed from", obj.GetName())
	}
	content, err := jsonValue(fields)
	if err != nil {
		return err
	}
	m := content.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	md["resourceVersion"] = obj.GetResourceVersion()
	if uid := obj.GetUID(); uid != "" {
		md["uid"] = string(uid)
	}
	return do(ctx, c, obj, manager, status, m)
}

// conflictRetry is how soon a reconcile that lost a race runs again. The watch event of the
// newer version usually gets there first; this is the backstop.
const conflictRetry = 200 * time.Millisecond

// Quiet wraps a controller's reconciler so that two outcomes that are no failure are not
// logged as reconcile errors: a conflict (the object changed since it was read; the reconcile
// runs again on the current version) and an error from a reconcile cut short by shutdown.
// Other errors and results pass through.
func Quiet(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		switch {
		case err == nil:
			return res, nil
		case ctx.Err() != nil:
			return reconcile.Result{}, nil
		case apierrors.IsConflict(err):
			log.FromContext(ctx).V(1).Info("write lost a race with another writer; retrying", "error", err.Error())
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return res, err
	})
}

// DeleteAt deletes obj once deadline has passed (now is the reconciler's clock); before then
// it deletes nothing and returns the time left, for the reconciler to requeue for, so a TTL is
// waited for without polling. why (what set the deadline) goes to the log. The UID
// precondition spares an object recreated under the same name meanwhile; one already gone is
// no error.
func DeleteAt(ctx context.Context, c client.Client, obj client.Object, deadline, now time.Time, why string) (time.Duration, error) {
	if left := deadline.Sub(now); left > 0 {
		return left, nil
	}
	log.FromContext(ctx).Info("Deleting after "+why, "object", client.ObjectKeyFromObject(obj).String(),
		"deadline", deadline.UTC().Format(time.RFC3339))
	uid := obj.GetUID()
	return 0, client.IgnoreNotFound(c.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// do server-side-applies content (metadata merged with obj's name and namespace) to obj or,
// with status, its status subresource. obj itself is not updated. ForceOwnership: each field manager applies only fields it owns, so taking
// them over from an earlier writer (an update, or a Flotilla version that patched) is intended.
func do(ctx context.Context, c client.Client, obj client.Object, manager string, status bool, content map[string]any) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: content}
	md, _ := content["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		content["metadata"] = md
	}
	md["name"] = obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	u.SetGroupVersionKind(gvk)
	ac := client.ApplyConfigurationFromUnstructured(u)
	if status {
		err = c.Status().Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership)
	} else {
		err = c.Apply(ctx, ac, client.FieldOwner(manager), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("server-side apply as %s: %w", manager, err)
	}
	return nil
}

// jsonValue turns typed values (taints, conditions) into the plain JSON values an unstructured
// apply configuration holds.
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding apply configuration: %w", err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("encoding apply configuration: %w", err)
	}
	return out, nil
}
