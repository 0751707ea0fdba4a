package wasm_test

import (
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
)

// A Deterministic module's instances read no host clock or entropy: two modules (two
// runtimes) answer the same calls with the same bytes. Without it, they differ.
func TestDeterministicInstancesIgnoreHostClocksAndEntropy(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	v1 := wasmtest.Misbehave(t, wasmtest.V1)
	clocks := func(deterministic bool) [2][]string {
		var out [2][]string
		for i := range out {
			m := load(t, e, wasm.ModuleSpec{Name: "clock", Wasm: v1, Deterministic: deterministic, Limits: wasm.Limits{PoolSize: 1}})
			if m.Deterministic() != deterministic {
				t.Fatalf("Deterministic() = %v", m.Deterministic())
			}
			for range 3 {
				out[i] = append(out[i], call(t, m, "clock", ""))
			}
		}
		return out
	}
	if got := clocks(true); !equal(got[0], got[1]) {
		t.Errorf("deterministic modules answered differently:\n%q\n%q", got[0], got[1])
	}
	if got := clocks(false); equal(got[0], got[1]) {
		t.Errorf("modules with host clocks answered the same (the test cannot tell them apart): %q", got[0])
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
