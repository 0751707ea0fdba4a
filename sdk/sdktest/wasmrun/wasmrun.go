// Package wasmrun calls a built plugin module through Flotilla's real Wasm host
// (core/wasm) with typed requests: the same sandbox, limits, Extism ABI and
// decoders the hub and agents use. Plugin authors use it to test the .wasm they
// ship; the host-side helpers (Score, ReviewCSR, …) work on any *wasm.Module.
package wasmrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Load compiles wasmBytes as a plugin of type typ with pluginConfig config (nil
// for none) on a fresh engine with default limits, failing tb on error; types the hub
// runs without host clocks and entropy (abi.Deterministic) run so here too. Module and
// engine are closed at cleanup.
func Load(tb testing.TB, wasmBytes []byte, typ abi.PluginType, config []byte) *wasm.Module {
	tb.Helper()
	ctx := context.Background()
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		tb.Fatalf("creating the wasm engine: %v", err)
	}
	tb.Cleanup(func() { _ = engine.Close(ctx) })
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: tb.Name(), Type: typ, Wasm: wasmBytes, Config: config, Deterministic: abi.Deterministic(typ)})
	if err != nil {
		tb.Fatalf("loading %s plugin: %v", typ, err)
	}
	return m
}

// BuildTB is the part of testing.TB Build uses (Ginkgo's GinkgoT() has it too).
type BuildTB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
}

// Build compiles the Go plugin in dir (a main package) for wasip1 the way
// `make plugins` does and returns the module, failing tb on error.
func Build(tb BuildTB, dir string) []byte {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "plugin.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build %s for wasip1: %v\n%s", dir, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// DeclareInputs calls declare_inputs and decodes and validates the declaration.
func DeclareInputs(ctx context.Context, m *wasm.Module) (abi.PrioritizerInputs, error) {
	var decl abi.PrioritizerInputs
	out, err := m.Call(ctx, abi.ExportDeclareInputs, nil)
	if err != nil {
		return decl, err
	}
	if err := decl.DecodeJSON(out); err != nil {
		return decl, wasm.InvalidOutput(m.Name(), abi.ExportDeclareInputs, err, "%v", err)
	}
	if err := decl.Validate(); err != nil {
		return decl, wasm.InvalidOutput(m.Name(), abi.ExportDeclareInputs, err, "%v", err)
	}
	return decl, nil
}

// Prioritizer scores clusters with a loaded Prioritizer module, reusing its
// declaration and encoder across cycles. Not safe for concurrent use.
type Prioritizer struct {
	Module *wasm.Module
	Decl   abi.PrioritizerInputs
	enc    abi.ScoreEncoder
	input  []byte
	scores []int64
}

// NewPrioritizer asks m for its declaration.
func NewPrioritizer(ctx context.Context, m *wasm.Module) (*Prioritizer, error) {
	decl, err := DeclareInputs(ctx, m)
	if err != nil {
		return nil, err
	}
	return &Prioritizer{Module: m, Decl: decl}, nil
}

// Score runs one scheduling cycle: encode the declared attributes of clusters,
// call score, decode and clamp. The returned slice is reused by the next call.
func (p *Prioritizer) Score(ctx context.Context, clusters abi.ClusterSource) ([]int64, error) {
	var err error
	p.input, err = p.enc.Encode(p.input[:0], &p.Decl, clusters)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encoding the score input: %w", p.Module.Name(), err)
	}
	out, err := p.Module.Call(ctx, abi.ExportScore, p.input)
	if err != nil {
		return nil, err
	}
	p.scores, err = abi.DecodeScores(out, clusters.Len(), p.scores)
	if err != nil {
		return nil, wasm.InvalidOutput(p.Module.Name(), abi.ExportScore, err, "%v", err)
	}
	return p.scores, nil
}

// ReviewCSR calls review_csr.
func ReviewCSR(ctx context.Context, m *wasm.Module, req abi.CSRReview) (abi.CSRDecision, error) {
	var d abi.CSRDecision
	return d, call(ctx, m, abi.ExportReviewCSR, req.AppendJSON(nil), d.DecodeJSON)
}

// DeclareResources calls declare_resources and decodes and validates the declaration (the
// host did so at load too: Module.FeedbackResources holds its answer).
func DeclareResources(ctx context.Context, m *wasm.Module) (abi.FeedbackResources, error) {
	var decl abi.FeedbackResources
	if err := call(ctx, m, abi.ExportDeclareResources, nil, decl.DecodeJSON); err != nil {
		return decl, err
	}
	if err := decl.Validate(); err != nil {
		return decl, wasm.InvalidOutput(m.Name(), abi.ExportDeclareResources, err, "%v", err)
	}
	return decl, nil
}

// ExtractFeedback calls extract_feedback (whether or not the module declares the request's
// kind: plugin tests may check how it handles others).
func ExtractFeedback(ctx context.Context, m *wasm.Module, req abi.FeedbackRequest) (abi.FeedbackResult, error) {
	var r abi.FeedbackResult
	return r, call(ctx, m, abi.ExportExtractFeedback, req.AppendJSON(nil), r.DecodeJSON)
}

// RenderAddOn calls render_addon.
func RenderAddOn(ctx context.Context, m *wasm.Module, req abi.AddOnRequest) (abi.AddOnResult, error) {
	var r abi.AddOnResult
	return r, call(ctx, m, abi.ExportRenderAddOn, req.AppendJSON(nil), r.DecodeJSON)
}

// Transform calls transform_manifest twice with req and returns the decoded result; it
// fails when the two outputs differ, as the hub would roll out a different work on every
// render.
func Transform(ctx context.Context, m *wasm.Module, req abi.TransformRequest) (abi.TransformResult, error) {
	var r abi.TransformResult
	in := req.AppendJSON(nil)
	first, err := m.Call(ctx, abi.ExportTransformManifest, in)
	if err != nil {
		return r, err
	}
	second, err := m.Call(ctx, abi.ExportTransformManifest, in)
	if err != nil {
		return r, err
	}
	if string(first) != string(second) {
		return r, wasm.InvalidOutput(m.Name(), abi.ExportTransformManifest, nil,
			"two calls with the same request answered differently:\n%s\n%s", first, second)
	}
	if err := r.DecodeJSON(first); err != nil {
		return r, wasm.InvalidOutput(m.Name(), abi.ExportTransformManifest, err, "%v", err)
	}
	return r, nil
}

func call(ctx context.Context, m *wasm.Module, export string, in []byte, decode func([]byte) error) error {
	out, err := m.Call(ctx, export, in)
	if err != nil {
		return err
	}
	if err := decode(out); err != nil {
		return wasm.InvalidOutput(m.Name(), export, err, "%v", err)
	}
	return nil
}
