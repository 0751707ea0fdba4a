package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const gi = 1 << 30 * 1000 // a GiB in milli-units

var clusters = abi.ClusterList{
	{Name: "a", Allocatable: map[string]int64{"cpu": 4000, "memory": 16 * gi}, Decisions: 3, Selected: true},
	{Name: "b", Allocatable: map[string]int64{"cpu": 8000, "memory": 64 * gi}, Decisions: 1},
	{Name: "c", Allocatable: map[string]int64{"cpu": 5000}, Selected: true},
	{Name: "d", Allocatable: map[string]int64{"cpu": 4000, "memory": 32 * gi}, Decisions: 3},
	{Name: "e"},
}

// want holds each prioritizer's scores of clusters.
var want = map[string][]int64{
	// maxCount 3: 3 → -100; 1 → 2·trunc(100·(0.5−1/3)) = 32; 0 → 100.
	native.Balance: {-100, 32, 100, -100, 100},
	native.Steady:  {100, 0, 100, 0, 0},
	// 4000..8000: 5000 → trunc((0.25−0.5)·200) = −50; e reports nothing → 0.
	native.ResourceAllocatableCPU: {-100, 100, -50, -100, 0},
	// 16..64 Gi: 32 → trunc((1/3−0.5)·200) = −33; c and e report nothing → 0.
	native.ResourceAllocatableMemory: {-100, 100, 0, -33, 0},
}

func host(name string) *sdktest.Host { return sdktest.NewHost(string(native.Config(name))) }

func TestInputsFollowConfig(t *testing.T) {
	for _, name := range native.Names() {
		decl, err := sdktest.DeclareInputs(&builtin{}, host(name))
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := native.Inputs(name)
		if string(decl.AppendJSON(nil)) != string(exp.AppendJSON(nil)) {
			t.Errorf("%s declares %s, want %s", name, decl.AppendJSON(nil), exp.AppendJSON(nil))
		}
	}
	balance, _ := sdktest.DeclareInputs(&builtin{}, host(native.Balance))
	steady, _ := sdktest.DeclareInputs(&builtin{}, host(native.Steady))
	cpu, _ := sdktest.DeclareInputs(&builtin{}, host(native.ResourceAllocatableCPU))
	if !balance.Decisions || balance.Selected || !steady.Selected || steady.Decisions ||
		len(cpu.Resources) != 1 || cpu.Resources[0] != (abi.ResourceInput{Kind: abi.ResourceAllocatable, Name: "cpu"}) {
		t.Fatalf("declarations: Balance %+v, Steady %+v, CPU %+v", balance, steady, cpu)
	}
}

func TestUnknownConfigFailsAtDeclare(t *testing.T) {
	for _, tc := range []struct{ config, msg string }{
		{"", `pluginConfig: missing; want {"prioritizer": one of Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory}`},
		{`{"prioritizer": "Spread"}`, `pluginConfig.prioritizer: "Spread" is not a BuiltIn prioritizer (known: Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory)`},
		{`{"prioritizer": "Balance", "extra": true}`, `pluginConfig: unknown field "extra"`},
	} {
		if _, err := sdktest.DeclareInputs(&builtin{}, sdktest.NewHost(tc.config)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("config %q: declare error %v, want one containing %q", tc.config, err, tc.msg)
		}
		if err := sdktest.ValidateConfig(&builtin{}, sdktest.NewHost(tc.config)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("config %q: validate error %v, want one containing %q", tc.config, err, tc.msg)
		}
	}
	for _, name := range native.Names() {
		if err := sdktest.ValidateConfig(&builtin{}, host(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScore(t *testing.T) {
	for _, name := range native.Names() {
		got, err := sdktest.Score(&builtin{}, host(name), clusters)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[name]) {
			t.Errorf("%s: scores %v, want %v", name, got, want[name])
		}
	}
}

func TestScoreWithoutPlacementSource(t *testing.T) {
	for _, name := range []string{native.Balance, native.Steady} {
		_, err := sdktest.Score(&builtin{}, host(name), attributesOnly{clusters})
		if err == nil || !strings.Contains(err.Error(), "does not implement abi.PlacementSource") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// attributesOnly is a ClusterSource of a host that knows nothing of placements.
type attributesOnly struct{ abi.ClusterSource }

func shipped(t *testing.T) []byte {
	t.Helper()
	p, err := dist.Get("prioritizer-builtin")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestShippedModule runs the module in plugins/dist through the real host with each
// configuration and checks it scores exactly like the logic above.
func TestShippedModule(t *testing.T) {
	mod := shipped(t)
	ctx := context.Background()
	for _, name := range native.Names() {
		t.Run(name, func(t *testing.T) {
			pr, err := wasmrun.NewPrioritizer(ctx, wasmrun.Load(t, mod, abi.TypePrioritizer, native.Config(name)))
			if err != nil {
				t.Fatal(err)
			}
			exp, _ := native.Inputs(name)
			if string(pr.Decl.AppendJSON(nil)) != string(exp.AppendJSON(nil)) {
				t.Fatalf("declare_inputs answered %s", pr.Decl.AppendJSON(nil))
			}
			got, err := pr.Score(ctx, clusters)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want[name]) {
				t.Fatalf("wasm scores %v, want %v", got, want[name])
			}
			// A second cycle on the same instance reuses buffers; nothing may leak across.
			got, err = pr.Score(ctx, clusters[1:3])
			if err != nil {
				t.Fatal(err)
			}
			second := map[string][]int64{
				native.Balance:                   {-100, 100},
				native.Steady:                    {0, 100},
				native.ResourceAllocatableCPU:    {100, -100},
				native.ResourceAllocatableMemory: {100, 0},
			}[name]
			if !slices.Equal(got, second) {
				t.Fatalf("second cycle: wasm scores %v, want %v", got, second)
			}
		})
	}
}

// TestShippedModuleRefusesWhatItDidNotDeclare sends the Balance module a version-1
// input without decision counts, as a host unaware of them would.
func TestShippedModuleRefusesWhatItDidNotDeclare(t *testing.T) {
	ctx := context.Background()
	m := wasmrun.Load(t, shipped(t), abi.TypePrioritizer, native.Config(native.Balance))
	in, err := abi.EncodeScoreInput(nil, &abi.PrioritizerInputs{}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Call(ctx, abi.ExportScore, in)
	if err == nil || !strings.Contains(err.Error(), "decision counts sent=false, declared=true") {
		t.Fatalf("error %v", err)
	}
}

func TestShippedModuleRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	_, err = engine.Load(ctx, wasm.ModuleSpec{Name: "placement-typo", Type: abi.TypePrioritizer, Wasm: shipped(t),
		Config: []byte(`{"prioritizer": "Balanced"}`)})
	if err == nil || !strings.Contains(err.Error(), "ConfigRejected") || !strings.Contains(err.Error(), `"Balanced" is not a BuiltIn prioritizer`) {
		t.Fatalf("error %v", err)
	}
}
