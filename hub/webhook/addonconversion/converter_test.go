package addonconversion_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/randfill"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	addonv1beta1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/addonconversion"
)

const (
	alpha = "addon.open-cluster-management.io/v1alpha1"
	beta  = "addon.open-cluster-management.io/v1beta1"
)

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// convert runs the converter on a copy of obj, through JSON as the webhook does.
func convert(t *testing.T, obj map[string]any, apiVersion string) map[string]any {
	t.Helper()
	in := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	out, err := addonconversion.New().Convert(context.Background(), in, apiVersion)
	if err != nil {
		t.Fatalf("converting %s to %s: %v", in.GetKind(), apiVersion, err)
	}
	return toMap(t, out.Object)
}

// TestFuzzRoundTripAsJSON sends random objects of every kind and both versions through the
// converter and back, as JSON: what comes back is what went in.
func TestFuzzRoundTripAsJSON(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(7), serializer.NewCodecFactory(runtime.NewScheme())).
		NilChance(0.3).NumElements(0, 3).
		Funcs(func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": c.String(0)}})
		})
	for _, tc := range []struct {
		obj      func() runtime.Object
		from, to string
		kind     string
	}{
		{func() runtime.Object { return &addonv1alpha1.ClusterManagementAddOn{} }, alpha, beta, "ClusterManagementAddOn"},
		{func() runtime.Object { return &addonv1alpha1.ManagedClusterAddOn{} }, alpha, beta, "ManagedClusterAddOn"},
		{func() runtime.Object { return &addonv1alpha1.AddOnDeploymentConfig{} }, alpha, beta, "AddOnDeploymentConfig"},
		{func() runtime.Object { return &addonv1alpha1.AddOnTemplate{} }, alpha, beta, "AddOnTemplate"},
		{func() runtime.Object { return &addonv1beta1.ClusterManagementAddOn{} }, beta, alpha, "ClusterManagementAddOn"},
		{func() runtime.Object { return &addonv1beta1.ManagedClusterAddOn{} }, beta, alpha, "ManagedClusterAddOn"},
		{func() runtime.Object { return &addonv1beta1.AddOnDeploymentConfig{} }, beta, alpha, "AddOnDeploymentConfig"},
		{func() runtime.Object { return &addonv1beta1.AddOnTemplate{} }, beta, alpha, "AddOnTemplate"},
	} {
		t.Run(tc.kind+" from "+tc.from, func(t *testing.T) {
			for i := range 500 {
				obj := tc.obj()
				f.Fill(obj)
				orig := toMap(t, obj)
				orig["apiVersion"], orig["kind"] = tc.from, tc.kind
				there := convert(t, orig, tc.to)
				if there["apiVersion"] != tc.to || there["kind"] != tc.kind {
					t.Fatalf("converted to %v %v", there["apiVersion"], there["kind"])
				}
				back := convert(t, there, tc.from)
				if !equality.Semantic.DeepEqual(back, orig) {
					t.Fatalf("object %d changed in a round trip through %s:\n%s", i, tc.to, diff.Diff(orig, back))
				}
			}
		})
	}
}

// TestMetadataPassesThrough: metadata the Go types would rewrite (or not know) reaches the
// API server unchanged; only annotations change.
func TestMetadataPassesThrough(t *testing.T) {
	obj := map[string]any{
		"apiVersion": alpha, "kind": "ManagedClusterAddOn",
		"metadata": map[string]any{
			"name": "a", "namespace": "cluster1", "uid": "u-1", "resourceVersion": "7", "generation": int64(3),
			"creationTimestamp": "2025-01-02T03:04:05Z", "labels": map[string]any{"l": "v"},
			"managedFields": []any{map[string]any{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}},
		},
		"spec": map[string]any{"installNamespace": "agents"},
	}
	got := convert(t, obj, beta)
	meta := got["metadata"].(map[string]any)
	want := toMap(t, obj["metadata"])
	want["annotations"] = map[string]any{addonv1beta1.InstallNamespaceAnnotation: "agents"}
	if !equality.Semantic.DeepEqual(meta, want) {
		t.Errorf("metadata:\n%s", diff.Diff(want, meta))
	}
	if spec := got["spec"].(map[string]any); len(spec) != 0 {
		t.Errorf("v1beta1 spec %v", spec)
	}
}

// newServer is a webhook server with the add-on conversion, serving requests in-process
// (never started, so it needs no API server).
func newServer(t *testing.T) *webhook.Server {
	t.Helper()
	srv, err := webhook.New(&rest.Config{Host: "https://127.0.0.1:1"}, webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterConversion(addonconversion.New()); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterConversion(addonconversion.New()); err == nil {
		t.Error("registering the same conversion twice succeeded")
	}
	return srv
}

// review posts a ConversionReview of objects to the server.
func review(t *testing.T, srv http.Handler, apiVersion string, objects ...string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	req := &apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: apiVersion},
	}
	for _, o := range objects {
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, addonconversion.Path, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	resp := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), resp); err != nil {
		t.Fatal(err)
	}
	if resp.APIVersion != "apiextensions.k8s.io/v1" || resp.Kind != "ConversionReview" || resp.Response == nil || resp.Response.UID != "review-1" {
		t.Fatalf("response %+v", resp)
	}
	return resp.Response
}

func TestReviewConvertsEveryObject(t *testing.T) {
	srv := newServer(t)
	resp := review(t, srv, beta,
		`{"apiVersion":"`+alpha+`","kind":"ManagedClusterAddOn","metadata":{"name":"a","namespace":"cluster1"},"spec":{"installNamespace":"x"},`+
			`"status":{"registrations":[{"signerName":"kubernetes.io/kube-apiserver-client","subject":{"user":"u"}}],"kubeClientDriver":"token"}}`,
		`{"apiVersion":"`+alpha+`","kind":"ClusterManagementAddOn","metadata":{"name":"c"},"spec":{"supportedConfigs":[{"group":"","resource":"configmaps"}]}}`,
		`{"apiVersion":"`+beta+`","kind":"AddOnTemplate","metadata":{"name":"t"},"spec":{"addonName":"t","agentSpec":{}}}`,
	)
	if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 3 {
		t.Fatalf("result %+v, %d objects", resp.Result, len(resp.ConvertedObjects))
	}
	var mca addonv1beta1.ManagedClusterAddOn
	if err := json.Unmarshal(resp.ConvertedObjects[0].Raw, &mca); err != nil {
		t.Fatal(err)
	}
	if r := mca.Status.Registrations; len(r) != 1 || r[0].Type != addonv1beta1.KubeClient || r[0].KubeClient.Driver != "token" || r[0].KubeClient.Subject.User != "u" ||
		mca.Annotations[addonv1beta1.InstallNamespaceAnnotation] != "x" {
		t.Errorf("ManagedClusterAddOn at v1beta1: %+v", mca)
	}
	var cma addonv1beta1.ClusterManagementAddOn
	if err := json.Unmarshal(resp.ConvertedObjects[1].Raw, &cma); err != nil {
		t.Fatal(err)
	}
	if d := cma.Spec.DefaultConfigs; len(d) != 1 || d[0].Name != addonv1beta1.ReservedNoDefaultConfigName {
		t.Errorf("defaultConfigs %+v", d)
	}
	if !strings.Contains(string(resp.ConvertedObjects[2].Raw), `"apiVersion":"`+beta+`"`) {
		t.Errorf("an object already at the version changed: %s", resp.ConvertedObjects[2].Raw)
	}
}

func TestReviewFailsOnBadInput(t *testing.T) {
	srv := newServer(t)
	const mca = `{"apiVersion":"` + alpha + `","kind":"ManagedClusterAddOn","metadata":{"name":"a","namespace":"cluster1"},`
	for _, tc := range []struct {
		name, obj, to string
		want          []string
	}{
		{"not an object", `["a"]`, beta, []string{"object 2 of 2", "decoding"}},
		{"wrong type", mca + `"status":{"registrations":"none"}}`, beta,
			[]string{"object 2 of 2", "ManagedClusterAddOn cluster1/a (" + alpha + ")", "status.registrations"}},
		{"wrong type deep", mca + `"status":{"registrations":[{"signerName":5}]}}`, beta, []string{"status.registrations.signerName"}},
		{"unknown field", mca + `"spec":{"installNamespce":"x"}}`, beta, []string{`unknown field "spec.installNamespce"`}},
		{"bad annotations", `{"apiVersion":"` + alpha + `","kind":"ManagedClusterAddOn","metadata":{"name":"a","annotations":{"a":1}}}`, beta,
			[]string{"metadata.annotations"}},
		{"unknown kind", `{"apiVersion":"` + alpha + `","kind":"Gadget","metadata":{"name":"g"}}`, beta, []string{"Gadget g", "unknown kind"}},
		{"other group", `{"apiVersion":"example.io/v1","kind":"Gadget","metadata":{"name":"g"}}`, beta, []string{"only addon.open-cluster-management.io"}},
		{"unknown version", mca + `"spec":{}}`, "addon.open-cluster-management.io/v2", []string{"unknown version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := `{"apiVersion":"` + alpha + `","kind":"AddOnDeploymentConfig","metadata":{"name":"ok","namespace":"n"},"spec":{}}`
			resp := review(t, srv, tc.to, ok, tc.obj)
			if resp.Result.Status != metav1.StatusFailure || len(resp.ConvertedObjects) != 0 {
				t.Fatalf("result %+v with %d objects, want a failure", resp.Result, len(resp.ConvertedObjects))
			}
			t.Logf("message: %s", resp.Result.Message)
			for _, w := range tc.want {
				if !strings.Contains(resp.Result.Message, w) {
					t.Errorf("message %q does not mention %q", resp.Result.Message, w)
				}
			}
		})
	}
}

// panicking converts by panicking.
type panicking struct{}

func (panicking) Conversion() webhook.Conversion {
	return webhook.Conversion{Path: "/convert/panics", CRDs: []string{"gadgets.example.io"}}
}

func (panicking) Convert(context.Context, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	var m map[string]any
	m["boom"] = 1
	return nil, nil
}

func TestReviewSurvivesAPanic(t *testing.T) {
	srv := newServer(t)
	if err := srv.RegisterConversion(panicking{}); err != nil {
		t.Fatal(err)
	}
	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"r","desiredAPIVersion":"example.io/v2",` +
		`"objects":[{"apiVersion":"example.io/v1","kind":"Gadget","metadata":{"name":"g"}}]}}`
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert/panics", strings.NewReader(body)))
	resp := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), resp); err != nil || resp.Response == nil {
		t.Fatalf("status %d, body %s (%v)", rec.Code, rec.Body, err)
	}
	if resp.Response.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Response.Result.Message, "Gadget g") ||
		!strings.Contains(resp.Response.Result.Message, "panic") {
		t.Errorf("result %+v", resp.Response.Result)
	}

	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, addonconversion.Path, strings.NewReader(`{"kind":`)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a request that is no ConversionReview: status %d", rec.Code)
	}
}
