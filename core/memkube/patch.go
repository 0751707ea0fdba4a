package memkube

import (
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// patch applies a JSON, merge, strategic merge (built-in kinds) or apply patch. Called with
// c.mu held.
func (c *Cluster) patch(r *resource, key objKey, sub string, pt types.PatchType, body []byte, o writeOpts) ([]byte, error) {
	if pt == types.ApplyPatchType || pt == types.ApplyYAMLPatchType {
		return c.apply(r, key, sub, body, o)
	}
	t, e, err := c.getLocked(r, key)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if patched, err = p.Apply(e.data); err != nil {
			return nil, invalid(r, key.name, field.Invalid(field.NewPath(""), string(body), err.Error()))
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(e.data, body); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		if !r.builtin {
			return nil, apierrors.NewGenericServerResponse(415, "patch", r.gr(), key.name,
				fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s", types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType), 0, false)
		}
		typed, err := c.builtin.scheme.New(r.gvk())
		if err != nil {
			return nil, err
		}
		if patched, err = strategicpatch.StrategicMergePatch(e.data, body, typed); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, apierrors.NewGenericServerResponse(415, "patch", r.gr(), key.name, fmt.Sprintf("unsupported patch type %q", pt), 0, false)
	}
	obj, err := decode(patched)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := c.checkTarget(r, key.ns, key.name, obj); err != nil {
		return nil, err
	}
	if err := checkRV(r, key.name, obj, e); err != nil {
		return nil, err
	}
	return c.replace(t, r, key, e, sub, obj, o, nil)
}

// apply is server-side apply: upstream's FieldManager merges the applied configuration into
// the live object (or an empty one: apply creates) and tracks its fields.
func (c *Cluster) apply(r *resource, key objKey, sub string, body []byte, o writeOpts) ([]byte, error) {
	if o.manager == "" {
		return nil, apierrors.NewBadRequest("PATCH with an apply patch requires fieldManager")
	}
	var obj map[string]any
	if err := yaml.Unmarshal(body, &obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	j, err := jsonMarshal(obj)
	if err != nil {
		return nil, err
	}
	if obj, err = decode(j); err != nil { // integers as int64
		return nil, err
	}
	if str(obj, "apiVersion") == "" || str(obj, "kind") == "" {
		return nil, apierrors.NewBadRequest("apiVersion and kind are required in an apply configuration")
	}
	if err := c.checkTarget(r, key.ns, key.name, obj); err != nil {
		return nil, err
	}
	applied := &unstructured.Unstructured{Object: obj}
	fm := r.fm
	if sub == "status" {
		fm = r.statusFM
	}
	t, e, err := c.getLocked(r, key)
	if e == nil {
		if sub != "" {
			return nil, err
		}
		if str(meta(obj), "resourceVersion") != "" {
			return nil, conflict(r, key.name)
		}
		empty, _ := unstructuredCreater{}.New(r.gvk())
		res, err := fm.Apply(empty, applied, o.manager, o.force)
		if err != nil {
			return nil, err
		}
		return c.create(r, key.ns, res.(*unstructured.Unstructured).Object, o, true)
	}
	if err := checkRV(r, key.name, obj, e); err != nil {
		return nil, err
	}
	live, err := decode(e.data)
	if err != nil {
		return nil, err
	}
	inVersion(r, live)
	res, err := fm.Apply(&unstructured.Unstructured{Object: live}, applied, o.manager, o.force)
	if err != nil {
		return nil, err
	}
	return c.replace(t, r, key, e, sub, nil, o, res.(*unstructured.Unstructured))
}
