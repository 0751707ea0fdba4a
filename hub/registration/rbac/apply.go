package rbac

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side-apply manager of everything the registration hub owns.
const FieldManager = "flotilla-registration-hub"

// Apply server-side-applies obj (any typed object known to c's scheme), taking ownership of
// the fields it sets so that drift introduced by others is reverted.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetResourceVersion("")
	// Every reconcile of an accepted cluster re-asserts its namespace and RBAC; when c's
	// cache shows them as wanted, the write is skipped (a fleet of 5,000 clusters would spend
	// five API writes on each ManagedCluster event). Drift still shows in the cache and is
	// reverted.
	cur, ok := obj.DeepCopyObject().(client.Object)
	if ok && c.Get(ctx, client.ObjectKeyFromObject(obj), cur) == nil {
		if held, err := Holds(cur, obj); err == nil && held {
			return nil
		}
	}
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// Delete removes obj and treats "already gone" as success.
func Delete(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// Holds reports whether existing already carries every field want sets: its labels and
// annotations, and its content besides metadata (maps compared key by key, lists whole), as
// an apply of want would leave it.
func Holds(existing, want client.Object) (bool, error) {
	e, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return false, err
	}
	w, err := runtime.DefaultUnstructuredConverter.ToUnstructured(want)
	if err != nil {
		return false, err
	}
	delete(w, "apiVersion")
	delete(w, "kind")
	delete(w, "status")
	if m, ok := w["metadata"].(map[string]any); ok {
		w["metadata"] = map[string]any{"labels": m["labels"], "annotations": m["annotations"]}
	}
	return subset(e, w), nil
}

// subset: every field of want is in have with the same value; nil in want asks nothing.
func subset(have, want any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0
		}
		for k, v := range w {
			if v == nil {
				continue
			}
			if _, ok := h[k]; !ok {
				return false
			}
			if !subset(h[k], v) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}
