package work

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	paths, err := resolve(context.Background(), u.Object, 0, workv1.IgnoreField{
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
		if _, err := resolve(context.Background(), u.Object, 0, bad); err == nil {
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
	if err := applyIgnoreFields(context.Background(), req, nil, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 3 {
		t.Fatalf("replicas on create = %d", v)
	}
	// Existing with replicas 7 (an HPA): the live value is kept.
	live := obj(t, deploy)
	_ = unstructured.SetNestedField(live.Object, int64(7), "spec", "replicas")
	req = obj(t, deploy)
	if err := applyIgnoreFields(context.Background(), req, live, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 7 {
		t.Fatalf("replicas = %d, want the live 7", v)
	}
}

func TestOnSpokeChangeKeepsOnlyWhatOthersChanged(t *testing.T) {
	fields := []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPointers: []string{"/spec/replicas"}}}
	applied := obj(t, deploy)
	if err := applyIgnoreFields(context.Background(), applied, nil, fields); err != nil {
		t.Fatal(err)
	}
	if applied.GetAnnotations()[IgnoredFieldsAnnotation] == "" {
		t.Fatal("no record of the applied value")
	}
	// Unchanged on the spoke: a new manifest value (5) is applied.
	req := obj(t, deploy)
	_ = unstructured.SetNestedField(req.Object, int64(5), "spec", "replicas")
	if err := applyIgnoreFields(context.Background(), req, applied, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 5 {
		t.Fatalf("replicas = %d, want the manifest's 5", v)
	}
	// Changed on the spoke to 9 since: the live value wins, now and later.
	live := applied.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, int64(9), "spec", "replicas")
	req = obj(t, deploy)
	if err := applyIgnoreFields(context.Background(), req, live, fields); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas"); v != 9 {
		t.Fatalf("replicas = %d, want the spoke's 9", v)
	}
	if req.GetAnnotations()[IgnoredFieldsAnnotation] != applied.GetAnnotations()[IgnoredFieldsAnnotation] {
		t.Fatal("the record of what the work applied must stay")
	}
}

func TestJQPathExpressionsSelectByValue(t *testing.T) {
	u := obj(t, deploy)
	// Numbers of an unstructured object are int64, which gojq alone neither compares nor types.
	paths, err := resolve(context.Background(), u.Object, 0, workv1.IgnoreField{JQPathExpressions: []string{
		`.spec | select(.replicas == 3) | .replicas`,
		`.. | select(type == "number")`,
		`.spec.template.spec.containers[-1].image`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range paths {
		got = append(got, p.String())
	}
	if want := ".spec.replicas .spec.replicas .spec.template.spec.containers[1].image"; strings.Join(got, " ") != want {
		t.Fatalf("paths %q, want %q", strings.Join(got, " "), want)
	}
}

// ignoreErr runs applyIgnoreFields and returns its error, which must be an ignoreFieldError
// (the manifest's Applied condition reason AppliedManifestSSAIgnoreFieldError).
func ignoreErr(ctx context.Context, t *testing.T, u *unstructured.Unstructured, fields []workv1.IgnoreField) string {
	t.Helper()
	var err error
	start := time.Now()
	err = applyIgnoreFields(ctx, u, nil, fields)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("applyIgnoreFields took %v: the bounds did not stop it", took)
	}
	var ie *ignoreFieldError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T), want an *ignoreFieldError", err, err)
	}
	return err.Error()
}

func TestJQPathExpressionsAreBounded(t *testing.T) {
	big := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: ns}\n")
	data := map[string]any{}
	for i := 0; i <= 10000; i++ {
		data[fmt.Sprintf("k%05d", i)] = "v"
	}
	big.Object["data"] = data

	t.Run("refused like the webhook does", func(t *testing.T) {
		msg := ignoreErr(context.Background(), t, obj(t, deploy), []workv1.IgnoreField{
			{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".spec.replicas"}},
			{Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JQPathExpressions: []string{".spec.replicas", "repeat(.)"}}})
		if want := `ignoreFields[1].jqPathExpressions[1] "repeat(.)": repeat(.) is not allowed: it can generate values without end`; msg != want {
			t.Fatalf("message %q\nwant    %q", msg, want)
		}
	})
	t.Run("cap of paths", func(t *testing.T) {
		msg := ignoreErr(context.Background(), t, big.DeepCopy(), []workv1.IgnoreField{
			{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{".data[]"}}})
		if want := `ignoreFields[0].jqPathExpressions[0] ".data[]": selects more than 10000 fields (the cap of one expression)`; msg != want {
			t.Fatalf("message %q\nwant    %q", msg, want)
		}
	})
	t.Run("deadline of one expression", func(t *testing.T) {
		msg := ignoreErr(context.Background(), t, big.DeepCopy(), []workv1.IgnoreField{
			{Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{".data[] as $a | .data[] | select(false)"}}})
		if want := `ignoreFields[0].jqPathExpressions[0] ".data[] as $a | .data[] | select(false)": did not finish within 250ms (the deadline of one expression)`; msg != want {
			t.Fatalf("message %q\nwant    %q", msg, want)
		}
	})
	t.Run("budget of the work", func(t *testing.T) {
		ctx := withIgnoreFieldsBudget(context.Background())
		budgetOf(ctx).left = 50 * time.Millisecond
		fields := []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokePresent,
			JQPathExpressions: []string{".data[] as $a | .data[] | select(false)", ".data.k00001"}}}
		msg := ignoreErr(ctx, t, big.DeepCopy(), fields)
		if want := `ignoreFields[0].jqPathExpressions[0] ".data[] as $a | .data[] | select(false)": did not finish within 50ms: the rest of the 2s the work's jq path expressions may take in all`; msg != want {
			t.Fatalf("message %q\nwant    %q", msg, want)
		}
		// Spent: the next manifest of the work is not evaluated at all.
		msg = ignoreErr(ctx, t, obj(t, deploy), []workv1.IgnoreField{{Condition: workv1.IgnoreFieldsConditionOnSpokePresent,
			JQPathExpressions: []string{".spec.replicas"}}})
		if want := `ignoreFields[0].jqPathExpressions[0] ".spec.replicas": not evaluated: the work's jq path expressions took the 2s they may take in all`; msg != want {
			t.Fatalf("message %q\nwant    %q", msg, want)
		}
		// A new pass (another work, or the next reconcile) has its own budget.
		if err := applyIgnoreFields(withIgnoreFieldsBudget(context.Background()), obj(t, deploy), nil, fields[:0]); err != nil {
			t.Fatal(err)
		}
		if err := applyIgnoreFields(withIgnoreFieldsBudget(context.Background()), obj(t, deploy), nil, []workv1.IgnoreField{{
			Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{".spec.replicas"}}}); err != nil {
			t.Fatal(err)
		}
	})
}
