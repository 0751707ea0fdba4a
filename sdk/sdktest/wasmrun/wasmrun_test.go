package wasmrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

var (
	buildOnce sync.Once
	module    []byte
)

// misbehave builds sdk/internal/testplugins/misbehave once per test binary.
func misbehave(t *testing.T) []byte {
	buildOnce.Do(func() { module = wasmrun.Build(t, filepath.Join("..", "..", "internal", "testplugins", "misbehave")) })
	if module == nil {
		t.Fatal("building the misbehave plugin failed")
	}
	return module
}

func review(user string) abi.CSRReview { return abi.CSRReview{Name: "csr-" + user, Username: user} }

// TestGuestErrorsAreReported checks the SDK turns each failure into an Extism error
// with a clear message, and that the module keeps serving afterwards.
func TestGuestErrorsAreReported(t *testing.T) {
	m := wasmrun.Load(t, misbehave(t), abi.TypeCSRApproval, []byte(`{"mode":"test"}`))
	ctx := context.Background()
	for _, tc := range []struct{ user, msg string }{
		{"panic", "plugin panicked: boom"},
		{"nil-map", "plugin panicked: assignment to entry in nil map"},
		{"error", "refusing csr-error"},
		{"invalid", `csr decision: decision: "Maybe" is not Approve, Deny or Abstain`},
	} {
		_, err := wasmrun.ReviewCSR(ctx, m, review(tc.user))
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "TestGuestErrorsAreReported") {
			t.Errorf("%s: error %v, want one naming the plugin and containing %q", tc.user, err, tc.msg)
		}
		if d, err := wasmrun.ReviewCSR(ctx, m, review("fine")); err != nil || d.Decision != abi.CSRApprove {
			t.Fatalf("after %s: %+v, %v; want the module to keep serving", tc.user, d, err)
		}
	}
}

func TestHostServices(t *testing.T) {
	m := wasmrun.Load(t, misbehave(t), abi.TypeCSRApproval, []byte(`{"mode":"test"}`))
	ctx := context.Background()
	d, err := wasmrun.ReviewCSR(ctx, m, review("config"))
	if err != nil || d.Message != `{"mode":"test"}` {
		t.Fatalf("pluginConfig seen by the guest: %q, %v", d.Message, err)
	}
	if _, err := wasmrun.ReviewCSR(ctx, m, review("log")); err != nil {
		t.Fatalf("logging: %v", err)
	}
	// A healthy instance is reused: its call counter keeps growing.
	first, err := wasmrun.ReviewCSR(ctx, m, review("count"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := wasmrun.ReviewCSR(ctx, m, review("count"))
	if err != nil || second.Message <= first.Message {
		t.Fatalf("call counts %q then %q (%v): the instance was not reused", first.Message, second.Message, err)
	}
}

func TestConfigRejection(t *testing.T) {
	ctx := context.Background()
	e, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	_, err = e.Load(ctx, wasm.ModuleSpec{Name: "m", Type: abi.TypeCSRApproval, Wasm: misbehave(t), Config: []byte(`{"reject":true}`)})
	if wasm.LoadReasonOf(err) != wasm.ReasonConfigRejected || !strings.Contains(err.Error(), "pluginConfig.reject: rejected as asked") {
		t.Fatalf("error %v (reason %q), want ConfigRejected with the plugin's message", err, wasm.LoadReasonOf(err))
	}
}

func TestWrongTypeIsMissingExport(t *testing.T) {
	ctx := context.Background()
	e, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	// An SDK module exports only its own extension point's functions.
	_, err = e.Load(ctx, wasm.ModuleSpec{Name: "m", Type: abi.TypePrioritizer, Wasm: misbehave(t)})
	if wasm.LoadReasonOf(err) != wasm.ReasonMissingExport {
		t.Fatalf("error %v (reason %q), want MissingExport", err, wasm.LoadReasonOf(err))
	}
}
