package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
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
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

const (
	seedGlob = "../../../e2e/testdata/seeds/cluster-*.yaml"
	crdGlob  = "../../crds/bases/" + GroupName + "_*.yaml"
)

// seedKinds are the kinds of this group that the seed documents must cover.
var seedKinds = []string{
	"ManagedCluster", "ManagedClusterSet", "ManagedClusterSetBinding",
	"Placement", "PlacementDecision", "ClusterClaim", "AddOnPlacementScore",
}

// TestSeedExamples decodes every cluster-group seed strictly into the Go types
// and validates it against the generated CRD the way the API server would on
// create plus a status update: defaulting, pruning, OpenAPI schema, list-map
// keys and CEL rules.
func TestSeedExamples(t *testing.T) {
	files, err := filepath.Glob(seedGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no seed documents match %s", seedGlob)
	}
	v := newValidator(t)
	seen := map[string]int{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := v.check(data)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			seen[obj.GetObjectKind().GroupVersionKind().Kind]++
			wantKind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind)
			if !strings.HasSuffix(filepath.Base(f), "-"+wantKind+".yaml") {
				t.Errorf("%s holds a %s; the file name must end in -%s.yaml", filepath.Base(f), wantKind, wantKind)
			}
		})
	}
	for _, k := range seedKinds {
		if seen[k] == 0 {
			t.Errorf("no seed document of kind %s", k)
		}
	}
}

// TestSeedValidatorRejects makes sure the checks above have teeth: each broken
// variant of a valid document must be rejected for the stated reason.
func TestSeedValidatorRejects(t *testing.T) {
	v := newValidator(t)
	cases := []struct {
		name, doc, want string
	}{
		{
			name: "misnamed field",
			doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}
spec: {hubAcceptClient: true}`,
			want: `unknown field "hubAcceptClient"`,
		},
		{
			name: "unknown kind",
			doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedClusterThing
metadata: {name: c1}`,
			want: "no kind",
		},
		{
			name: "taint effect outside the enum",
			doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}
spec:
  taints: [{key: gpu, effect: NoSchedule}]`,
			want: "spec.taints[0].effect",
		},
		{
			name: "missing spec",
			doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}`,
			want: "spec: Required value",
		},
		{
			name: "prioritizer weight above 10",
			doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  prioritizerPolicy:
    configurations: [{scoreCoordinate: {builtIn: Steady}, weight: 11}]`,
			want: "spec.prioritizerPolicy.configurations[0].weight",
		},
		{
			name: "clustersPerDecisionGroup above 100%",
			doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "150%"}}`,
			want: "clustersPerDecisionGroup",
		},
		{
			name: "namespaced kind without namespace",
			doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p}
spec: {}`,
			want: "metadata.namespace",
		},
		{
			name: "cluster-scoped kind with namespace",
			doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: ClusterClaim
metadata: {name: id.k8s.io, namespace: default}
spec: {value: x}`,
			want: "metadata.namespace",
		},
		{
			name: "binding named differently from its set",
			doc: `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: a, namespace: default}
spec: {clusterSet: b}`,
			want: "must have the same name as the target ManagedClusterSet",
		},
		{
			name: "duplicate score names",
			doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: s, namespace: cluster1}
status:
  scores: [{name: cpu, value: 1}, {name: cpu, value: 2}]`,
			want: "status.scores[1]",
		},
		{
			name: "decision without reason",
			doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata: {name: d, namespace: default}
status:
  decisions: [{clusterName: c1}]`,
			want: "status.decisions[0].reason",
		},
		{
			name: "score outside [-100, 100]",
			doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: s, namespace: cluster1}
status:
  scores: [{name: cpu, value: 101}]`,
			want: "status.scores[0].value",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.check([]byte(tc.doc))
			if err == nil {
				t.Fatalf("document accepted, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestDefaultsFromCRD checks that the API server would fill in OCM's defaults
// on the minimal seeds.
func TestDefaultsFromCRD(t *testing.T) {
	v := newValidator(t)
	u := v.defaulted(t, `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  prioritizerPolicy:
    configurations: [{scoreCoordinate: {builtIn: Steady}}]
  tolerations: [{key: gpu}]
  decisionStrategy: {groupStrategy: {}}`)
	want := map[string]any{
		"spec.prioritizerPolicy.mode":                                  "Additive",
		"spec.prioritizerPolicy.configurations.0.weight":               int64(1),
		"spec.prioritizerPolicy.configurations.0.scoreCoordinate.type": "BuiltIn",
		"spec.tolerations.0.operator":                                  "Equal",
		"spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup": "100%",
	}
	for path, w := range want {
		if got := lookup(u, path); got != w {
			t.Errorf("%s = %#v, want %#v", path, got, w)
		}
	}

	u = v.defaulted(t, `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: s}`)
	if got := lookup(u, "spec.clusterSelector.selectorType"); got != string(clusterv1beta2.ExclusiveClusterSetLabel) {
		t.Errorf("ManagedClusterSet selectorType defaults to %#v, want ExclusiveClusterSetLabel", got)
	}

	u = v.defaulted(t, `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c}
spec: {}`)
	if got := lookup(u, "spec.leaseDurationSeconds"); got != int64(60) {
		t.Errorf("ManagedCluster leaseDurationSeconds defaults to %#v, want 60", got)
	}
}

// lookup walks a dotted path through maps and (numeric) list indexes.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// crdCheck validates objects of one kind and version like the API server does.
type crdCheck struct {
	namespaced bool
	structural *structuralschema.Structural
	schema     apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
}

type validator struct {
	scheme *runtime.Scheme
	crds   map[schema.GroupVersionKind]*crdCheck
}

func newValidator(t *testing.T) *validator {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clusterv1.AddToScheme, clusterv1beta1.AddToScheme, clusterv1beta2.AddToScheme, clusterv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(crdGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no CRDs match %s; run make generate", crdGlob)
	}
	v := &validator{scheme: s, crds: map[schema.GroupVersionKind]*crdCheck{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, ver := range crd.Spec.Versions {
			c, err := newCRDCheck(crd, ver)
			if err != nil {
				t.Fatalf("%s version %s: %v", crd.Name, ver.Name, err)
			}
			v.crds[schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}] = c
		}
	}
	return v
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

// check decodes one YAML document strictly into its Go type and validates it
// against the CRD. It returns the typed object.
func (v *validator) check(data []byte) (runtime.Object, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("reading apiVersion/kind: %w", err)
	}
	gvk := tm.GroupVersionKind()
	obj, err := v.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, fmt.Errorf("strict decoding into %T: %w", obj, err)
	}
	u, err := v.validate(gvk, data)
	if err != nil {
		return nil, err
	}
	// The typed object and the validated one must carry the same content once
	// defaults are applied to both.
	typed, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	c := v.crds[gvk]
	structuraldefaulting.Default(typed, c.structural)
	pruning.Prune(typed, c.structural, true)
	if lost := missingLeaves("", u, typed); len(lost) > 0 {
		return nil, fmt.Errorf("fields lost by the Go type: %s", strings.Join(lost, ", "))
	}
	return obj, nil
}

// validate applies what the API server applies on create and status update.
func (v *validator) validate(gvk schema.GroupVersionKind, data []byte) (map[string]any, error) {
	c, ok := v.crds[gvk]
	if !ok {
		return nil, fmt.Errorf("no CRD serves %s", gvk)
	}
	u, err := toUnstructured(data)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(u, c.structural)
	pruned := pruning.PruneWithOptions(deepCopy(u), c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(pruned) > 0 {
		slices.Sort(pruned)
		return nil, fmt.Errorf("fields unknown to the CRD: %s", strings.Join(pruned, ", "))
	}
	var errs field.ErrorList
	accessor := &unstructured.Unstructured{Object: u}
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(accessor, c.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u, c.schema)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, c.structural, u)...)
	if c.cel != nil && len(errs) == 0 {
		celErrs, _ := c.cel.Validate(context.Background(), nil, c.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return u, nil
}

func (v *validator) defaulted(t *testing.T, doc string) map[string]any {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
		t.Fatal(err)
	}
	u, err := v.validate(tm.GroupVersionKind(), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// toUnstructured decodes YAML the way the API server decodes JSON bodies:
// whole numbers become int64, not float64.
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

func deepCopy(u map[string]any) map[string]any {
	return runtime.DeepCopyJSON(u)
}

// missingLeaves lists the leaf paths of want that got does not have with an
// equal value.
func missingLeaves(prefix string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		var out []string
		for k, wv := range w {
			out = append(out, missingLeaves(prefix+"."+k, wv, g[k])...)
		}
		return out
	case []any:
		g, _ := got.([]any)
		var out []string
		for i, wv := range w {
			var gv any
			if i < len(g) {
				gv = g[i]
			}
			out = append(out, missingLeaves(fmt.Sprintf("%s[%d]", prefix, i), wv, gv)...)
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s (%v != %v)", prefix, want, got)}
		}
		return nil
	}
}
