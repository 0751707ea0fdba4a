package wasm_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// feedbackGuest is testdata/guests/feedback: its declaration is its pluginConfig.
func feedbackGuest(t *testing.T) []byte {
	t.Helper()
	b, err := wasmtest.Build("feedback", "")
	if err != nil {
		t.Fatalf("building test guest: %v", err)
	}
	return b
}

func loadExtractor(t *testing.T, e *wasm.Engine, name, config string) (*wasm.Module, error) {
	t.Helper()
	spec := wasm.ModuleSpec{Name: name, Type: abi.TypeFeedbackExtractor, Wasm: feedbackGuest(t)}
	if config != "" {
		spec.Config = []byte(config)
	}
	m, err := e.Load(context.Background(), spec)
	if err == nil {
		t.Cleanup(func() { _ = m.Close(context.Background()) })
	}
	return m, err
}

func TestFeedbackExtractorDeclarationIsReadAtLoad(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m, err := loadExtractor(t, e, "deployments", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.FeedbackResources(), []abi.GroupKind{{Group: "apps", Kind: "Deployment"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("FeedbackResources() = %v, want %v", got, want)
	}
	if !m.Serves("apps", "Deployment") || m.Serves("", "Deployment") || m.Serves("apps", "StatefulSet") {
		t.Fatal("Serves disagrees with the declaration")
	}
	// Other types declare nothing.
	p := load(t, e, wasm.ModuleSpec{Name: "prioritizer"})
	if p.FeedbackResources() != nil || p.Serves("apps", "Deployment") {
		t.Fatalf("a Prioritizer serves %v", p.FeedbackResources())
	}
}

func TestRegistryFindsTheExtractorsOfAKind(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	r := wasm.NewRegistry()
	for name, config := range map[string]string{
		"b-deployments": "",
		"a-both":        `{"resources":[{"kind":"Pod"},{"group":"apps","kind":"Deployment"}]}`,
		"c-pods":        `{"resources":[{"group":"","kind":"Pod"}]}`,
	} {
		m, err := loadExtractor(t, e, name, config)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Set(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	names := func(ms []*wasm.Module) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name())
		}
		return out
	}
	for gk, want := range map[abi.GroupKind][]string{
		{Group: "apps", Kind: "Deployment"}: {"a-both", "b-deployments"},
		{Kind: "Pod"}:                       {"a-both", "c-pods"},
		{Kind: "Secret"}:                    nil,
		{Group: "apps", Kind: "Pod"}:        nil,
	} {
		if got := names(r.FeedbackExtractors(gk.Group, gk.Kind)); !reflect.DeepEqual(got, want) {
			t.Errorf("FeedbackExtractors(%s) = %v, want %v", gk, got, want)
		}
	}
	if _, err := r.Remove(context.Background(), "a-both"); err != nil {
		t.Fatal(err)
	}
	if got := names(r.FeedbackExtractors("", "Pod")); !reflect.DeepEqual(got, []string{"c-pods"}) {
		t.Errorf("after removing a-both: %v", got)
	}
}

func TestInvalidDeclarationsAreRefused(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	for config, want := range map[string]string{
		`{"resources":[]}`: "declare_resources returned an invalid declaration: feedback resources: resources: must declare at least one group/kind",
		`{}`:               "feedback resources: resources: must declare at least one group/kind",
		`{"resources":[{"group":"Apps","kind":"Deployment"}]}`: `resources[0].group: "Apps" is not an API group`,
		`{"resources":[{"kind":"Pod"},{"kind":"Pod"}]}`:        "resources[1]: Pod duplicates resources[0]",
		`[{"kind":"Pod"}]`: "declare_resources returned an invalid declaration: feedback resources: expected a JSON object",
		`"fail"`:           "declare_resources failed: GuestError: no resources for this config",
		`"panic"`:          "declare_resources failed: Trap:",
	} {
		_, err := loadExtractor(t, e, "declares", config)
		var le *wasm.LoadError
		if !errors.As(err, &le) || le.Reason != wasm.ReasonInvalidModule || !strings.Contains(le.Message, want) {
			t.Errorf("config %s: Load error %v, want InvalidModule containing %q", config, err, want)
		}
	}
}

func TestExtractorWithoutDeclarationIsMissingAnExport(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	_, err := e.Load(context.Background(), wasm.ModuleSpec{Name: "undeclared", Type: abi.TypeFeedbackExtractor, Wasm: wasmtest.CSR(t)})
	var le *wasm.LoadError
	if !errors.As(err, &le) || le.Reason != wasm.ReasonMissingExport ||
		!strings.Contains(le.Message, "a FeedbackExtractor plugin must export declare_resources, extract_feedback; missing: declare_resources, extract_feedback") {
		t.Fatalf("Load error %v, want MissingExport naming declare_resources", err)
	}
}
