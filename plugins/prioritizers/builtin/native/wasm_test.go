package native_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmbench"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// fleet is wasmbench's synthetic fleet seen by one placement: decisions of other
// placements per cluster, a busiest cluster outside the candidates, and this
// placement's current selection. It is the abi.ClusterSource plus
// abi.PlacementSource a scheduler hands to both paths.
type fleet struct {
	wasmbench.Source
	counts []int64
	max    int64
	sel    []bool
}

func (f fleet) DecisionCount(i int) int64 { return f.counts[i] }
func (f fleet) MaxDecisionCount() int64   { return f.max }
func (f fleet) Selected(i int) bool       { return f.sel[i] }

func newFleet(n int, extraMax int64) fleet {
	f := fleet{Source: wasmbench.Fleet(n), counts: make([]int64, n), sel: make([]bool, n)}
	rng := uint64(0x2545f4914f6cdd1d)
	next := func(k int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(k))
	}
	for i := range f.counts {
		if next(4) != 0 {
			f.counts[i] = int64(next(300))
		}
		f.sel[i] = next(10) == 0
		f.max = max(f.max, f.counts[i])
	}
	f.max += extraMax
	return f
}

func shipped(tb testing.TB) []byte {
	tb.Helper()
	p, err := dist.Get("prioritizer-builtin")
	if err != nil {
		tb.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		tb.Fatal(err)
	}
	return mod
}

// load loads the module configured as prioritizer name and asks its declaration.
func load(tb testing.TB, engine *wasm.Engine, mod []byte, name string) (*wasm.Module, *abi.PrioritizerInputs) {
	tb.Helper()
	ctx := context.Background()
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: "placement-" + name, Type: abi.TypePrioritizer, Wasm: mod, Config: native.Config(name)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close(ctx) })
	out, err := m.Call(ctx, abi.ExportDeclareInputs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var decl abi.PrioritizerInputs
	if err := decl.DecodeJSON(out); err != nil {
		tb.Fatal(err)
	}
	return m, &decl
}

// score is one scheduling cycle's host call: encode, call, decode and clamp.
func score(ctx context.Context, m *wasm.Module, decl *abi.PrioritizerInputs, enc *abi.ScoreEncoder, src abi.ClusterSource, buf []byte) ([]int64, error) {
	in, err := enc.Encode(buf[:0], decl, src)
	if err != nil {
		return nil, err
	}
	out, err := m.Call(ctx, abi.ExportScore, in)
	if err != nil {
		return nil, err
	}
	return abi.DecodeScores(out, src.Len(), nil)
}

// TestWasmMatchesNative scores a 5,000-cluster fleet with each BuiltIn prioritizer
// twice: through the shipped module on the real host (core/wasm: encode, call,
// decode, as the scheduler does) and with the native Scorer on the same source.
func TestWasmMatchesNative(t *testing.T) {
	mod := shipped(t)
	ctx := context.Background()
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	for _, f := range []fleet{newFleet(5000, 0), newFleet(5000, 250), newFleet(1, 0)} {
		for _, name := range native.Names() {
			m, decl := load(t, engine, mod, name)
			got, err := score(ctx, m, decl, &abi.ScoreEncoder{}, f, nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := native.New(name)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int64, f.Len())
			if err := s.Score(f, want); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s, cluster %d (%s): wasm %d, native %d", name, i, f.Name(i), got[i], want[i])
				}
			}
			// The fleet must exercise the arithmetic, or agreement proves little.
			seen := map[int64]bool{}
			for _, s := range want {
				seen[s] = true
			}
			min := map[string]int{native.Balance: 50, native.Steady: 2, native.ResourceAllocatableCPU: 8, native.ResourceAllocatableMemory: 5}[name]
			if f.Len() > 1 && len(seen) < min {
				t.Errorf("%s: only %d distinct scores over %d clusters: %v", name, len(seen), len(want), slices.Sorted(maps.Keys(seen)))
			}
		}
	}
}

// BenchmarkBuiltin5000 times one cycle of each BuiltIn prioritizer over 5,000
// clusters: the whole host call (wasm) next to the native Scorer on the same source.
func BenchmarkBuiltin5000(b *testing.B) {
	mod := shipped(b)
	ctx := context.Background()
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer engine.Close(ctx)
	f := newFleet(5000, 0)
	for _, name := range native.Names() {
		b.Run(name+"/wasm", func(b *testing.B) {
			m, decl := load(b, engine, mod, name)
			var enc abi.ScoreEncoder
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				if _, err := score(ctx, m, decl, &enc, f, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/native", func(b *testing.B) {
			s, _ := native.New(name)
			scores := make([]int64, f.Len())
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Score(f, scores); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
