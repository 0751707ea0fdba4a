package wasmbench

import (
	"context"
	"slices"
	"testing"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const fleetSize = 5000

// goModule is the Go-built affinity prioritizer shipped in plugins/dist.
func goModule(tb testing.TB) []byte {
	tb.Helper()
	p, err := dist.Get("prioritizer-affinity")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := p.Wasm()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func loadPrioritizer(tb testing.TB) *wasmrun.Prioritizer {
	tb.Helper()
	m := wasmrun.Load(tb, goModule(tb), abi.TypePrioritizer, []byte(BenchConfig))
	p, err := wasmrun.NewPrioritizer(context.Background(), m)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestWasmMatchesNative checks that the two sides of the prioritizer benchmark
// compute the same scores, so the benchmark compares equal work.
func TestWasmMatchesNative(t *testing.T) {
	fleet := Fleet(fleetSize)
	p := loadPrioritizer(t)
	got, err := p.Score(context.Background(), Source(fleet))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, len(fleet))
	Native(fleet, want, make([]int64, len(fleet)))
	if !slices.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("cluster %d (%s): wasm %d, native %d", i, fleet[i].Name, got[i], want[i])
			}
		}
	}
	// The fleet must exercise every rule, or the comparison proves little.
	seen := map[int64]bool{}
	for _, s := range want {
		seen[s] = true
	}
	if len(seen) < 20 {
		t.Fatalf("only %d distinct scores over %d clusters", len(seen), len(want))
	}
}

func BenchmarkPrioritizer5000(b *testing.B) {
	fleet := Fleet(fleetSize)
	b.Run("wasm", func(b *testing.B) {
		p := loadPrioritizer(b)
		ctx := context.Background()
		src := Source(fleet)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := p.Score(ctx, src); err != nil {
				b.Fatal(err)
			}
		}
	})
	// encode is the host-side share of the wasm figure: building the score input
	// from the typed objects (reported for insight; not part of the ratio).
	b.Run("encode", func(b *testing.B) {
		p := loadPrioritizer(b)
		var enc abi.ScoreEncoder
		var buf []byte
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			var err error
			if buf, err = enc.Encode(buf[:0], &p.Decl, Source(fleet)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "input-bytes")
	})
	b.Run("native", func(b *testing.B) {
		scores := make([]int64, len(fleet))
		cpu := make([]int64, len(fleet))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			Native(fleet, scores, cpu)
		}
	})
}

// BenchmarkCompile measures wazero compilation of the Go module alone, without
// and with the compilation cache the engine uses.
func BenchmarkCompile(b *testing.B) {
	mod := goModule(b)
	ctx := context.Background()
	compile := func(b *testing.B, cache wazero.CompilationCache) {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true))
		defer rt.Close(ctx)
		if _, err := rt.CompileModule(ctx, mod); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			cache := wazero.NewCompilationCache()
			compile(b, cache)
			cache.Close(ctx)
		}
	})
	b.Run("cached-memory", func(b *testing.B) {
		cache := wazero.NewCompilationCache()
		defer cache.Close(ctx)
		compile(b, cache)
		b.ResetTimer()
		for b.Loop() {
			compile(b, cache)
		}
	})
	b.Run("cached-disk", func(b *testing.B) {
		dir := b.TempDir()
		warm, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		compile(b, warm)
		warm.Close(ctx)
		b.ResetTimer()
		for b.Loop() {
			// A new cache object per iteration is a process restart reading the directory.
			cache, err := wazero.NewCompilationCacheWithDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			compile(b, cache)
			cache.Close(ctx)
		}
	})
}

// BenchmarkLoad measures Engine.Load end to end: compile (cold, or from the disk
// cache after a restart), first instance, ABI version and validate_config.
func BenchmarkLoad(b *testing.B) {
	mod := goModule(b)
	ctx := context.Background()
	load := func(b *testing.B, opts wasm.EngineOptions) {
		e, err := wasm.NewEngine(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close(ctx)
		if _, err := e.Load(ctx, wasm.ModuleSpec{Name: "bench", Type: abi.TypePrioritizer, Wasm: mod, Config: []byte(BenchConfig)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			load(b, wasm.EngineOptions{})
		}
	})
	b.Run("cached-disk", func(b *testing.B) {
		opts := wasm.EngineOptions{CacheDir: b.TempDir()}
		load(b, opts)
		b.ResetTimer()
		for b.Loop() {
			load(b, opts)
		}
	})
}

// BenchmarkInstance measures creating an instance of the compiled Go module and
// running its first call, which starts the Go runtime (_initialize).
func BenchmarkInstance(b *testing.B) {
	mod := goModule(b)
	ctx := context.Background()
	cache := wazero.NewCompilationCache()
	defer cache.Close(ctx)
	compiled, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: mod, Name: "main"}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCompilationCache(cache).WithCloseOnContextDone(true)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer compiled.Close(ctx)
	b.ReportAllocs()
	for b.Loop() {
		p, err := compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: wazero.NewModuleConfig()})
		if err != nil {
			b.Fatal(err)
		}
		p.SetLogger(func(extism.LogLevel, string) {}) // Extism's default logger prints every call
		if rc, _, err := p.CallWithContext(ctx, abi.ExportABIVersion, nil); err != nil || rc != 0 {
			b.Fatalf("first call: rc %d, %v", rc, err)
		}
		p.Close(ctx)
	}
}

// BenchmarkEmptyCall measures one call through Module.Call on a pooled instance:
// the export does nothing but answer its ABI version.
func BenchmarkEmptyCall(b *testing.B) {
	m := wasmrun.Load(b, goModule(b), abi.TypePrioritizer, []byte(BenchConfig))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Call(ctx, abi.ExportABIVersion, nil); err != nil {
			b.Fatal(err)
		}
	}
}
