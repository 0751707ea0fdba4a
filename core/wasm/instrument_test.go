package wasm

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// A tiny assembler for hand-written modules.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
func u32(v int) []byte           { return appendU32(nil, uint32(v)) }
func str(s string) []byte        { return appendName(nil, s) }
func vec(items ...[]byte) []byte { return cat(append([][]byte{u32(len(items))}, items...)...) }
func sec(id byte, parts ...[]byte) []byte {
	p := cat(parts...)
	return cat([]byte{id}, u32(len(p)), p)
}
func module(sections ...[]byte) []byte {
	return cat(append([][]byte{[]byte("\x00asm\x01\x00\x00\x00")}, sections...)...)
}

// fn is a code section entry: locals (already a vector) then the instructions, which
// must end with 0x0B.
func fn(locals []byte, code ...[]byte) []byte {
	b := cat(append([][]byte{locals}, code...)...)
	return cat(u32(len(b)), b)
}

var noLocals = u32(0)

func i32c(v int32) []byte { return append([]byte{0x41}, appendS32(nil, v)...) }

const (
	i32 = 0x7F
	end = 0x0B
)

// golden builds the same module before (instrumented false) and after instrumentation
// as instrument should produce it: one module exercising every place a function index
// occurs. The import of tick makes k = 1, so defined functions move up by one.
func golden(instrumented bool) []byte {
	const k = 1
	f := func(i int) []byte { // a function index, renumbered
		if instrumented && i >= k {
			i++
		}
		return u32(i)
	}
	check := func() []byte {
		if !instrumented {
			return nil
		}
		return fuelCheck(3, k, fuelPerCheck) // fuel: 1 imported + 2 defined globals
	}
	call := func(i int) []byte { return cat([]byte{0x10}, f(i)) }
	refFunc := func(i int) []byte { return cat([]byte{0xD2}, f(i)) }

	types := sec(1, vec(
		[]byte{0x60, 1, i32, 1, i32}, // 0: (i32) -> i32
		[]byte{0x60, 0, 0},           // 1: () -> (), reused by deadline_check
		[]byte{0x60, 0, 1, i32},      // 2: () -> i32
	))
	imports := [][]byte{
		cat(str("env"), str("tick"), []byte{0x00}, u32(1)),    // func 0
		cat(str("env"), str("g"), []byte{0x03, i32, 0x00}),    // global 0
		cat(str("env"), str("mem"), []byte{0x02, 0x00, 0x01}), // memory 0
	}
	if instrumented {
		imports = append(imports, cat(str(deadlineModule), str(deadlineField), []byte{0x00}, u32(1)))
	}
	funcs := sec(3, vec(u32(0), u32(2), u32(2), u32(2), u32(0), u32(1), u32(2), u32(2), u32(2), u32(0)))
	table := sec(4, vec([]byte{0x70, 0x00, 10}))
	globals := [][]byte{
		cat([]byte{i32, 0x01}, i32c(0), []byte{end}),     // 1: started
		cat([]byte{0x70, 0x00}, refFunc(2), []byte{end}), // 2: funcref to seven
	}
	if instrumented {
		globals = append(globals, cat([]byte{i32, 0x01}, i32c(fuelPerCheck), []byte{end}))
	}
	exports := sec(7, vec(
		cat(str("sum"), []byte{0x00}, f(1)),
		cat(str("seven"), []byte{0x00}, f(2)),
		cat(str("callsum"), []byte{0x00}, f(4)),
		cat(str("indirect"), []byte{0x00}, f(5)),
		cat(str("refs"), []byte{0x00}, f(7)),
		cat(str("tail"), []byte{0x00}, f(8)),
		cat(str("tailind"), []byte{0x00}, f(9)),
		cat(str("nested"), []byte{0x00}, f(10)),
		cat(str("started"), []byte{0x03}, u32(1)),
		cat(str("table"), []byte{0x01}, u32(0)),
	))
	start := sec(8, f(6))
	offset := func(v int32) []byte { return cat(i32c(v), []byte{end}) }
	elems := sec(9, vec(
		cat(u32(0), offset(0), vec(f(2), f(3))),                                               // slots 0, 1
		cat(u32(1), []byte{0x00}, vec(f(3))),                                                  // passive
		cat(u32(2), u32(0), offset(2), []byte{0x00}, vec(f(4))),                               // slot 2
		cat(u32(3), []byte{0x00}, vec(f(3))),                                                  // declarative
		cat(u32(4), offset(3), vec(cat(refFunc(3), []byte{end}))),                             // slot 3
		cat(u32(5), []byte{0x70}, vec(cat(refFunc(2), []byte{end}), []byte{0xD0, 0x70, end})), // passive
		cat(u32(6), u32(0), offset(4), []byte{0x70}, vec(cat(refFunc(4), []byte{end}))),       // slot 4
		cat(u32(7), []byte{0x70}, vec(cat(refFunc(2), []byte{end}))),                          // declarative
	))
	callIndirect := []byte{0x11, 2, 0} // type 2, table 0
	code := sec(10, vec(
		// 1 sum(n): acc += n while --n != 0
		fn(vec(cat(u32(1), []byte{i32})),
			[]byte{0x02, 0x40, 0x03, 0x40}, check(),
			[]byte{0x20, 1, 0x20, 0, 0x6A, 0x21, 1, 0x20, 0}, i32c(1), []byte{0x6B, 0x22, 0, 0x0D, 0, end, end, 0x20, 1, end}),
		// 2 seven: tick(); 7
		fn(noLocals, check(), call(0), i32c(7), []byte{end}),
		// 3 eleven: no call, so no check on entry
		fn(noLocals, i32c(11), []byte{end}),
		// 4 callsum: sum(200000)
		fn(noLocals, check(), i32c(200000), call(1), []byte{end}),
		// 5 indirect(i): table[i]()
		fn(noLocals, check(), []byte{0x20, 0}, callIndirect, []byte{end}),
		// 6 start: started = 1
		fn(noLocals, i32c(1), []byte{0x24, 1, end}),
		// 7 refs: table[5] = ref.func eleven; table[6] = passive segment 1 (eleven);
		// table[7] = global fref (seven); table[5]() + table[6]() + table[7]()
		fn(noLocals, check(),
			i32c(5), refFunc(3), []byte{0x26, 0},
			i32c(6), i32c(0), i32c(1), []byte{0xFC, 12, 1, 0},
			i32c(7), []byte{0x23, 2, 0x26, 0},
			i32c(5), callIndirect, i32c(6), callIndirect, []byte{0x6A},
			i32c(7), callIndirect, []byte{0x6A, end}),
		// 8 tail: return_call eleven
		fn(noLocals, check(), []byte{0x12}, f(3), []byte{end}),
		// 9 tailind: return_call_indirect table[1] (eleven)
		fn(noLocals, check(), i32c(1), []byte{0x13, 2, 0, end}),
		// 10 nested(n): two nested loops with a multi-value-style block type (type 0).
		fn(vec(cat(u32(1), []byte{i32})),
			[]byte{0x20, 0, 0x02, 0x00, 0x21, 0, // block (type 0) consumes n
				0x03, 0x40}, check(), // outer loop
			[]byte{0x03, 0x40}, check(), // inner loop, runs once
			[]byte{0x20, 1}, i32c(1), []byte{0x6A, 0x21, 1, end},
			[]byte{0x20, 0}, i32c(1), []byte{0x6B, 0x22, 0, 0x0D, 0, end},
			[]byte{0x20, 1, end, end}),
	))
	funcNames := [][]byte{cat(u32(0), str("tick"))}
	if instrumented {
		funcNames = append(funcNames, cat(u32(1), str(deadlineField)))
	}
	for i, n := range []string{"sum", "seven", "eleven", "callsum", "indirect", "start", "refs", "tail", "tailind", "nested"} {
		funcNames = append(funcNames, cat(f(i+1), str(n)))
	}
	subsection := func(id byte, p []byte) []byte { return cat([]byte{id}, u32(len(p)), p) }
	names := sec(0, str("name"),
		subsection(0, str("golden")),
		subsection(1, vec(funcNames...)),
		subsection(2, vec(cat(f(1), vec(cat(u32(0), str("n")), cat(u32(1), str("acc")))))),
		subsection(7, vec(cat(u32(1), str("started")))),
	)
	other := sec(0, str("producers"), []byte{0x00, 0x10, 0x03})
	sections := [][]byte{types, sec(2, vec(imports...)), funcs, table, sec(6, vec(globals...)), exports, start, elems, code}
	if !instrumented {
		sections = append(sections, sec(0, str(".debug_info"), []byte{1, 2, 3}))
	}
	return module(append(sections, names, other)...)
}

func TestInstrumentGolden(t *testing.T) {
	got, err := instrument(golden(false))
	if err != nil {
		t.Fatal(err)
	}
	if want := golden(true); !bytes.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("instrumented module differs at byte %d of %d (want %d bytes)\n got % x\nwant % x",
					i, len(got), len(want), got[max(0, i-16):min(len(got), i+16)], want[max(0, i-16):min(len(want), i+16)])
			}
		}
		t.Fatalf("instrumented module is %d bytes, want %d", len(got), len(want))
	}
}

// testRuntime compiles with tail calls and threads on, so the decoder tests can use them.
func testRuntime(t *testing.T) wazero.Runtime {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesTailCall|experimental.CoreFeaturesThreads))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	return rt
}

// TestInstrumentedGoldenRunsTheSame runs the golden module before and after: same
// results, and deadline_check called once per fuelPerCheck loop iterations.
func TestInstrumentedGoldenRunsTheSame(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, mod []byte) (map[string]uint64, int, wazero.CompiledModule) {
		rt := testRuntime(t)
		checks := 0
		// env is a wasm module: host modules cannot export globals or memories.
		env, err := rt.InstantiateWithConfig(ctx, module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(3, vec(u32(0))),
			sec(5, vec([]byte{0x00, 1})),
			sec(6, vec(cat([]byte{i32, 0x00}, i32c(0), []byte{end}), cat([]byte{i32, 0x01}, i32c(0), []byte{end}))),
			sec(7, vec(cat(str("tick"), []byte{0x00}, u32(0)), cat(str("mem"), []byte{0x02}, u32(0)),
				cat(str("g"), []byte{0x03}, u32(0)), cat(str("ticks"), []byte{0x03}, u32(1)))),
			sec(10, vec(fn(noLocals, []byte{0x23, 1}, i32c(1), []byte{0x6A, 0x24, 1, end}))),
		), wazero.NewModuleConfig().WithName("env"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.NewHostModuleBuilder(deadlineModule).
			NewFunctionBuilder().WithFunc(func() { checks++ }).Export(deadlineField).
			Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
		compiled, err := rt.CompileModule(ctx, mod)
		if err != nil {
			t.Fatalf("compiling: %v", err)
		}
		m, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("golden"))
		if err != nil {
			t.Fatalf("instantiating: %v", err)
		}
		res := map[string]uint64{"started": m.ExportedGlobal("started").Get()}
		callFn := func(name string, args ...uint64) {
			out, err := m.ExportedFunction(name).Call(ctx, args...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			res[name] = out[0]
		}
		callFn("sum", 300000)
		callFn("seven")
		callFn("callsum")
		for i := range 5 {
			out, err := m.ExportedFunction("indirect").Call(ctx, uint64(i))
			if err != nil {
				t.Fatalf("indirect(%d): %v", i, err)
			}
			res["indirect"+string(rune('0'+i))] = out[0]
		}
		callFn("refs")
		callFn("tail")
		callFn("tailind")
		callFn("nested", 10)
		res["ticks"] = env.ExportedGlobal("ticks").Get()
		return res, checks, compiled
	}
	want, checks, _ := run(t, golden(false))
	if checks != 0 {
		t.Fatalf("the original module called deadline_check")
	}
	mod, err := instrument(golden(false))
	if err != nil {
		t.Fatal(err)
	}
	got, checks, compiled := run(t, mod)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if n := uint64(300000); want["sum"] != n*(n+1)/2%(1<<32) || want["refs"] != 29 || want["started"] != 1 || want["nested"] != 10 {
		t.Errorf("the golden module itself misbehaves: %v", want)
	}
	// 300000 + 200000 (callsum) + 2*200000 (indirect 2 and 4) loop iterations, + 20 in
	// nested, and 14 entries into functions that call (seven 3, callsum 3, indirect 5,
	// refs, tail, tailind).
	if wantChecks := (300000 + 3*200000 + 20 + 14) / fuelPerCheck; checks != wantChecks {
		t.Errorf("deadline_check called %d times, want %d", checks, wantChecks)
	}
	// The name section follows the renumbering.
	for name, idx := range map[string]uint32{"sum": 2, "callsum": 5, "nested": 11} {
		def := compiled.ExportedFunctions()[name]
		if def.Index() != idx || def.Name() != name {
			t.Errorf("export %s: index %d name %q, want %d %q", name, def.Index(), def.Name(), idx, name)
		}
	}
	imp := compiled.ImportedFunctions()
	if len(imp) != 2 || imp[1].Name() != deadlineField {
		t.Errorf("imported functions: %v", imp)
	}
	if mn, n, ok := imp[1].Import(); !ok || mn != deadlineModule || n != deadlineField {
		t.Errorf("import 1 is %s %s", mn, n)
	}
}

// TestInstrumentDecodesEveryImmediate: a body with no loop and no call must come out
// unchanged. Immediates hold bytes that look like loop (0x03) and call (0x10), so a
// decoder that loses its place changes them or fails.
func TestInstrumentDecodesEveryImmediate(t *testing.T) {
	mod, body := immediatesModule()
	if _, err := testRuntime(t).CompileModule(context.Background(), mod); err != nil {
		t.Fatalf("the test module itself is invalid: %v", err)
	}
	out, err := instrument(mod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testRuntime(t).CompileModule(context.Background(), out); err != nil {
		t.Fatalf("instrumented module is invalid: %v", err)
	}
	if !bytes.Contains(out, fn(noLocals, body)) {
		t.Fatalf("the body changed")
	}
}

// immediatesModule is one function using an instruction with every kind of immediate,
// and that function's body.
func immediatesModule() (mod, body []byte) {
	v128 := func() []byte {
		return []byte{0x10, 0x03, 0x12, 0xD2, 0x10, 0x03, 0x12, 0xD2, 0x10, 0x03, 0x12, 0xD2, 0x10, 0x03, 0x12, 0xD2}
	}
	body = cat(
		[]byte{0x43, 0x10, 0x03, 0x12, 0x00, 0x1A},                         // f32.const, drop
		[]byte{0x44, 0x10, 0x03, 0x12, 0xD2, 0x10, 0x03, 0x12, 0x00, 0x1A}, // f64.const, drop
		[]byte{0x42, 0xC0, 0xBB, 0x78, 0x1A},                               // i64.const -1000000, drop
		i32c(1), i32c(2), i32c(0), []byte{0x1C, 0x01, i32, 0x1A},           // select t
		[]byte{0x3F, 0x00, 0x40, 0x00, 0x1A},    // memory.size, memory.grow
		i32c(0), []byte{0x28, 0x02, 0x10, 0x1A}, // i32.load offset 16
		i32c(0), []byte{0x42, 0x05, 0x37, 0x03, 0x90, 0x03}, // i64.store offset 400
		[]byte{0x43, 0, 0, 0, 0, 0xFC, 0x00, 0x1A}, // i32.trunc_sat_f32_s
		i32c(0), i32c(0), i32c(0), []byte{0xFC, 11, 0x00}, // memory.fill
		i32c(0), i32c(0), i32c(0), []byte{0xFC, 10, 0x00, 0x00}, // memory.copy
		[]byte{0xFC, 16, 0x00, 0x1A},                              // table.size
		[]byte{0xD0, 0x70}, i32c(1), []byte{0xFC, 15, 0x00, 0x1A}, // table.grow
		i32c(0), []byte{0x25, 0x00, 0xD1, 0x1A}, // table.get, ref.is_null
		i32c(0), []byte{0xD0, 0x70}, i32c(0), []byte{0xFC, 17, 0x00}, // table.fill
		[]byte{0xFD, 12}, v128(), []byte{0xFD, 12}, v128(), // v128.const x2
		[]byte{0xFD, 13}, []byte{0x10, 0x03, 0x12, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x1F}, // shuffle
		[]byte{0xFD, 21, 0x03, 0x1A},                     // i8x16.extract_lane_s 3
		i32c(0), i32c(0), []byte{0xFD, 0x00, 0x04, 0x10}, // v128.load offset 16
		[]byte{0xFD, 84, 0x00, 0x10, 0x03, 0x1A},    // v128.load8_lane offset 16 lane 3
		i32c(0), []byte{0xFD, 92, 0x02, 0x10, 0x1A}, // v128.load32_zero
		i32c(3), []byte{0xFD, 15}, i32c(3), []byte{0xFD, 15}, []byte{0xFD, 0xAE, 0x01, 0x1A}, // splat, i32x4.add
		i32c(0), []byte{0xFE, 0x10, 0x02, 0x10, 0x1A}, // i32.atomic.load offset 16
		[]byte{0xFE, 0x03, 0x00},                               // atomic.fence
		i32c(0), i32c(1), []byte{0xFE, 0x00, 0x02, 0x00, 0x1A}, // memory.atomic.notify
		[]byte{0x02, 0x40, 0x02, 0x40}, i32c(0), []byte{0x0E, 0x02, 0x00, 0x01, 0x01, end, end}, // br_table
		i32c(1), []byte{0x04, i32}, i32c(3), []byte{0x05}, i32c(0x10), []byte{end, 0x1A}, // if i32 else
		[]byte{0x02, 0x01}, i32c(0x12), []byte{end, 0x1A}, // block (type 1)
		[]byte{0x01, 0xC0, 0xC4, 0x1A, 0x1A, end}, // nop, i32.extend8_s, i64.extend32_s (on consts below)
	)
	// i32.extend8_s and i64.extend32_s need operands: put them in front of the last line.
	body = bytes.Replace(body, []byte{0x01, 0xC0, 0xC4}, cat(i32c(1), []byte{0x01, 0xC0, 0x42, 0x01, 0xC4}), 1)
	return module(
		sec(1, vec([]byte{0x60, 0, 0}, []byte{0x60, 0, 1, i32})),
		sec(3, vec(u32(0))),
		sec(4, vec([]byte{0x70, 0x00, 1})),
		sec(5, vec([]byte{0x03, 1, 1})), // shared memory
		sec(10, vec(fn(noLocals, body))),
	), body
}

func TestInstrumentAddsMissingSections(t *testing.T) {
	for name, mod := range map[string][]byte{
		"empty":       module(),
		"memory only": module(sec(5, vec([]byte{0x00, 1})), sec(11, vec(cat(u32(0), i32c(0), []byte{end}, str("hi"))))),
		// No function import, but a global one: k = 0, fuel is global 2.
		"global import": module(
			sec(1, vec([]byte{0x60, 0, 1, i32})),
			sec(2, vec(cat(str("env"), str("g"), []byte{0x03, i32, 0x00}))),
			sec(3, vec(u32(0))),
			sec(6, vec(cat([]byte{i32, 0x01}, i32c(0), []byte{end}))),
			sec(7, vec(cat(str("f"), []byte{0x00}, u32(0)))),
			sec(10, vec(fn(noLocals, []byte{0x03, 0x40, end}, i32c(1), []byte{end}))),
		),
	} {
		t.Run(name, func(t *testing.T) {
			out, err := instrument(mod)
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := testRuntime(t).CompileModule(context.Background(), out)
			if err != nil {
				t.Fatalf("instrumented module is invalid: %v", err)
			}
			imp := compiled.ImportedFunctions()
			if len(imp) != 1 {
				t.Fatalf("imported functions: %v", imp)
			}
			if mn, n, _ := imp[0].Import(); mn != deadlineModule || n != deadlineField {
				t.Fatalf("import is %s %s", mn, n)
			}
			if f := compiled.ExportedFunctions()["f"]; f != nil {
				if f.Index() != 1 {
					t.Fatalf("f is function %d, want 1", f.Index())
				}
				if !bytes.Contains(out, fuelCheck(2, 0, fuelPerCheck)) {
					t.Fatalf("no fuel check on global 2 calling function 0")
				}
			}
		})
	}
}

func TestInstrumentAppendsTheVoidType(t *testing.T) {
	mod := module(
		sec(1, vec([]byte{0x60, 0, 1, i32})),
		sec(3, vec(u32(0))),
		sec(10, vec(fn(noLocals, i32c(1), []byte{end}))),
	)
	out, err := instrument(mod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, sec(1, vec([]byte{0x60, 0, 1, i32}, []byte{0x60, 0, 0}))) ||
		!bytes.Contains(out, sec(2, vec(cat(str(deadlineModule), str(deadlineField), []byte{0x00}, u32(1))))) {
		t.Fatalf("type or import section not as expected: % x", out)
	}
	if _, err := testRuntime(t).CompileModule(context.Background(), out); err != nil {
		t.Fatal(err)
	}
}

func TestInstrumentRefusesWhatItDoesNotKnow(t *testing.T) {
	withBody := func(code ...[]byte) []byte {
		return module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(2, vec(cat(str("env"), str("f"), []byte{0x00}, u32(0)))),
			sec(3, vec(u32(0))),
			sec(10, vec(fn(noLocals, cat(code...)))),
		)
	}
	for name, c := range map[string]struct {
		mod  []byte
		want string
	}{
		"legacy try":     {withBody([]byte{0x06, 0x40, end, end}), "function 1: at byte 1: unsupported opcode 0x06"},
		"delegate":       {withBody([]byte{0x18, 0x00, end}), "unsupported opcode 0x18"},
		"GC prefix":      {withBody([]byte{0xFB, 0x01, end}), "unsupported opcode 0xfb"},
		"call_ref":       {withBody([]byte{0x14, 0x00, end}), "unsupported opcode 0x14"},
		"relaxed SIMD":   {withBody([]byte{0xFD, 0x80, 0x02, end}), "unsupported opcode 0xfd 256"},
		"unknown 0xfc":   {withBody([]byte{0xFC, 18, end}), "unsupported opcode 0xfc 18"},
		"typed local":    {module(sec(1, vec([]byte{0x60, 0, 0})), sec(3, vec(u32(0))), sec(10, vec(fn(vec(cat(u32(1), []byte{0x63, 0x70})), []byte{end})))), "unsupported value type 0x63"},
		"truncated":      {withBody([]byte{0x41}), "unexpected end"},
		"rec type group": {module(sec(1, vec([]byte{0x4E, 0x00}))), "unsupported type form 0x4e"},
		"not wasm":       {[]byte("\x00asm\x0d\x00\x01\x00"), "not a WebAssembly version 1"},
		// One past the end: the fuel global, deadline_check's type once instrumented.
		"global past the end":     {withBody(i32c(1), []byte{0x24, 0, end}), "function 1: at byte 3: global index 0 out of range (0 globals)"},
		"block type past the end": {withBody([]byte{0x02, 0x01, end, end}), "function 1: at byte 1: type index 1 out of range (1 types)"},
		"function type past the end": {module(sec(1, vec([]byte{0x60, 0, 1, i32})), sec(3, vec(u32(1))), sec(10, vec(fn(noLocals, i32c(0), []byte{end})))),
			"entry 0: type index 1 out of range (1 types)"},
		"reserved import": {module(
			sec(1, vec([]byte{0x60, 0, 0})),
			sec(2, vec(cat(str(deadlineModule), str(deadlineField), []byte{0x00}, u32(0)))),
		), errReservedImport.Error()},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := instrument(c.mod)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestAppendS32(t *testing.T) {
	for _, v := range []int32{0, 1, 63, 64, -1, -64, -65, fuelPerCheck, math.MaxInt32, math.MinInt32} {
		r := &reader{b: appendS32(nil, v)}
		// Decode as signed.
		var got int64
		var shift uint
		for {
			c := r.byte()
			got |= int64(c&0x7F) << shift
			shift += 7
			if c&0x80 == 0 {
				if c&0x40 != 0 && shift < 64 {
					got |= -1 << shift
				}
				break
			}
		}
		if int32(got) != v || r.pos != len(r.b) {
			t.Errorf("appendS32(%d) = % x decodes to %d", v, r.b, got)
		}
	}
}

// TestStartFunctionRunsPastItsFuel: a start function runs while the instance is
// created, outside any Extism call; its fuel running out must not break instantiation.
func TestStartFunctionRunsPastItsFuel(t *testing.T) {
	ctx := context.Background()
	mod := module(
		sec(1, vec([]byte{0x60, 0, 0})),
		sec(3, vec(u32(0))),
		sec(8, u32(0)),
		sec(10, vec(fn(vec(cat(u32(1), []byte{i32})), // 3*fuelPerCheck iterations
			i32c(3*fuelPerCheck), []byte{0x21, 0, 0x03, 0x40, 0x20, 0}, i32c(1), []byte{0x6B, 0x22, 0, 0x0D, 0, end, end}))),
	)
	e, err := NewEngine(ctx, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	_, err = e.Load(ctx, ModuleSpec{Name: "starter", Type: abi.TypePrioritizer, Wasm: mod})
	if LoadReasonOf(err) != ReasonMissingExport {
		t.Fatalf("Load: %v, want it to get as far as the missing exports", err)
	}
}

// loopFormsModule is a CSRApproval plugin (review_csr answers nothing) whose other
// exports never return on their own, one per way Wasm can run without end: a loop
// with a br back-edge, with br_if, with br_table, and recursion (rec(n) calls rec(n-1)
// twice, 2^64 calls at a depth of 64: no loop, and no stack overflow either).
func loopFormsModule() []byte {
	exports := []string{"review_csr", "loop_br", "loop_br_if", "loop_br_table", "recurse"}
	var ex [][]byte
	for i, name := range exports {
		ex = append(ex, cat(str(name), []byte{0x00}, u32(i)))
	}
	ret0 := cat(i32c(0), []byte{end})
	return module(
		sec(1, vec([]byte{0x60, 0, 1, i32}, []byte{0x60, 1, i32, 0})),
		sec(3, vec(u32(0), u32(0), u32(0), u32(0), u32(0), u32(1))),
		sec(7, vec(ex...)),
		sec(10, vec(
			fn(noLocals, ret0),
			fn(noLocals, []byte{0x03, 0x40, 0x0C, 0, end}, ret0),
			fn(noLocals, []byte{0x03, 0x40}, i32c(1), []byte{0x0D, 0, end}, ret0),
			fn(noLocals, []byte{0x02, 0x40, 0x03, 0x40}, i32c(0), []byte{0x0E, 1, 0, 1, end, end}, ret0),
			fn(noLocals, i32c(64), []byte{0x10, 5}, ret0),
			// rec(n): if n { rec(n-1); rec(n-1) }
			fn(noLocals, []byte{0x20, 0, 0x04, 0x40,
				0x20, 0}, i32c(1), []byte{0x6B, 0x10, 5,
				0x20, 0}, i32c(1), []byte{0x6B, 0x10, 5,
				end, end}),
		)),
	)
}

// TestEveryLoopFormStopsAtTheDeadline: through the engine, as the hub runs plugins, a
// call that would run forever in each of loopFormsModule's ways is stopped by
// deadline_check at its deadline.
func TestEveryLoopFormStopsAtTheDeadline(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	escaped := false
	defer func() {
		if !escaped { // Close would wait for the call that cannot be stopped
			_ = e.Close(ctx)
		}
	}()
	const timeout = 300 * time.Millisecond
	m, err := e.Load(ctx, ModuleSpec{Name: "loops", Type: abi.TypeCSRApproval, Wasm: loopFormsModule(), Limits: Limits{CallTimeout: timeout}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if w := strings.Join(m.Warnings(), "; "); strings.Contains(w, "instrumented") {
		t.Fatalf("not instrumented: %s", w)
	}
	for _, export := range []string{"loop_br", "loop_br_if", "loop_br_table", "recurse"} {
		t.Run(export, func(t *testing.T) {
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := m.Call(ctx, export, nil)
				done <- err
			}()
			select {
			case err := <-done:
				if CallErrorKindOf(err) != KindTimeout || !errors.Is(err, errInterrupted) {
					t.Fatalf("call ended with %v, want a Timeout from deadline_check", err)
				}
				if elapsed := time.Since(start); elapsed > timeout+2*time.Second {
					t.Errorf("stopped %s after its deadline", elapsed-timeout)
				}
			case <-time.After(timeout + 10*time.Second):
				// The call keeps its goroutine and instance: nothing can stop it.
				escaped = true
				t.Fatalf("%s still runs %s after its %s deadline: deadline_check never ran", export, 10*time.Second, timeout)
			}
		})
	}
}

// TestModuleSettingItsOwnFuelIsRefused: a module that sets global 0 without having a
// global is invalid, but instrumented global 0 would be its fuel, which it could refill
// in its loop and never reach a deadline check. Load must refuse it.
func TestModuleSettingItsOwnFuelIsRefused(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	mod := module(
		sec(1, vec([]byte{0x60, 0, 1, i32})),
		sec(3, vec(u32(0))),
		sec(7, vec(cat(str("review_csr"), []byte{0x00}, u32(0)))),
		// loop { fuel = 100; br 0 }
		sec(10, vec(fn(noLocals, []byte{0x03, 0x40}, i32c(100), []byte{0x24, 0, 0x0C, 0, end}, i32c(0), []byte{end}))),
	)
	m, err := e.Load(ctx, ModuleSpec{Name: "refuel", Type: abi.TypeCSRApproval, Wasm: mod})
	if err == nil {
		m.Close(ctx)
		t.Fatalf("Load accepted a module that sets a global it does not have")
	}
	if LoadReasonOf(err) != ReasonInvalidModule || !strings.Contains(err.Error(), "invalid global index") {
		t.Fatalf("Load: %v, want InvalidModule from wazero's validation", err)
	}
}
