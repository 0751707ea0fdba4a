package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
)

// FuzzInstrument checks instrument's contract on arbitrary input. An input starting
// with the Wasm magic is a module as it is (the seeds are every module we ship or test
// with, so mutations explore real code); any other input drives genModule, which builds
// a small module that is valid by construction most of the time, so the fuzzer explores
// valid modules too. wazero decides validity in both cases. For every input:
//
//   - instrument never panics;
//   - a module wazero compiles (with the features instrument decodes, which include
//     the host's) is instrumented into a module wazero also compiles, with the same
//     imports and exports, which calls deadline_check (the test's stub stops an
//     instance after a budget of checks; a run the stub does not stop within
//     fuzzWatchdog escaped it) and, up to where the stub stopped it, returns what the
//     original returns and leaves the same exported memories and globals;
//   - a module wazero refuses stays refused: instrumentation never turns invalid code
//     into valid code (an index one past the end would name what instrument added).
//
// Under plain go test this runs the seeds only, in a few seconds.
func FuzzInstrument(f *testing.F) {
	for _, m := range fuzzSeedModules(f) {
		f.Add(m)
	}
	for _, s := range []string{"", "gen", "loops and calls", "\x01\x02\x03\x04\x05\x06\x07\x08"} {
		f.Add([]byte(s))
	}
	for i := range 24 { // deterministic pseudo-random generator inputs
		h := sha256.Sum256([]byte{byte(i)})
		f.Add(bytes.Repeat(h[:], 1+i%6))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mod := data
		if !bytes.HasPrefix(data, []byte("\x00asm")) {
			mod = genModule(data)
		}
		checkInstrument(t, mod, data)
	})
}

// fuzzSeedModules: the shipped plugins (decompressed as the host does), the Go test
// guests, the C example when built, and the hand-written modules of instrument_test.go.
func fuzzSeedModules(tb testing.TB) [][]byte {
	var mods [][]byte
	zst, err := filepath.Glob(filepath.Join("..", "..", "plugins", "dist", "*.wasm.zst"))
	if err != nil || len(zst) == 0 {
		tb.Fatalf("no plugins/dist/*.wasm.zst (%v)", err)
	}
	for _, p := range zst {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		m, err := Decompress(filepath.Base(p), KeyZstd, b, 0)
		if err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		mods = append(mods, m)
	}
	for _, g := range []struct{ dir, ldflags string }{
		{"misbehave", "-X main.version=v1 -X main.abiVersion=1"}, {"csr", ""}, {"feedback", ""},
	} {
		b, err := wasmtest.Build(g.dir, g.ldflags)
		if err != nil {
			tb.Fatalf("building test guest %s: %v", g.dir, err)
		}
		mods = append(mods, b)
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "plugins", "examples", "c-headroom", "build", "headroom.wasm")); err == nil {
		mods = append(mods, b)
	}
	immediates, _ := immediatesModule()
	return append(mods, golden(false), immediates, loopFormsModule())
}

const (
	// fuzzFuel is the fuel between two checks in the fuzzed modules, and fuzzChecks
	// the checks a run may make before the stub stops it: a run executes at most
	// fuzzFuel*fuzzChecks loop iterations and function entries.
	fuzzFuel   = 64
	fuzzChecks = 64
	// fuzzWatchdog bounds one run. A run within its budget takes milliseconds; one that
	// takes this long made no check, so it escaped the deadline.
	fuzzWatchdog = 30 * time.Second
	// fuzzMemoryPages caps linear memory (4 MiB) so that memory.grow stays cheap.
	fuzzMemoryPages = 64
	// Modules up to this size are also compiled to machine code; larger ones only by
	// the interpreter, whose validation is the same (and much faster for megabytes).
	fuzzCompileBytes = 16 << 10
	// While fuzzing (-test.fuzz), mutations of the megabyte seeds are only
	// instrumented: running them costs a second each and starves the generator.
	fuzzLargeBytes = 256 << 10
)

var fuzzFeatures = api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall | experimental.CoreFeaturesThreads |
	experimental.CoreFeaturesExtendedConst

func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

func checkInstrument(t *testing.T, mod, data []byte) {
	ctx := context.Background()
	out, ierr := instrumentWithFuel(mod, fuzzFuel)
	if ierr == nil && bytes.Equal(out, mod) {
		t.Fatalf("instrument returned its input unchanged")
	}
	if len(mod) > fuzzLargeBytes && fuzzing() {
		return
	}
	interp := wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(fuzzFeatures).WithMemoryLimitPages(fuzzMemoryPages)
	rt := wazero.NewRuntimeWithConfig(ctx, interp)
	defer rt.Close(ctx)
	orig, verr := rt.CompileModule(ctx, mod)
	if verr != nil {
		if ierr != nil {
			return
		}
		if _, err := rt.CompileModule(ctx, out); err == nil {
			// Only custom sections may differ in validity: instrument drops DWARF and a
			// name section it cannot read, which wazero refuses.
			if _, err := rt.CompileModule(ctx, withoutCustomSections(mod)); err != nil {
				t.Fatalf("wazero refuses the module (%v) but accepts it instrumented", verr)
			}
		}
		return
	}
	if ierr != nil {
		if errors.Is(ierr, errReservedImport) {
			return
		}
		// instrument decodes every instruction of fuzzFeatures, a superset of what the
		// host enables: what wazero accepts here, instrument must not refuse (the host
		// would fall back to slower loops).
		t.Fatalf("wazero accepts the module but instrument refuses it: %v", ierr)
	}
	inst, err := rt.CompileModule(ctx, out)
	if err != nil {
		t.Fatalf("wazero accepts the module but not its instrumented version: %v", err)
	}
	if len(mod) <= fuzzCompileBytes {
		crt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(fuzzFeatures))
		defer crt.Close(ctx)
		if _, err := crt.CompileModule(ctx, mod); err == nil {
			if _, err := crt.CompileModule(ctx, out); err != nil {
				t.Fatalf("the compiler compiles the module but not its instrumented version: %v", err)
			}
		}
	}
	if d := sameInterface(orig, inst); d != "" {
		t.Fatalf("instrumented module: %s", d)
	}
	compareRuns(t, mod, out, orig, data)
}

// sameInterface: same exports and imports (plus deadline_check), same signatures.
func sameInterface(orig, inst wazero.CompiledModule) string {
	oi, ii := orig.ImportedFunctions(), inst.ImportedFunctions()
	if len(ii) != len(oi)+1 {
		return fmt.Sprintf("%d imported functions, want %d", len(ii), len(oi)+1)
	}
	if m, n, _ := ii[len(oi)].Import(); m != deadlineModule || n != deadlineField {
		return fmt.Sprintf("the last imported function is %s %s", m, n)
	}
	for i, o := range oi {
		om, on, _ := o.Import()
		im, in, _ := ii[i].Import()
		if om != im || on != in || !slices.Equal(o.ParamTypes(), ii[i].ParamTypes()) || !slices.Equal(o.ResultTypes(), ii[i].ResultTypes()) {
			return fmt.Sprintf("import %d changed", i)
		}
	}
	oe, ie := orig.ExportedFunctions(), inst.ExportedFunctions()
	if len(oe) != len(ie) {
		return fmt.Sprintf("%d exported functions, want %d", len(ie), len(oe))
	}
	for name, o := range oe {
		want := o.Index()
		if want >= uint32(len(oi)) {
			want++ // defined functions move up by one
		}
		i := ie[name]
		if i == nil || i.Index() != want ||
			!slices.Equal(o.ParamTypes(), i.ParamTypes()) || !slices.Equal(o.ResultTypes(), i.ResultTypes()) {
			return fmt.Sprintf("export %s changed", name)
		}
	}
	if len(orig.ExportedMemories()) != len(inst.ExportedMemories()) {
		return "exported memories changed"
	}
	return ""
}

// withoutCustomSections drops every custom section of a module that splits into sections.
func withoutCustomSections(mod []byte) []byte {
	out := append([]byte(nil), mod[:min(8, len(mod))]...)
	r := &reader{b: mod, pos: 8}
	for r.pos < len(mod) {
		start := r.pos
		id := r.byte()
		r.bytes(int(r.u32()))
		if r.err != nil {
			return mod
		}
		if id != secCustom {
			out = append(out, mod[start:r.pos]...)
		}
	}
	return out
}

// The calls: the exported functions with numeric parameters and results, by name, each
// called with zeros and with values taken from the input.
type fuzzCall struct {
	export string
	args   []uint64
}

// A run is a list of steps, each an instantiation (call -1) or a call. The instrumented
// module runs first; a step the stub stopped ends its instance, and the next call gets a
// fresh one. The original then runs the same steps but the stopped ones (it would run on
// where the stub stopped the other), and every step must end the same: same results,
// or the same error (its first line).
type fuzzStep struct {
	call    int
	results []uint64
	err     string
	stopped bool
}

type fuzzRun struct {
	linked bool // the stubs could be instantiated
	steps  []fuzzStep
	// The exported memories and globals after the last step, unless it was stopped.
	memories map[string][]byte
	globals  map[string]uint64
}

func compareRuns(t *testing.T, mod, out []byte, orig wazero.CompiledModule, data []byte) {
	info, err := parseModuleInfo(mod)
	if err != nil {
		t.Fatalf("wazero accepts the module but the test cannot read its imports: %v", err)
	}
	stubs, ok := stubModules(info)
	if !ok {
		return
	}
	seed := sha256.Sum256(data)
	var calls []fuzzCall
	exports := orig.ExportedFunctions()
	names := make([]string, 0, len(exports))
	for n := range exports {
		names = append(names, n)
	}
	slices.Sort(names)
next:
	for _, n := range names {
		def := exports[n]
		for _, p := range append(def.ParamTypes(), def.ResultTypes()...) {
			switch p {
			case api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeF32, api.ValueTypeF64:
			default:
				continue next
			}
		}
		zeros := make([]uint64, len(def.ParamTypes()))
		vals := make([]uint64, len(def.ParamTypes()))
		for i, p := range def.ParamTypes() {
			v := binary.LittleEndian.Uint64(seed[(8*(i+len(calls)))%24:])
			switch p {
			case api.ValueTypeI32, api.ValueTypeF32:
				v = uint64(uint32(v % 23)) // small, so that loops bounded by it end
			}
			vals[i] = v
		}
		calls = append(calls, fuzzCall{n, zeros}, fuzzCall{n, vals})
		if len(calls) >= 12 {
			break
		}
	}

	instrumented := runWithWatchdog(t, "instrumented", func() fuzzRun { return runModule(out, stubs, calls, nil) })
	if !instrumented.linked {
		return
	}
	original := runWithWatchdog(t, "original", func() fuzzRun { return runModule(mod, stubs, calls, instrumented.steps) })
	var ran []fuzzStep
	for _, st := range instrumented.steps {
		if !st.stopped {
			ran = append(ran, st)
		}
	}
	if len(original.steps) != len(ran) {
		t.Fatalf("the original made %d steps, the instrumented one %d: %v, %v", len(original.steps), len(ran), original.steps, ran)
	}
	for i, o := range original.steps {
		n := ran[i]
		what := "instantiation"
		if n.call >= 0 {
			what = fmt.Sprintf("call %s%v", calls[n.call].export, calls[n.call].args)
		}
		if o.call != n.call || o.err != n.err || !slices.Equal(o.results, n.results) {
			t.Fatalf("%s: original returned %v %q, instrumented %v %q", what, o.results, o.err, n.results, n.err)
		}
	}
	if instrumented.memories == nil {
		return // the last step was stopped: the original ran on
	}
	for name, m := range original.memories {
		if !bytes.Equal(m, instrumented.memories[name]) {
			t.Fatalf("exported memory %s differs after the calls", name)
		}
	}
	for name, v := range original.globals {
		if instrumented.globals[name] != v {
			t.Fatalf("exported global %s is %d after the calls, want %d", name, instrumented.globals[name], v)
		}
	}
}

func runWithWatchdog(t *testing.T, what string, run func() fuzzRun) fuzzRun {
	done := make(chan fuzzRun, 1)
	go func() { done <- run() }()
	select {
	case r := <-done:
		return r
	case <-time.After(fuzzWatchdog):
		t.Fatalf("the %s module ran for %s without being stopped: a loop or recursion escapes the deadline check", what, fuzzWatchdog)
		return fuzzRun{}
	}
}

var errFuzzBudget = errors.New("fuzz budget exhausted")

// runModule runs mod over the stubs: the instrumented module (plan nil) makes the calls,
// its deadline_check stub stopping an instance after fuzzChecks checks; the original
// makes the steps of plan that were not stopped.
func runModule(mod []byte, stubs map[string][]byte, calls []fuzzCall, plan []fuzzStep) fuzzRun {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(fuzzFeatures).WithMemoryLimitPages(fuzzMemoryPages))
	defer rt.Close(ctx)
	var run fuzzRun
	var checks atomic.Int64
	if plan == nil {
		if _, err := rt.NewHostModuleBuilder(deadlineModule).NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {
				if checks.Add(1) > fuzzChecks {
					panic(errFuzzBudget)
				}
			}), nil, nil).Export(deadlineField).Instantiate(ctx); err != nil {
			panic(err)
		}
		for i := range calls {
			plan = append(plan, fuzzStep{call: i})
		}
		plan = append([]fuzzStep{{call: -1}}, plan...)
	}
	compiled, err := rt.CompileModule(ctx, mod)
	if err != nil {
		panic(fmt.Sprintf("compiled before: %v", err))
	}
	// Every instance gets fresh stubs: a stopped call may have changed an imported
	// global, memory or table, where the original's skipped call did not.
	var m api.Module
	var stubMods []api.Module
	instantiateStubs := func() bool {
		for _, s := range stubMods {
			_ = s.Close(ctx)
		}
		stubMods = stubMods[:0]
		for name, stub := range stubs {
			s, err := rt.InstantiateWithConfig(ctx, stub, wazero.NewModuleConfig().WithName(name))
			if err != nil {
				return false
			}
			stubMods = append(stubMods, s)
		}
		return true
	}
	if !instantiateStubs() {
		return run
	}
	run.linked = true
	step := func(call int, res []uint64, err error) fuzzStep {
		st := fuzzStep{call: call, results: slices.Clone(res)}
		if err != nil {
			st.err, _, _ = strings.Cut(err.Error(), "\n")
			// "start function[7] failed: wasm error: ...": the index is renumbered.
			if _, e, ok := strings.Cut(st.err, "wasm error: "); ok {
				st.err = "wasm error: " + e
			}
			st.stopped = errors.Is(err, errFuzzBudget)
		}
		run.steps = append(run.steps, st)
		return st
	}
	for i := 0; i < len(plan); i++ {
		p := plan[i]
		switch {
		case p.stopped:
			// The original skips what the stub stopped; the next step is a new instance.
		case p.call < 0:
			if m != nil {
				_ = m.Close(ctx)
				if !instantiateStubs() {
					panic("the stubs instantiated once")
				}
			}
			checks.Store(0)
			var err error
			m, err = rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("fuzzed").WithStartFunctions())
			if step(-1, nil, err); err != nil {
				m = nil
				i = len(plan) // a module that does not instantiate once never does
			}
		default:
			res, err := m.ExportedFunction(calls[p.call].export).Call(ctx, calls[p.call].args...)
			if st := step(p.call, res, err); st.stopped && i+1 < len(plan) {
				// Insert a new instance before the next call.
				plan = slices.Insert(slices.Clone(plan), i+1, fuzzStep{call: -1})
			}
		}
	}
	if m == nil || len(run.steps) == 0 || run.steps[len(run.steps)-1].stopped {
		return run
	}
	run.memories = map[string][]byte{}
	for name := range compiled.ExportedMemories() {
		mem := m.ExportedMemory(name)
		b, _ := mem.Read(0, mem.Size())
		run.memories[name] = bytes.Clone(b)
	}
	run.globals = map[string]uint64{}
	for _, name := range exportedGlobals(mod) {
		if g := m.ExportedGlobal(name); g != nil {
			run.globals[name] = g.Get()
		}
	}
	return run
}

// moduleInfo is what the stubs need: the types and the imports.
type moduleInfo struct {
	types   []fuzzFuncType
	imports []fuzzImport
}

type fuzzFuncType struct{ params, results []byte }

type fuzzImport struct {
	module, name string
	kind         byte
	desc         []byte // the import's description as encoded (type index, table, memory or global type)
	typ          uint32 // for functions
}

func parseModuleInfo(mod []byte) (moduleInfo, error) {
	var info moduleInfo
	r := &reader{b: mod, pos: 8}
	for r.pos < len(mod) && r.err == nil {
		id := r.byte()
		p := &reader{b: r.bytes(int(r.u32()))}
		switch id {
		case secType:
			n := p.u32()
			for i := uint32(0); i < n && p.err == nil; i++ {
				p.byte()
				var ft fuzzFuncType
				for _, dst := range []*[]byte{&ft.params, &ft.results} {
					m := p.u32()
					for j := uint32(0); j < m && p.err == nil; j++ {
						*dst = append(*dst, p.valType())
					}
				}
				info.types = append(info.types, ft)
			}
		case secImport:
			n := p.u32()
			for i := uint32(0); i < n && p.err == nil; i++ {
				imp := fuzzImport{module: p.name(), name: p.name(), kind: p.byte()}
				start := p.pos
				switch imp.kind {
				case 0x00:
					imp.typ = p.u32()
				case 0x01:
					p.refType()
					p.limits()
				case 0x02:
					p.limits()
				case 0x03:
					p.valType()
					p.byte()
				default:
					p.fail(fmt.Errorf("import kind %d", imp.kind))
				}
				imp.desc = p.b[start:p.pos]
				info.imports = append(info.imports, imp)
			}
		}
		if p.err != nil {
			return info, p.err
		}
	}
	return info, r.err
}

func exportedGlobals(mod []byte) []string {
	var names []string
	r := &reader{b: mod, pos: 8}
	for r.pos < len(mod) && r.err == nil {
		id := r.byte()
		p := &reader{b: r.bytes(int(r.u32()))}
		if id != secExport {
			continue
		}
		n := p.u32()
		for i := uint32(0); i < n && p.err == nil; i++ {
			name, kind := p.name(), p.byte()
			p.u32()
			if kind == 0x03 && p.err == nil {
				names = append(names, name)
			}
		}
	}
	return names
}

// stubModules builds, per imported module name, a Wasm module exporting what is
// imported from it: functions returning zeros, and zero globals, tables and memories
// of the imported types. false: the imports cannot be stubbed (one name imported twice
// with different kinds, or from the host's own module).
func stubModules(info moduleInfo) (map[string][]byte, bool) {
	byModule := map[string][]fuzzImport{}
	for _, imp := range info.imports {
		if imp.module == deadlineModule {
			return nil, false
		}
		byModule[imp.module] = append(byModule[imp.module], imp)
	}
	stubs := map[string][]byte{}
	for name, imps := range byModule {
		var types, funcs, tables, mems, globals, exports, code [][]byte
		seen := map[string]bool{}
		for _, imp := range imps {
			if seen[imp.name] {
				return nil, false
			}
			seen[imp.name] = true
			switch imp.kind {
			case 0x00:
				if int(imp.typ) >= len(info.types) {
					return nil, false
				}
				ft := info.types[imp.typ]
				types = append(types, cat([]byte{0x60}, u32(len(ft.params)), ft.params, u32(len(ft.results)), ft.results))
				var body []byte
				for _, t := range ft.results {
					body = append(body, zeroConst(t)...)
				}
				exports = append(exports, cat(str(imp.name), []byte{0x00}, u32(len(funcs))))
				funcs = append(funcs, u32(len(types)-1))
				code = append(code, fn(noLocals, body, []byte{end}))
			case 0x01:
				exports = append(exports, cat(str(imp.name), []byte{0x01}, u32(len(tables))))
				tables = append(tables, imp.desc)
			case 0x02:
				exports = append(exports, cat(str(imp.name), []byte{0x02}, u32(len(mems))))
				mems = append(mems, imp.desc)
			case 0x03:
				exports = append(exports, cat(str(imp.name), []byte{0x03}, u32(len(globals))))
				globals = append(globals, cat(imp.desc, zeroConst(imp.desc[0]), []byte{end}))
			}
		}
		var secs [][]byte
		for _, s := range []struct {
			id    byte
			items [][]byte
		}{{1, types}, {3, funcs}, {4, tables}, {5, mems}, {6, globals}, {7, exports}, {10, code}} {
			if len(s.items) > 0 {
				secs = append(secs, sec(s.id, vec(s.items...)))
			}
		}
		stubs[name] = module(secs...)
	}
	return stubs, true
}

func zeroConst(t byte) []byte {
	switch t {
	case 0x7E:
		return []byte{0x42, 0}
	case 0x7D:
		return []byte{0x43, 0, 0, 0, 0}
	case 0x7C:
		return []byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0}
	case 0x7B:
		return append([]byte{0xFD, 12}, make([]byte, 16)...)
	case 0x70, 0x6F:
		return []byte{0xD0, t}
	}
	return []byte{0x41, 0}
}
