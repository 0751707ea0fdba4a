// Package addonconversion is the conversion webhook of the addon.open-cluster-management.io
// CRDs: it converts ClusterManagementAddOn, ManagedClusterAddOn, AddOnDeploymentConfig and
// AddOnTemplate between v1alpha1 (stored) and v1beta1 with the functions of
// core/apis/addon/v1beta1. Register it with the hub's webhook server:
//
//	err := srv.RegisterConversion(addonconversion.New())
package addonconversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sjson "sigs.k8s.io/json"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	addonv1beta1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// Group is the API group converted.
const Group = "addon.open-cluster-management.io"

// Path is where the webhook server serves the conversion.
const Path = "/convert/" + Group

// CRDs are the CustomResourceDefinitions converted.
var CRDs = []string{
	"addondeploymentconfigs." + Group,
	"addontemplates." + Group,
	"clustermanagementaddons." + Group,
	"managedclusteraddons." + Group,
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(addonv1alpha1.AddToScheme(s), addonv1beta1.AddToScheme(s)); err != nil {
		panic(err)
	}
	return s
}()

// New returns the add-on converter.
func New() webhook.Converter { return converter{} }

type converter struct{}

func (converter) Conversion() webhook.Conversion {
	return webhook.Conversion{Path: Path, CRDs: CRDs}
}

// Convert converts obj to apiVersion. The object's metadata passes through as the API
// server sent it, except for the annotations the conversion adds or removes; spec and status
// are decoded strictly, so a field the Go types do not know fails the conversion (naming
// it) instead of being dropped.
func (converter) Convert(_ context.Context, obj *unstructured.Unstructured, apiVersion string) (*unstructured.Unstructured, error) {
	from := obj.GroupVersionKind()
	to, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	if from.Group != Group || to.Group != Group {
		return nil, fmt.Errorf("only %s objects are converted here, not from %s to %s", Group, from.GroupVersion(), to)
	}
	if from.GroupVersion() == to {
		return obj, nil
	}
	if !scheme.IsVersionRegistered(to) {
		return nil, fmt.Errorf("unknown version %s", to)
	}
	in, err := scheme.New(from)
	if err != nil {
		return nil, fmt.Errorf("unknown kind %s", from)
	}
	if err := decode(obj, in); err != nil {
		return nil, err
	}
	out, err := addonv1beta1.Convert(in)
	if err != nil {
		return nil, err
	}
	if gvks, _, err := scheme.ObjectKinds(out); err != nil || gvks[0].GroupVersion() != to {
		return nil, fmt.Errorf("converting %s to %s: no conversion", from, to)
	}
	return encode(obj, out, to.WithKind(from.Kind))
}

// decode reads spec, status and annotations of obj into the typed object into, strictly.
func decode(obj *unstructured.Unstructured, into runtime.Object) error {
	content := maps.Clone(obj.Object)
	delete(content, "metadata")
	if ann, found, err := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "annotations"); err != nil {
		return fmt.Errorf("metadata.annotations: %w", err)
	} else if found {
		content["metadata"] = map[string]any{"annotations": ann}
	}
	data, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	strict, err := sjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s (no such field in %T; converting would lose it)", strings.Join(msgs, "; "), into)
	}
	return nil
}

// encode is the converted object: out's content with in's metadata and out's annotations.
func encode(in *unstructured.Unstructured, out runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	result := &unstructured.Unstructured{Object: map[string]any{}}
	if err := sjson.UnmarshalCaseSensitivePreserveInts(data, &result.Object); err != nil {
		return nil, fmt.Errorf("decoding the result: %w", err)
	}
	meta, _, _ := unstructured.NestedFieldNoCopy(in.Object, "metadata")
	if m, ok := meta.(map[string]any); ok {
		meta = runtime.DeepCopyJSONValue(m)
		result.Object["metadata"] = meta
	} else {
		delete(result.Object, "metadata")
	}
	ann := out.(interface{ GetAnnotations() map[string]string }).GetAnnotations()
	if len(ann) > 0 || result.Object["metadata"] != nil {
		result.SetAnnotations(ann)
	}
	result.SetGroupVersionKind(gvk)
	return result, nil
}
