package wasmrun_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"

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

// TestHostServices loads the module on an engine of its own, since wasmrun.Load's
// engine discards logs, to see the guest's log line reach the host logger.
func TestHostServices(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		logged = append(logged, args)
		mu.Unlock()
	}, funcr.Options{})
	ctx := context.Background()
	e, err := wasm.NewEngine(ctx, wasm.EngineOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Load(ctx, wasm.ModuleSpec{Name: "services", Type: abi.TypeCSRApproval, Wasm: misbehave(t), Config: []byte(`{"mode":"test"}`)})
	if err != nil {
		t.Fatal(err)
	}

	d, err := wasmrun.ReviewCSR(ctx, m, review("config"))
	if err != nil || d.Message != `{"mode":"test"}` {
		t.Fatalf("pluginConfig seen by the guest: %q, %v", d.Message, err)
	}

	if _, err := wasmrun.ReviewCSR(ctx, m, review("log")); err != nil {
		t.Fatalf("logging: %v", err)
	}
	// The guest logs "reviewing <name>" at warn level, which the host logs at V(0),
	// tagged with the plugin's name.
	mu.Lock()
	lines := slices.Clone(logged)
	mu.Unlock()
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, `"msg"="reviewing csr-log"`) && strings.Contains(l, `"wasmPlugin"="services"`) && strings.Contains(l, `"guestLevel"="WARN"`)
	}) {
		t.Fatalf("the guest's warning did not reach the host logger; it logged:\n%s", strings.Join(lines, "\n"))
	}

	// A healthy instance is reused: its call counter goes up by one per call.
	first, err := wasmrun.ReviewCSR(ctx, m, review("count"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := wasmrun.ReviewCSR(ctx, m, review("count"))
	if err != nil {
		t.Fatal(err)
	}
	n1, err1 := strconv.Atoi(first.Message)
	n2, err2 := strconv.Atoi(second.Message)
	if err1 != nil || err2 != nil || n2 != n1+1 {
		t.Fatalf("call counts %q then %q: want consecutive integers (the instance was not reused)", first.Message, second.Message)
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
