package wasm_test

import (
	"context"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
)

func misbehave(b *testing.B) []byte { return wasmtest.Misbehave(b, wasmtest.V1) }

// BenchmarkEchoCall is the cost of one call through the pool (warm instance).
func BenchmarkEchoCall(b *testing.B) {
	e, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	m, err := e.Load(context.Background(), wasm.ModuleSpec{Name: "bench", Type: "Prioritizer", Wasm: misbehave(b)})
	if err != nil {
		b.Fatal(err)
	}
	in := []byte("cluster-0001")
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Call(context.Background(), "echo", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimeoutOvershoot measures how late a looping guest is stopped after its
// deadline (the target is under 50 ms); reported as overshoot-ms. Each
// iteration first makes a warm instance ready (the looping one is discarded), so
// instance creation is not counted as overshoot.
func BenchmarkTimeoutOvershoot(b *testing.B) {
	e, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	const timeout = 50 * time.Millisecond
	m, err := e.Load(context.Background(), wasm.ModuleSpec{Name: "looper", Type: "Prioritizer", Wasm: misbehave(b), Limits: wasm.Limits{CallTimeout: timeout, PoolSize: 1}})
	if err != nil {
		b.Fatal(err)
	}
	var worst, total time.Duration
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Call(context.Background(), "echo", nil); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		_, err := m.Call(context.Background(), "loop", nil)
		over := time.Since(start) - timeout
		if wasm.CallErrorKindOf(err) != wasm.KindTimeout {
			b.Fatalf("want Timeout, got %v", err)
		}
		total += over
		worst = max(worst, over)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "overshoot-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-overshoot-ms")
}
