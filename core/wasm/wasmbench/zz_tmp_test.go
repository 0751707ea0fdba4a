package wasmbench

import (
	"context"
	"os"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

func BenchmarkZZ(b *testing.B) {
	mod, _ := os.ReadFile("/tmp/tmpbench.wasm")
	m := wasmrun.Load(b, mod, abi.TypePrioritizer, nil)
	p, err := wasmrun.NewPrioritizer(context.Background(), m)
	if err != nil { b.Fatal(err) }
	fleet := Fleet(fleetSize)
	var enc abi.ScoreEncoder
	input, _ := enc.Encode(nil, &p.Decl, Source(fleet))
	b.Logf("input bytes %d", len(input))
	ctx := context.Background()
	for _, exp := range []string{"readonly", "writeonly", "decodeonly", "score"} {
		b.Run(exp, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Call(ctx, exp, input); err != nil { b.Fatal(err) }
			}
		})
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() { input, _ = enc.Encode(input[:0], &p.Decl, Source(fleet)) }
	})
	b.Run("empty", func(b *testing.B) {
		for b.Loop() { if _, err := m.Call(ctx, "flotilla_abi_version", nil); err != nil { b.Fatal(err) } }
	})
}
