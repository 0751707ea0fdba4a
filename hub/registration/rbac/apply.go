package rbac

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
