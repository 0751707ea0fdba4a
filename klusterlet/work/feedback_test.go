package work

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// fbExtractors is an ExtractorSource over a registry of its own.
type fbExtractors struct {
	reg     *wasm.Registry
	builtin map[string]bool
}

func (e *fbExtractors) Registry() *wasm.Registry { return e.reg }
func (e *fbExtractors) Builtin(name string) bool { return e.builtin[name] }

var (
	fbEngineOnce sync.Once
	fbEngineVar  *wasm.Engine
	fbEngineErr  error
)

// fbEngine caches compiled modules on disk across runs, as core/wasm's tests do.
func fbEngine(t *testing.T) *wasm.Engine {
	t.Helper()
	fbEngineOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		fbEngineVar, fbEngineErr = wasm.NewEngine(context.Background(), wasm.EngineOptions{CacheDir: filepath.Join(dir, "flotilla", "wasm-test-compile")})
	})
	if fbEngineErr != nil {
		t.Fatal(fbEngineErr)
	}
	return fbEngineVar
}

// fbNewExtractors returns a source whose registry serves the built-in feedback-wellknown and
// the given test guests (core/wasm/testdata/guests/feedback, declaration = config).
func fbNewExtractors(t *testing.T, guests map[string]wasm.ModuleSpec) *fbExtractors {
	t.Helper()
	ctx := context.Background()
	e := fbEngine(t)
	src := &fbExtractors{reg: wasm.NewRegistry(), builtin: map[string]bool{}}
	set := func(spec wasm.ModuleSpec) {
		m, err := e.Load(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.reg.Set(ctx, m); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = src.reg.Remove(ctx, spec.Name) })
	}
	p, err := dist.Get("feedback-wellknown")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	set(wasm.ModuleSpec{Name: p.Name, Type: abi.TypeFeedbackExtractor, Wasm: mod})
	src.builtin[p.Name] = true
	guest, err := wasmtest.Build("feedback", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range guests {
		spec.Name, spec.Type, spec.Wasm = name, abi.TypeFeedbackExtractor, guest
		set(spec)
	}
	return src
}

func fbReader(src *fbExtractors) *feedbackReader {
	return &feedbackReader{extractors: func() ExtractorSource { return src }}
}

var fbDeploymentMeta = workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "web", Namespace: "default"}

func fbDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "default"},
		"spec":   map[string]any{"replicas": int64(3)},
		"status": map[string]any{"replicas": int64(3), "readyReplicas": int64(2), "availableReplicas": int64(2)},
	}}
}

var fbWellKnownOption = &workv1.ManifestConfigOption{FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}}

func fbInt(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
}

func fbNames(values []workv1.FeedbackValue) []string {
	var out []string
	for _, v := range values {
		out = append(out, v.Name)
	}
	return out
}

func TestWellKnownStatusIsServedByTheBuiltinExtractor(t *testing.T) {
	f := fbReader(fbNewExtractors(t, nil))
	option := &workv1.ManifestConfigOption{FeedbackRules: []workv1.FeedbackRule{
		{Type: workv1.WellKnownStatusType},
		{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "specReplicas", Path: ".spec.replicas"}}},
	}}
	got, err := f.values(context.Background(), fbDeployment(), fbDeploymentMeta, option)
	if err != nil {
		t.Fatal(err)
	}
	want := []workv1.FeedbackValue{fbInt("ReadyReplicas", 2), fbInt("Replicas", 3), fbInt("AvailableReplicas", 2), fbInt("specReplicas", 3)}
	if len(got) != len(want) {
		t.Fatalf("values %v, want %v", fbNames(got), fbNames(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || *got[i].Value.Integer != *want[i].Value.Integer || got[i].Value.Type != workv1.Integer {
			t.Fatalf("value %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAnAdminsExtractorTakesPrecedenceOverTheBuiltin(t *testing.T) {
	decl := `{"resources":[{"group":"apps","kind":"Deployment"}],"name":"%s"}`
	f := fbReader(fbNewExtractors(t, map[string]wasm.ModuleSpec{
		// Both sort after feedback-wellknown; the first of them by name wins.
		"zz-second": {Config: []byte(strings.Replace(decl, "%s", "zz-second", 1))},
		"zz-first":  {Config: []byte(strings.Replace(decl, "%s", "zz-first", 1))},
	}))
	got, err := f.values(context.Background(), fbDeployment(), fbDeploymentMeta, fbWellKnownOption)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Name != "ExtractedBy" || *got[1].Value.String != "zz-first" || got[0].Name != "InputBytes" || *got[0].Value.Integer < 100 {
		t.Fatalf("values %+v, want zz-first's InputBytes and ExtractedBy", got)
	}
}

func TestFailingExtractors(t *testing.T) {
	ctx := context.Background()
	f := fbReader(fbNewExtractors(t, map[string]wasm.ModuleSpec{
		"trap": {Config: []byte(`{"resources":[{"group":"apps","kind":"Deployment"}],"mode":"trap"}`)},
		"garbage": {Config: []byte(`{"resources":[{"group":"batch","kind":"Job"}],"mode":"garbage"}`),
			FailurePolicy: wasm.FailurePolicyFail},
		"raw":     {Config: []byte(`{"resources":[{"group":"","kind":"ConfigMap"}],"mode":"jsonraw"}`)},
		"ignored": {Config: []byte(`{"resources":[{"group":"apps","kind":"StatefulSet"}],"mode":"trap"}`), FailurePolicy: wasm.FailurePolicyIgnore},
		"lonely":  {Config: []byte(`{"resources":[{"group":"example.com","kind":"Widget"}],"mode":"trap"}`), FailurePolicy: wasm.FailurePolicyIgnore},
	}))
	read := func(group, kind string) ([]workv1.FeedbackValue, error) {
		m := workv1.ManifestResourceMeta{Group: group, Version: "v1", Kind: kind, Name: "x", Namespace: "default"}
		obj := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "status": map[string]any{"replicas": int64(1)}}}
		return f.values(ctx, obj, m, fbWellKnownOption)
	}
	for kind, want := range map[string]string{
		"Deployment.apps":    `WellKnownStatus of Deployment (group apps): wasm plugin "trap": export extract_feedback: Trap: `,
		"Job.batch":          `WellKnownStatus of Job (group batch): wasm plugin "garbage": export extract_feedback: InvalidOutput: feedback result: expected a JSON object`,
		"ConfigMap":          `wasm plugin "raw": export extract_feedback: InvalidOutput: value "Raw" is JsonRaw, which needs the RawFeedbackJsonString feature gate`,
		"Widget.example.com": `WellKnownStatus: no FeedbackExtractor plugin serves Widget (group example.com); skipped with failurePolicy Ignore: lonely (wasm plugin "lonely": export extract_feedback: Trap:`,
		"Secret":             "WellKnownStatus: no FeedbackExtractor plugin serves Secret (core group)",
	} {
		k, g, _ := strings.Cut(kind, ".")
		values, err := read(g, k)
		if err == nil || !strings.Contains(err.Error(), want) || len(values) != 0 {
			t.Errorf("%s: values %v, error %v; want no values and an error containing %q", kind, fbNames(values), err, want)
		}
	}
	// A failing Ignore plugin is skipped for the next one serving the kind: here the built-in.
	values, err := read("apps", "StatefulSet")
	if err != nil || len(values) != 1 || values[0].Name != "Replicas" {
		t.Fatalf("StatefulSet past an ignored plugin: %v, %v", fbNames(values), err)
	}
	// The trapping plugin still serves later calls (a new instance each time).
	if _, err := read("apps", "Deployment"); err == nil || !strings.Contains(err.Error(), "Trap") {
		t.Fatalf("second call: %v", err)
	}
}

func TestUnavailableExtractorsAreNamedWhenNoneServes(t *testing.T) {
	src := fbNewExtractors(t, nil)
	ctx := context.Background()
	for _, u := range []wasm.Unavailable{
		{Name: "broken", Type: abi.TypeFeedbackExtractor, FailurePolicy: wasm.FailurePolicyFail, Reason: wasm.ReasonSourceNotFound, Message: "ConfigMap x/y not found"},
		{Name: "optional", Type: abi.TypeFeedbackExtractor, FailurePolicy: wasm.FailurePolicyIgnore, Reason: wasm.ReasonInvalidModule, Message: "bad"},
	} {
		if err := src.reg.MarkUnavailable(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	f := fbReader(src)
	m := workv1.ManifestResourceMeta{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Name: "x"}
	_, err := f.values(ctx, &unstructured.Unstructured{Object: map[string]any{}}, m, fbWellKnownOption)
	want := "WellKnownStatus: no FeedbackExtractor plugin serves Certificate (group cert-manager.io); FeedbackExtractor plugins not Ready: broken (SourceNotFound: ConfigMap x/y not found)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	// A kind a loaded plugin serves is not held up by a plugin that cannot say what it serves.
	if _, err := f.values(ctx, fbDeployment(), fbDeploymentMeta, fbWellKnownOption); err != nil {
		t.Fatal(err)
	}
}

func TestWellKnownStatusWithoutALoader(t *testing.T) {
	for name, f := range map[string]*feedbackReader{
		"no source":     {},
		"no loader yet": {extractors: func() ExtractorSource { return nil }},
	} {
		_, err := f.values(context.Background(), fbDeployment(), fbDeploymentMeta, fbWellKnownOption)
		if err == nil || !strings.Contains(err.Error(), "no FeedbackExtractor plugins are loaded on this cluster") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
