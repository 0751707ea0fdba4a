// Package seedcheck checks example objects (the documented seed YAML) the way the
// API server would accept them, without running one: the document is defaulted,
// pruned and validated against the generated CRD (unknown fields, OpenAPI schema,
// object metadata, embedded resources, list-map keys, CEL rules) and decoded
// strictly into its Go type, and the Go type must carry every field the document
// sets (and, with Validator.CompareDefaulted, every default the CRD adds). The
// seed tests of every API group (cluster, work, addon) use it; it has no other
// callers.
package seedcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Validator checks documents of the kinds whose CRDs it loaded.
type Validator struct {
	// CompareDefaulted makes Check also apply the CRD defaults to the typed
	// object, as the API server would before storing it, and require it to hold
	// every value of the defaulted document, compared exactly: no tolerance for
	// absent zero values or duration spellings. A Go field that writes a zero
	// value where the CRD declares a default fails this.
	CompareDefaulted bool

	scheme *runtime.Scheme
	crds   map[schema.GroupVersionKind]*crdCheck
}

// crdCheck holds what the API server derives from one CRD version.
type crdCheck struct {
	namespaced bool
	structural *structuralschema.Structural
	schema     apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
}

// New loads the CRDs matching crdGlob. scheme must know the Go types of the kinds
// to be checked.
func New(scheme *runtime.Scheme, crdGlob string) (*Validator, error) {
	files, err := filepath.Glob(crdGlob)
	if err != nil {
		return nil, fmt.Errorf("CRD pattern %q: %w", crdGlob, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD matches %q (run make generate)", crdGlob)
	}
	v := &Validator{scheme: scheme, crds: map[schema.GroupVersionKind]*crdCheck{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("CRD file %s: %w", f, err)
		}
		for _, ver := range crd.Spec.Versions {
			c, err := newCRDCheck(crd, ver)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, ver.Name, err)
			}
			v.crds[schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}] = c
		}
	}
	return v, nil
}

func newCRDCheck(crd *apiextensionsv1.CustomResourceDefinition, ver apiextensionsv1.CustomResourceDefinitionVersion) (*crdCheck, error) {
	if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
		return nil, errors.New("no schema")
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	sv, _, err := apiextensionsvalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &crdCheck{
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		structural: structural,
		schema:     sv,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// Check validates one YAML document against its CRD as on create followed by a
// status update, decodes it strictly into its Go type (unknown fields and keys
// differing only in case are errors) and returns the typed object. When both the
// CRD and the Go type refuse the document, the error carries both reasons. The
// typed object must carry every value the document sets, and with
// CompareDefaulted, once the CRD defaults are applied to both, every value the
// API server would store.
func (v *Validator) Check(data []byte) (runtime.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("reading apiVersion/kind: %w", err)
	}
	gvk := tm.GroupVersionKind()
	obj, err := v.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	// CRD validation first: its errors name the offending field path; the Go
	// type's errors name the field as written.
	defaulted, crdErr := v.Defaulted(data)
	if decodeErr := decodeStrict(data, obj); crdErr != nil || decodeErr != nil {
		return nil, errors.Join(crdErr, decodeErr)
	}
	doc, err := toUnstructured(data)
	if err != nil {
		return nil, err
	}
	typed, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	if lost := MissingLeaves("", doc, typed); len(lost) > 0 {
		slices.Sort(lost)
		return nil, fmt.Errorf("fields lost by %T: %s", obj, strings.Join(lost, ", "))
	}
	if v.CompareDefaulted {
		c := v.crds[gvk]
		structuraldefaulting.Default(typed, c.structural)
		pruning.Prune(typed, c.structural, true)
		if lost := missingLeaves("", defaulted, typed, true); len(lost) > 0 {
			slices.Sort(lost)
			return nil, fmt.Errorf("fields lost by %T once defaulted: %s", obj, strings.Join(lost, ", "))
		}
	}
	return obj, nil
}

// decodeStrict decodes a YAML document into obj, refusing unknown fields and
// keys that match a field only when case is ignored.
func decodeStrict(data []byte, obj runtime.Object) error {
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return fmt.Errorf("strict decoding into %T: %w", obj, err)
	}
	// encoding/json matches keys case-insensitively; sigs.k8s.io/json reports
	// such near-misses as strict errors.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, obj.DeepCopyObject())
	if err != nil {
		return fmt.Errorf("decoding into %T: %w", obj, err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("strict decoding into %T: %w", obj, errors.Join(strictErrs...))
	}
	return nil
}

// Defaulted validates a document against its CRD and returns it with the CRD
// defaults applied.
func (v *Validator) Defaulted(data []byte) (map[string]any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("reading apiVersion/kind: %w", err)
	}
	gvk := tm.GroupVersionKind()
	c, ok := v.crds[gvk]
	if !ok {
		return nil, fmt.Errorf("no CRD serves %s", gvk)
	}
	u, err := toUnstructured(data)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(u, c.structural)
	pruned := pruning.PruneWithOptions(runtime.DeepCopyJSON(u), c.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(pruned) > 0 {
		slices.Sort(pruned)
		return nil, fmt.Errorf("fields unknown to the CRD: %s", strings.Join(pruned, ", "))
	}
	ctx := context.Background()
	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(&unstructured.Unstructured{Object: u},
		c.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u, c.structural, false)...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u, c.schema)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, c.structural, u)...)
	if len(errs) == 0 {
		celErrs, _ := c.cel.Validate(ctx, nil, c.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return u, nil
}

// toUnstructured decodes YAML as the API server decodes JSON bodies: whole numbers
// become int64.
func toUnstructured(data []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	u := map[string]any{}
	if err := utiljson.Unmarshal(j, &u); err != nil {
		return nil, err
	}
	return u, nil
}

// MissingLeaves lists the leaf paths of want that got lacks or holds with another
// value. Durations are compared by value, so "5m" matches "5m0s" as written back
// by metav1.Duration, and a zero value may be absent from got, as omitempty
// fields leave it out on the wire.
func MissingLeaves(prefix string, want, got any) []string {
	return missingLeaves(prefix, want, got, false)
}

// missingLeaves is MissingLeaves; with exact set, leaves must print the same:
// durations are not compared by value, and zero values must be present.
func missingLeaves(prefix string, want, got any, exact bool) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k, wv := range w {
			out = append(out, missingLeaves(prefix+"."+k, wv, g[k], exact)...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		var out []string
		if len(g) > len(w) {
			out = append(out, fmt.Sprintf("%s (%d items, got %d)", prefix, len(w), len(g)))
		}
		for i, wv := range w {
			var gv any
			if i < len(g) {
				gv = g[i]
			}
			out = append(out, missingLeaves(fmt.Sprintf("%s[%d]", prefix, i), wv, gv, exact)...)
		}
		return out
	default:
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return nil
		}
		if !exact && (sameDuration(want, got) || (got == nil && isZero(want))) {
			return nil
		}
		return []string{fmt.Sprintf("%s (%v, got %v)", prefix, want, got)}
	}
}

func sameDuration(a, b any) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 {
		return false
	}
	ad, err1 := time.ParseDuration(as)
	bd, err2 := time.ParseDuration(bs)
	return err1 == nil && err2 == nil && ad == bd
}

func isZero(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return false
}
