package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

type realModule struct {
	name   string
	typ    abi.PluginType
	wasm   []byte
	config string
}

// distConfigs are the plugins that refuse to load without a pluginConfig.
var distConfigs = map[string]string{
	"csr-autoapprove":     `{"clusterNamePatterns":["dev-*"],"users":["u"]}`,
	"prioritizer-builtin": `{"prioritizer":"Balance"}`,
}

// realModules is every module we ship or test with: the plugins in plugins/dist, the
// test guests and, when built, the C example.
func realModules(t *testing.T) []realModule {
	var mods []realModule
	plugins, err := dist.Plugins()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		b, err := p.Wasm()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		mods = append(mods, realModule{p.Name, p.Type, b, distConfigs[p.Name]})
	}
	feedback, err := wasmtest.Build("feedback", "")
	if err != nil {
		t.Fatal(err)
	}
	mods = append(mods,
		realModule{"guest-misbehave", abi.TypePrioritizer, wasmtest.Misbehave(t, wasmtest.V1), ""},
		realModule{"guest-csr", abi.TypeCSRApproval, wasmtest.CSR(t), ""},
		realModule{"guest-feedback", abi.TypeFeedbackExtractor, feedback, ""},
	)
	if b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "examples", "c-headroom", "build", "headroom.wasm")); err == nil {
		mods = append(mods, realModule{"c-headroom", abi.TypePrioritizer, b, ""})
	} else {
		t.Logf("C example not built (make plugins-examples), skipped: %v", err)
	}
	return mods
}

// TestInstrumentRealModules instruments every real module: it must succeed (no
// fallback to per-iteration checks), the result must validate, keep every import and
// export (same function, same signature, same name-section name, index moved by the
// one added import), and load and answer through the engine.
func TestInstrumentRealModules(t *testing.T) {
	ctx := context.Background()
	// The interpreter validates like the compiler, in a fraction of the time; the
	// engine below compiles for real.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { _ = rt.Close(ctx) })
	e := newEngine(t, wasm.EngineOptions{})
	for _, mod := range realModules(t) {
		t.Run(mod.name, func(t *testing.T) {
			start := time.Now()
			out, err := wasm.Instrument(mod.wasm)
			if err != nil {
				t.Fatalf("instrument: %v", err)
			}
			t.Logf("%d -> %d bytes in %s", len(mod.wasm), len(out), time.Since(start))
			before, err := rt.CompileModule(ctx, mod.wasm)
			if err != nil {
				t.Fatalf("the original does not compile: %v", err)
			}
			after, err := rt.CompileModule(ctx, out)
			if err != nil {
				t.Fatalf("the instrumented module does not compile: %v", err)
			}
			bi, ai := before.ImportedFunctions(), after.ImportedFunctions()
			if len(ai) != len(bi)+1 {
				t.Fatalf("%d imported functions, want %d", len(ai), len(bi)+1)
			}
			for i, b := range bi {
				if sameFunc(b, ai[i]) != "" {
					t.Fatalf("import %d: %s", i, sameFunc(b, ai[i]))
				}
			}
			if m, n, _ := ai[len(bi)].Import(); m != "flotilla:host/env" || n != "deadline_check" {
				t.Fatalf("added import is %s %s", m, n)
			}
			be, ae := before.ExportedFunctions(), after.ExportedFunctions()
			if len(be) != len(ae) {
				t.Fatalf("%d exported functions, want %d", len(ae), len(be))
			}
			for name, b := range be {
				a := ae[name]
				if a == nil {
					t.Fatalf("export %s is gone", name)
				}
				if a.Index() != b.Index()+1 {
					t.Errorf("export %s: function %d, want %d", name, a.Index(), b.Index()+1)
				}
				if d := sameFunc(b, a); d != "" {
					t.Errorf("export %s: %s", name, d)
				}
			}
			if len(before.ExportedMemories()) != len(after.ExportedMemories()) {
				t.Errorf("exported memories changed")
			}

			m, err := e.Load(ctx, wasm.ModuleSpec{Name: mod.name, Type: mod.typ, Wasm: mod.wasm, Config: []byte(mod.config)})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			defer m.Close(ctx)
			if m.Digest() != wasm.Digest(mod.wasm) {
				t.Errorf("digest %s is not the original module's", m.Digest())
			}
			for _, w := range m.Warnings() {
				if strings.Contains(w, "instrumented") {
					t.Errorf("fell back: %s", w)
				}
			}
		})
	}
}

func sameFunc(b, a api.FunctionDefinition) string {
	switch {
	case b.Name() != a.Name():
		return "name " + a.Name() + ", want " + b.Name()
	case !equalTypes(b.ParamTypes(), a.ParamTypes()) || !equalTypes(b.ResultTypes(), a.ResultTypes()):
		return "signature changed"
	}
	bm, bn, _ := b.Import()
	am, an, _ := a.Import()
	if bm != am || bn != an {
		return "import " + am + " " + an + ", want " + bm + " " + bn
	}
	return ""
}

func equalTypes(a, b []api.ValueType) bool { return string(a) == string(b) }

// TestLoopsStopAtTheDeadline: an instrumented module's loop is stopped by the host's
// deadline_check; one instrument cannot rewrite runs with wazero's per-iteration
// checks, says so in its warnings, and still times out.
func TestLoopsStopAtTheDeadline(t *testing.T) {
	const timeout = 2 * time.Second // not shorter: it also bounds the guest's start-up at Load
	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			e := newEngine(t, wasm.EngineOptions{})
			if fallback {
				wasm.FailInstrumentation(e, errors.New("function 7: unsupported opcode 0x06"))
			}
			m := load(t, e, wasm.ModuleSpec{Name: "stopped", Limits: wasm.Limits{CallTimeout: timeout}})
			w := strings.Join(m.Warnings(), "; ")
			if explained := strings.Contains(w, "could not be instrumented") && strings.Contains(w, "unsupported opcode 0x06"); explained != fallback {
				t.Fatalf("warnings %q", w)
			}
			start := time.Now()
			_, err := m.Call(context.Background(), "loop", nil)
			elapsed := time.Since(start)
			wantCallError(t, err, wasm.KindTimeout, "stopped", "loop")
			if elapsed > timeout+time.Second {
				t.Errorf("the loop stopped %s after its deadline", elapsed-timeout)
			}
			// deadline_check panics with the context's error, which wazero wraps.
			cause := fmt.Sprint(errors.Unwrap(err))
			if viaHost := strings.Contains(cause, "deadline_check") && errors.Is(err, context.DeadlineExceeded); viaHost == fallback {
				t.Errorf("stopped by deadline_check: %v, want %v: %s", viaHost, !fallback, cause)
			}
			if got := call(t, m, "echo", "after"); got != "after" {
				t.Fatalf("echo after timeout = %q", got)
			}
		})
	}
}

func TestModuleImportingDeadlineCheckIsRefused(t *testing.T) {
	mod := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x04\x01\x60\x00\x00" +
		"\x02\x24\x01\x11flotilla:host/env\x0edeadline_check\x00\x00")
	_, err := newEngine(t, wasm.EngineOptions{}).Load(context.Background(), wasm.ModuleSpec{Name: "sneaky", Type: abi.TypePrioritizer, Wasm: mod})
	if wasm.LoadReasonOf(err) != wasm.ReasonInvalidModule || !strings.Contains(err.Error(), "reserved for the host") {
		t.Fatalf("Load: %v", err)
	}
}
