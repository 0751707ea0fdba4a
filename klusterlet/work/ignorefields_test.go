package work

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

const deploy = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: app, image: app:v1}
      - {name: sidecar, image: sidecar:v1}
`

func TestResolveAllThreeSelectorKinds(t *testing.T) {
	u := obj(t, deploy)
	paths, err := resolve(u.Object, workv1.IgnoreField{
		JSONPaths:         []string{".spec.replicas", ".spec.template.spec.containers[0].image"},
		JSONPointers:      []string{"/spec/template/spec/containers/1/name", "/metadata/annotations/a~1b"},
		JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range paths {
		got = append(got, p.String())
	}
	want := ".spec.replicas .spec.template.spec.containers[0].image .spec.template.spec.containers[1].name .metadata.annotations.a/b .spec.template.spec.containers[1].image"
	if strings.Join(got, " ") != want {
		t.Fatalf("paths %q\nwant   %q", strings.Join(got, " "), want)
	}
	for _, bad := range []workv1.IgnoreField{
		{JSONPaths: []string{`.spec.containers[?(@.name=="x")]`}},
		{JSONPaths: []string{"spec.replicas"}},
		{JSONPointers: []string{"spec"}},
		{JQPathExpressions: []string{".spec | | ."}},
	} {
		if _, err := resolve(u.Object, bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		} else if _, ok := err.(*ignoreFieldError); !ok {
			t.Errorf("%+v: error %T, want *ignoreFieldError", bad, err)
		}
	}
}

func TestOnSpokePresentKeepsLiveValues(t *testing.T) {
	fields := []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".spec.replicas"}}}
	// Creating: the manifest's value is applied.
	req := obj(t, deploy)
	if err := applyIgnoreFields(req, nil, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 3 {
		t.Fatalf("replicas on create = %d", v)
	}
	// Existing with replicas 7 (an HPA): the live value is kept.
	live := obj(t, deploy)
	_ = unstructured.SetNestedField(live.Object, int64(7), "spec", "replicas")
	req = obj(t, deploy)
	if err := applyIgnoreFields(req, live, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 7 {
		t.Fatalf("replicas = %d, want the live 7", v)
	}
}

func TestOnSpokeChangeKeepsOnlyWhatOthersChanged(t *testing.T) {
	fields := []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPointers: []string{"/spec/replicas"}}}
	applied := obj(t, deploy)
	if err := applyIgnoreFields(applied, nil, fields); err != nil {
		t.Fatal(err)
	}
	if applied.GetAnnotations()[IgnoredFieldsAnnotation] == "" {
		t.Fatal("no record of the applied value")
	}
	// Unchanged on the spoke: a new manifest value (5) is applied.
	req := obj(t, deploy)
	_ = unstructured.SetNestedField(req.Object, int64(5), "spec", "replicas")
	if err := applyIgnoreFields(req, applied, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 5 {
		t.Fatalf("replicas = %d, want the manifest's 5", v)
	}
	// Changed on the spoke to 9 since: the live value wins, now and later.
	live := applied.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, int64(9), "spec", "replicas")
	req = obj(t, deploy)
	if err := applyIgnoreFields(req, live, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 9 {
		t.Fatalf("replicas = %d, want the spoke's 9", v)
	}
	if req.GetAnnotations()[IgnoredFieldsAnnotation] != applied.GetAnnotations()[IgnoredFieldsAnnotation] {
		t.Fatal("the record of what the work applied must stay")
	}
}
