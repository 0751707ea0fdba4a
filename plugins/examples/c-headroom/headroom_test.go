// Package headroom_test checks the C example prioritizer (src/headroom.c) through the
// same host the hub uses. `make plugins` builds build/headroom.wasm with clang and
// wasi-libc (installing them if needed) before `make test` runs this.
package headroom_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

func module(t *testing.T) *wasm.Module {
	b, err := os.ReadFile("build/headroom.wasm")
	if err != nil {
		t.Fatalf("%v: build the C example first with `make plugins` (it installs clang, lld and wasi-libc if missing)", err)
	}
	return wasmrun.Load(t, b, abi.TypePrioritizer, nil)
}

func TestScores(t *testing.T) {
	ctx := context.Background()
	m := module(t)
	p, err := wasmrun.NewPrioritizer(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	wantDecl := abi.PrioritizerInputs{
		Labels:    []string{"flotilla.dev/maintenance"},
		Resources: []abi.ResourceInput{{Kind: abi.ResourceAllocatable, Name: "cpu"}, {Kind: abi.ResourceCapacity, Name: "cpu"}},
	}
	if !slices.Equal(p.Decl.Labels, wantDecl.Labels) || !slices.Equal(p.Decl.Resources, wantDecl.Resources) {
		t.Fatalf("declaration %+v, want %+v", p.Decl, wantDecl)
	}
	clusters := abi.ClusterList{
		{Name: "half-free", Allocatable: map[string]int64{"cpu": 4000}, Capacity: map[string]int64{"cpu": 8000}},
		{Name: "all-free", Allocatable: map[string]int64{"cpu": 8000}, Capacity: map[string]int64{"cpu": 8000}},
		{Name: "maintenance", Labels: map[string]string{"flotilla.dev/maintenance": "true"},
			Allocatable: map[string]int64{"cpu": 8000}, Capacity: map[string]int64{"cpu": 8000}},
		{Name: "not-in-maintenance", Labels: map[string]string{"flotilla.dev/maintenance": "false"},
			Allocatable: map[string]int64{"cpu": 1000}, Capacity: map[string]int64{"cpu": 3000}},
		{Name: "unreported"},
		{Name: "zero-capacity", Allocatable: map[string]int64{"cpu": 0}, Capacity: map[string]int64{"cpu": 0}},
		// Past int32: the host switches the capacity column to 8-byte cells.
		{Name: "huge", Allocatable: map[string]int64{"cpu": 3_000_000_000}, Capacity: map[string]int64{"cpu": 4_000_000_000}},
	}
	got, err := p.Score(ctx, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{50, 100, -100, 33, 0, 0, 75}; !slices.Equal(got, want) {
		t.Fatalf("scores %v, want %v", got, want)
	}
}

func TestMalformedInputIsAnError(t *testing.T) {
	m := module(t)
	_, err := m.Call(context.Background(), abi.ExportScore, []byte("not a score input"))
	if err == nil || !strings.Contains(err.Error(), "not a version 1 score input") {
		t.Fatalf("error %v, want the plugin's message about the input", err)
	}
}
