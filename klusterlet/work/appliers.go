package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// owner is the AppliedManifestWork's claim on an applied resource: an owner reference when
// the work owns the resource, its removal when the delete option orphans the resource.
type owner struct {
	ref   metav1.OwnerReference
	owned bool
}

// withOwner returns refs with o's reference added (owned) or removed (orphaned), and whether
// that changed anything.
func (o owner) merge(refs []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	found := false
	for _, r := range refs {
		if r.UID == o.ref.UID {
			found = true
			if !o.owned {
				continue
			}
		}
		out = append(out, r)
	}
	switch {
	case o.owned && !found:
		return append(out, o.ref), true
	case !o.owned && found:
		return out, true
	}
	return out, false
}

// applyRequest is one manifest to write.
type applyRequest struct {
	gvr      schema.GroupVersionResource
	required *unstructured.Unstructured
	owner    owner
	strategy workv1.UpdateStrategy
	// recorded: the AppliedManifestWork lists the resource, so it was applied before and
	// most likely exists; otherwise it most likely does not (see getOrCreate).
	recorded bool
}

// applier writes one manifest under one update strategy and returns the live object.
type applier interface {
	apply(ctx context.Context, req applyRequest) (*unstructured.Unstructured, error)
}

func (r applyRequest) client(dyn dynamic.Interface) dynamic.ResourceInterface {
	return resourceClient(dyn, r.gvr, r.required.GetNamespace())
}

// resourceClient is the dynamic client of one resource in namespace ns ("" for cluster scope).
func resourceClient(dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns != "" {
		return dyn.Resource(gvr).Namespace(ns)
	}
	return dyn.Resource(gvr)
}

// updateApplier is the Update strategy: create the object if missing, otherwise update it
// when its content (all but metadata and status) differs from the manifest, keeping others'
// labels, annotations, owners and finalizers. The comparison is the whole content, as OCM
// does: fields the API server defaults but the manifest leaves out (a Job's selector) make
// the update fail on immutable fields, which the seeds' Job example relies on.
type updateApplier struct{ dyn dynamic.Interface }

func (a updateApplier) apply(ctx context.Context, req applyRequest) (*unstructured.Unstructured, error) {
	c := req.client(a.dyn)
	required := req.required.DeepCopy()
	existing, created, err := getOrCreate(ctx, c, required, req.owner, req.recorded)
	if err != nil || created {
		return existing, err
	}
	modified := false
	labels, changed := mergeMap(existing.GetLabels(), required.GetLabels())
	modified = modified || changed
	annotations, changed := mergeMap(existing.GetAnnotations(), required.GetAnnotations())
	modified = modified || changed
	refs, changed := req.owner.merge(existing.GetOwnerReferences())
	modified = modified || changed
	if !modified && sameContent(required, existing) {
		return existing, nil
	}
	required.SetLabels(labels)
	required.SetAnnotations(annotations)
	required.SetOwnerReferences(refs)
	required.SetFinalizers(existing.GetFinalizers())
	required.SetResourceVersion(existing.GetResourceVersion())
	return c.Update(ctx, required, metav1.UpdateOptions{})
}

// getOrCreate returns the live object, creating required (owned by o) when it is missing.
// A resource not applied before (not recorded) is created first and read only if it exists:
// a new work's manifests cost one request each instead of two, on the path from create to
// Applied. A create refused for lack of permission takes the read-first path, so the error
// reported names the first verb missing as before (the seeds' "cannot get resource").
func getOrCreate(ctx context.Context, c dynamic.ResourceInterface, required *unstructured.Unstructured, o owner, recorded bool) (*unstructured.Unstructured, bool, error) {
	create := func() (*unstructured.Unstructured, error) {
		refs, _ := o.merge(nil)
		obj := required.DeepCopy()
		obj.SetOwnerReferences(refs)
		return c.Create(ctx, obj, metav1.CreateOptions{})
	}
	if !recorded {
		obj, err := create()
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return obj, err == nil, err
		}
	}
	existing, err := c.Get(ctx, required.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj, err := create()
		return obj, err == nil, err
	}
	return existing, false, err
}

// mergeMap returns existing with required's entries set, and whether any changed.
func mergeMap(existing, required map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(existing)+len(required))
	for k, v := range existing {
		out[k] = v
	}
	changed := false
	for k, v := range required {
		if cur, ok := out[k]; !ok || cur != v {
			out[k] = v
			changed = true
		}
	}
	return out, changed
}

// sameContent compares everything but metadata and status.
func sameContent(a, b *unstructured.Unstructured) bool {
	if a.GroupVersionKind() != b.GroupVersionKind() {
		return false
	}
	strip := func(u *unstructured.Unstructured) map[string]any {
		m := make(map[string]any, len(u.Object))
		for k, v := range u.Object {
			if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
				m[k] = v
			}
		}
		return m
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// createOnlyApplier creates the object if missing and otherwise only keeps its owner
// reference current: the content is left to whoever else manages it.
type createOnlyApplier struct{ dyn dynamic.Interface }

func (a createOnlyApplier) apply(ctx context.Context, req applyRequest) (*unstructured.Unstructured, error) {
	c := req.client(a.dyn)
	existing, created, err := getOrCreate(ctx, c, req.required.DeepCopy(), req.owner, req.recorded)
	if err != nil || created {
		return existing, err
	}
	return patchOwner(ctx, c, existing, req.owner)
}

// patchOwner adds or removes the owner reference on existing, guarded by its resourceVersion.
func patchOwner(ctx context.Context, c dynamic.ResourceInterface, existing *unstructured.Unstructured, o owner) (*unstructured.Unstructured, error) {
	refs, changed := o.merge(existing.GetOwnerReferences())
	if !changed {
		return existing, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "resourceVersion": existing.GetResourceVersion(),
	}})
	if err != nil {
		return nil, err
	}
	return c.Patch(ctx, existing.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
}

// readOnlyApplier writes nothing; the live object is read for status and feedback only.
type readOnlyApplier struct{ dyn dynamic.Interface }

func (a readOnlyApplier) apply(ctx context.Context, req applyRequest) (*unstructured.Unstructured, error) {
	return req.client(a.dyn).Get(ctx, req.required.GetName(), metav1.GetOptions{})
}

// conflictError is a server-side apply conflict: fields of the manifest that another field
// manager owns. It is reported as reason ApplyConflict and not retried quickly, since only a
// change of the work or of the other manager resolves it.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

// serverSideApplier server-side-applies the manifest under the work's field manager
// (default work-agent), forcing ownership when the work says so.
type serverSideApplier struct{ dyn dynamic.Interface }

func (a serverSideApplier) apply(ctx context.Context, req applyRequest) (*unstructured.Unstructured, error) {
	manager, force := workv1.DefaultFieldManager, false
	if ssa := req.strategy.ServerSideApply; ssa != nil {
		if ssa.FieldManager != "" {
			manager = ssa.FieldManager
		}
		force = ssa.Force
	}
	required := req.required.DeepCopy()
	// An apply states only this manager's fields: the owner reference goes in when owned and
	// drops out (if this manager had applied it) when orphaned.
	if req.owner.owned {
		required.SetOwnerReferences([]metav1.OwnerReference{req.owner.ref})
	} else {
		required.SetOwnerReferences(nil)
	}
	required.SetResourceVersion("")
	c := req.client(a.dyn)
	if ssa := req.strategy.ServerSideApply; ssa != nil && len(ssa.IgnoreFields) > 0 {
		existing, err := c.Get(ctx, required.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			existing = nil
		case err != nil:
			return nil, err
		}
		if err := applyIgnoreFields(ctx, required, existing, ssa.IgnoreFields); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(required.Object)
	if err != nil {
		return nil, err
	}
	obj, err := c.Patch(ctx, required.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil && apierrors.IsConflict(err) && strings.Contains(err.Error(), "conflict") {
		return nil, &conflictError{msg: fmt.Sprintf("server-side apply as %s: %v", manager, apiMessage(err))}
	}
	return obj, err
}

// apiMessage is the API server's message without client-go's wrapping.
func apiMessage(err error) string {
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Message != "" {
		return se.Status().Message
	}
	return err.Error()
}
