package wasm

import (
	"fmt"
	"slices"
)

// genModule builds a small module from fuzz bytes: a few function types (multi-value
// included), imported and defined functions, globals, a table filled by element
// segments of every encoding, maybe a (shared) memory, a start function and a name
// section, and function bodies made of type-directed instructions: nested blocks, ifs
// and loops (with value and type-index block types), br, br_if and br_table to any
// enclosing label (back-edges included), calls, call_indirect, return_call (direct and
// indirect), loads and stores, bulk memory, atomics, SIMD, conversions. Immediates are
// now and then encoded with the longest LEB128 the spec allows. The bodies are valid by
// construction as far as the generator knows; wazero decides. Exhausted input reads as
// zeros, which pick the simplest choices, so every input gives a module.
func genModule(data []byte) []byte {
	g := &gen{src: data, voidType: -1}
	return g.module()
}

type gen struct {
	src []byte
	pos int

	types     []fuzzFuncType
	voidType  int
	funcs     []uint32 // the type of every function, imported ones first
	imports   int
	globals   []genGlobal // imported ones first
	memory    bool
	shared    bool
	tableSize int

	f    *genFunc
	code []byte
}

type genGlobal struct {
	t   byte
	mut bool
}

type genFunc struct {
	typ      fuzzFuncType
	locals   []byte
	scratch  int      // locals [0, scratch) may be set freely; the rest count loops
	counters []bool   // in use
	labels   [][]byte // what a branch to each enclosing label carries, outermost first
	budget   int
	depth    int
}

const (
	tI32 byte = 0x7F
	tI64 byte = 0x7E
	tF32 byte = 0x7D
	tF64 byte = 0x7C
)

func (g *gen) byte() byte {
	if g.pos >= len(g.src) {
		return 0
	}
	c := g.src[g.pos]
	g.pos++
	return c
}

func (g *gen) n(k int) int { return int(g.byte()) % k }
func (g *gen) yes() bool   { return g.byte()&1 == 1 }

func (g *gen) valType() byte {
	switch g.n(8) {
	case 0, 1, 2, 3:
		return tI32
	case 4, 5:
		return tI64
	case 6:
		return tF32
	}
	return tF64
}

func (g *gen) emit(b ...byte) { g.code = append(g.code, b...) }

// u32 appends v, sometimes in the longest (5-byte) encoding.
func (g *gen) u32(b []byte, v uint32) []byte {
	if g.n(8) != 0 {
		return appendU32(b, v)
	}
	for range 4 {
		b = append(b, byte(v&0x7F)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func (g *gen) emitU32(v int) { g.code = g.u32(g.code, uint32(v)) }

func (g *gen) emitS32(v int32) {
	if g.n(8) != 0 {
		g.code = appendS32(g.code, v)
		return
	}
	for range 4 {
		g.code = append(g.code, byte(v&0x7F)|0x80)
		v >>= 7
	}
	g.code = append(g.code, byte(v&0x7F))
}

func (g *gen) module() []byte {
	// Types; a () -> () type only sometimes, so instrument has to add one.
	for range 1 + g.n(5) {
		var ft fuzzFuncType
		for range g.n(4) {
			ft.params = append(ft.params, g.valType())
		}
		for range g.n(3) {
			ft.results = append(ft.results, g.valType())
		}
		g.types = append(g.types, ft)
	}
	for i, ft := range g.types {
		if len(ft.params) == 0 && len(ft.results) == 0 && g.voidType < 0 {
			g.voidType = i
		}
	}
	typeIdx := func() uint32 { return uint32(g.n(len(g.types))) }

	var imports [][]byte
	for i := range g.n(3) {
		t := typeIdx()
		g.funcs = append(g.funcs, t)
		imports = append(imports, cat(str("env"), str(fmt.Sprintf("f%d", i)), []byte{0x00}, g.u32(nil, t)))
	}
	g.imports = len(g.funcs)
	if g.n(3) == 0 {
		gl := genGlobal{t: tI32, mut: g.yes()}
		g.globals = append(g.globals, gl)
		imports = append(imports, cat(str("env"), str("g"), []byte{0x03, gl.t, b2u(gl.mut)}))
	}
	importedGlobals := len(g.globals)
	for range 1 + g.n(4) {
		g.funcs = append(g.funcs, typeIdx())
	}
	g.tableSize = len(g.funcs) + g.n(3)
	switch g.n(4) {
	case 0:
	case 1:
		if g.yes() {
			g.memory, g.shared = true, true
		} else {
			g.memory = true
		}
	default:
		g.memory = true
	}

	var globalDefs [][]byte
	for i := range g.n(4) {
		gl := genGlobal{t: tI32, mut: g.n(4) != 0}
		if i%2 == 1 {
			gl.t = tI64
		}
		var init []byte
		switch {
		case gl.t == tI32 && importedGlobals > 0 && !g.globals[0].mut && g.yes():
			init = []byte{0x23, 0x00} // global.get of the immutable import
		case gl.t == tI32 && g.n(4) == 0: // extended constant expression
			init = cat(i32c(int32(g.n(100))), i32c(int32(g.n(100))), []byte{0x6A})
		case gl.t == tI32:
			init = i32c(int32(g.n(1000)))
		default:
			init = appendS64([]byte{0x42}, int64(g.n(1000))-500)
		}
		g.globals = append(g.globals, gl)
		globalDefs = append(globalDefs, cat([]byte{gl.t, b2u(gl.mut)}, init, []byte{end}))
	}
	if g.yes() { // a funcref global: a ref.func in a constant expression
		globalDefs = append(globalDefs, cat([]byte{0x70, 0x00, 0xD2}, g.u32(nil, uint32(g.n(len(g.funcs)))), []byte{end}))
	}

	var code [][]byte
	for i := g.imports; i < len(g.funcs); i++ {
		code = append(code, g.body(i))
	}

	var secs [][]byte
	types := make([][]byte, len(g.types))
	for i, ft := range g.types {
		types[i] = cat([]byte{0x60}, u32(len(ft.params)), ft.params, u32(len(ft.results)), ft.results)
	}
	secs = append(secs, sec(1, vec(types...)))
	if len(imports) > 0 {
		secs = append(secs, sec(2, vec(imports...)))
	}
	var funcDecls [][]byte
	for _, t := range g.funcs[g.imports:] {
		funcDecls = append(funcDecls, g.u32(nil, t))
	}
	secs = append(secs, sec(3, vec(funcDecls...)))
	secs = append(secs, sec(4, vec([]byte{0x70, 0x01, byte(g.tableSize), byte(g.tableSize + 2)})))
	if g.memory {
		if g.shared {
			secs = append(secs, sec(5, vec([]byte{0x03, 1, 2})))
		} else {
			secs = append(secs, sec(5, vec([]byte{0x01, 1, 2})))
		}
	}
	if len(globalDefs) > 0 {
		secs = append(secs, sec(6, vec(globalDefs...)))
	}
	var exports [][]byte
	for i := g.imports; i < len(g.funcs); i++ {
		exports = append(exports, cat(str(fmt.Sprintf("f%d", i)), []byte{0x00}, g.u32(nil, uint32(i))))
	}
	if g.imports > 0 && g.yes() {
		exports = append(exports, cat(str("imported"), []byte{0x00}, u32(0)))
	}
	for i := range g.globals {
		exports = append(exports, cat(str(fmt.Sprintf("g%d", i)), []byte{0x03}, u32(i)))
	}
	if g.memory {
		exports = append(exports, cat(str("mem"), []byte{0x02}, u32(0)))
	}
	exports = append(exports, cat(str("tab"), []byte{0x01}, u32(0)))
	secs = append(secs, sec(7, vec(exports...)))
	if g.voidType >= 0 && g.yes() {
		for i := g.imports; i < len(g.funcs); i++ {
			if int(g.funcs[i]) == g.voidType {
				secs = append(secs, sec(8, g.u32(nil, uint32(i))))
				break
			}
		}
	}
	secs = append(secs, sec(9, vec(g.elements()...)))
	secs = append(secs, sec(10, vec(code...)))
	if g.memory && g.yes() {
		data := cat(i32c(int32(g.n(64))), []byte{end}, str("\x10\x03\x12\x0b"))
		if g.yes() {
			secs = append(secs, sec(11, vec(cat(u32(0), data))))
		} else {
			secs = append(secs, sec(11, vec(cat(u32(2), u32(0), data))))
		}
	}
	if g.yes() {
		secs = append(secs, g.names())
	}
	return module(secs...)
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// elements fills the table with every function, in one of the four active encodings,
// and adds a passive and a declarative segment.
func (g *gen) elements() [][]byte {
	offset := []byte{0x41, 0x00, end}
	var idxs, exprs [][]byte
	for i := range g.funcs {
		idxs = append(idxs, g.u32(nil, uint32(i)))
		exprs = append(exprs, cat([]byte{0xD2}, g.u32(nil, uint32(i)), []byte{end}))
	}
	var segs [][]byte
	switch g.n(4) {
	case 0:
		segs = append(segs, cat(u32(0), offset, vec(idxs...)))
	case 1:
		segs = append(segs, cat(u32(2), u32(0), offset, []byte{0x00}, vec(idxs...)))
	case 2:
		segs = append(segs, cat(u32(4), offset, vec(exprs...)))
	default:
		segs = append(segs, cat(u32(6), u32(0), offset, []byte{0x70}, vec(exprs...)))
	}
	pick := func() int { return g.n(len(g.funcs)) }
	switch g.n(3) {
	case 1:
		segs = append(segs, cat(u32(1), []byte{0x00}, vec(idxs[pick()])))
	case 2:
		segs = append(segs, cat(u32(5), []byte{0x70}, vec(exprs[pick()], []byte{0xD0, 0x70, end})))
	}
	switch g.n(3) {
	case 1:
		segs = append(segs, cat(u32(3), []byte{0x00}, vec(idxs[pick()])))
	case 2:
		segs = append(segs, cat(u32(7), []byte{0x70}, vec(exprs[pick()])))
	}
	return segs
}

func (g *gen) names() []byte {
	var funcNames [][]byte
	for i := range g.funcs {
		if g.yes() {
			funcNames = append(funcNames, cat(u32(i), str(fmt.Sprintf("fn%d", i))))
		}
	}
	sub := func(id byte, p []byte) []byte { return cat([]byte{id}, u32(len(p)), p) }
	return sec(0, str("name"),
		sub(0, str("generated")),
		sub(1, vec(funcNames...)),
		sub(2, vec(cat(u32(g.imports), vec(cat(u32(0), str("first")))))),
	)
}

// body generates defined function fi: statements, then its results.
func (g *gen) body(fi int) []byte {
	ft := g.types[g.funcs[fi]]
	locals := []byte{tI32, tI32, tI64, tF32, tF64}
	g.f = &genFunc{typ: ft, budget: 8 + g.n(56), labels: [][]byte{ft.results}}
	g.f.locals = append(slices.Clone(ft.params), locals...)
	g.f.scratch = len(g.f.locals)
	g.f.locals = append(g.f.locals, tI32, tI32, tI32)
	g.f.counters = make([]bool, 3)
	g.code = cat(vec(cat(u32(2), []byte{tI32}), cat(u32(1), []byte{tI64}), cat(u32(1), []byte{tF32}),
		cat(u32(1), []byte{tF64}), cat(g.u32(nil, 3), []byte{tI32})))
	g.stmts()
	for _, t := range ft.results {
		g.expr(t)
	}
	g.emit(end)
	return cat(u32(len(g.code)), g.code)
}

// stmts generates statements until one ends control flow (br, return...) or the budget
// runs out.
func (g *gen) stmts() {
	for range 1 + g.n(4) {
		if g.f.budget <= 0 || g.stmt() {
			return
		}
	}
}

func (g *gen) localOf(t byte) int {
	var c []int
	for i, l := range g.f.locals[:g.f.scratch] {
		if l == t {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[g.n(len(c))]
}

func (g *gen) globalOf(t byte, mut bool) int {
	var c []int
	for i, gl := range g.globals {
		if gl.t == t && (gl.mut || !mut) {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[g.n(len(c))]
}

func (g *gen) funcsReturning(results []byte) []int {
	var c []int
	for i, t := range g.funcs {
		if slices.Equal(g.types[t].results, results) {
			c = append(c, i)
		}
	}
	return c
}

func (g *gen) typesReturning(results []byte) []int {
	var c []int
	for i, ft := range g.types {
		if slices.Equal(ft.results, results) {
			c = append(c, i)
		}
	}
	return c
}

func (g *gen) args(params []byte) {
	for _, p := range params {
		g.expr(p)
	}
}

// tableIndex pushes an index into the table, usually a valid one.
func (g *gen) tableIndex() {
	if g.n(4) == 0 {
		g.expr(tI32)
		return
	}
	g.emit(0x41)
	g.emitS32(int32(g.n(g.tableSize)))
}

func (g *gen) constant(t byte) {
	switch t {
	case tI32:
		g.emit(0x41)
		if g.n(4) == 0 {
			g.emitS32(int32(uint32(g.byte()) | uint32(g.byte())<<8 | uint32(g.byte())<<16 | uint32(g.byte())<<24))
		} else {
			g.emitS32(int32(g.n(24)))
		}
	case tI64:
		g.emit(0x42)
		v := int64(g.n(24))
		if g.n(4) == 0 {
			for range 8 {
				v = v<<8 | int64(g.byte())
			}
		}
		g.code = appendS64(g.code, v)
	case tF32:
		g.emit(0x43, g.byte(), g.byte(), g.byte(), g.byte())
	case tF64:
		g.emit(0x44, g.byte(), g.byte(), g.byte(), g.byte(), g.byte(), g.byte(), g.byte(), g.byte())
	}
}

func (g *gen) leaf(t byte) {
	if l := g.localOf(t); l >= 0 && g.yes() {
		g.emit(0x20)
		g.emitU32(l)
		return
	}
	g.constant(t)
}

// blockType for a block yielding t: the value type, a type index of () -> (t), or the
// value type as a two-byte s33.
func (g *gen) blockType(t []byte) {
	if len(t) == 0 {
		switch {
		case g.voidType >= 0 && g.n(4) == 0:
			g.emitU32(g.voidType)
		case g.n(8) == 0:
			g.emit(0xC0, 0x7F) // -64, empty, in two bytes
		default:
			g.emit(0x40)
		}
		return
	}
	for i, ft := range g.types {
		if len(ft.params) == 0 && slices.Equal(ft.results, t) && g.n(4) == 0 {
			g.emitU32(i)
			return
		}
	}
	if g.n(8) == 0 {
		g.emit(t[0]|0x80, 0x7F)
		return
	}
	g.emit(t[0])
}

func (g *gen) withLabel(carries []byte, body func()) {
	g.f.labels = append(g.f.labels, carries)
	body()
	g.f.labels = g.f.labels[:len(g.f.labels)-1]
}

func (g *gen) drops(n int) {
	for range n {
		g.emit(0x1A)
	}
}

var (
	binOps = map[byte][]byte{
		tI32: {0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77},
		tI64: {0x7C, 0x7D, 0x7E, 0x80, 0x83, 0x84, 0x85, 0x86},
		tF32: {0x92, 0x93, 0x94, 0x95, 0x96, 0x97},
		tF64: {0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5},
	}
	cmpOps = map[byte][]byte{
		tI32: {0x46, 0x47, 0x48, 0x49, 0x4A},
		tI64: {0x51, 0x53, 0x54},
		tF32: {0x5B, 0x5D},
		tF64: {0x61, 0x63},
	}
	// conversions into a type: the operand's type, then the instruction.
	convOps = map[byte][][]byte{
		tI32: {{tI64, 0xA7}, {tF32, 0xFC, 0x00}, {tF64, 0xFC, 0x02}, {tI32, 0xC0}, {tF32, 0xBC}, {tF32, 0xA8}},
		tI64: {{tI32, 0xAC}, {tI32, 0xAD}, {tF64, 0xFC, 0x06}, {tI64, 0xC4}, {tF64, 0xBD}},
		tF32: {{tI32, 0xB2}, {tF64, 0xB6}, {tI32, 0xBE}},
		tF64: {{tI32, 0xB7}, {tI64, 0xB9}, {tF32, 0xBB}, {tI64, 0xBF}},
	}
	// loads: the instruction and its natural alignment (log2).
	loadOps = map[byte][][2]byte{
		tI32: {{0x28, 2}, {0x2C, 0}, {0x2F, 1}},
		tI64: {{0x29, 3}, {0x30, 0}},
		tF32: {{0x2A, 2}},
		tF64: {{0x2B, 3}},
	}
	storeOps = map[byte][][2]byte{
		tI32: {{0x36, 2}, {0x3A, 0}, {0x3B, 1}},
		tI64: {{0x37, 3}, {0x3C, 0}},
		tF32: {{0x38, 2}},
		tF64: {{0x39, 3}},
	}
)

func (g *gen) pick(ops []byte) byte { return ops[g.n(len(ops))] }

// address pushes a memory address, mostly in bounds.
func (g *gen) address() {
	g.expr(tI32)
	g.emit(0x41)
	g.emitS32(0xFFF0)
	g.emit(0x71)
}

func (g *gen) memarg(natural byte) {
	g.emitU32(g.n(int(natural) + 1))
	g.emitU32(g.n(32))
}

// expr generates code that pushes one value of type t.
func (g *gen) expr(t byte) {
	f := g.f
	f.budget--
	f.depth++
	defer func() { f.depth-- }()
	if f.budget <= 0 || f.depth > 6 {
		g.leaf(t)
		return
	}
	switch g.n(15) {
	case 0:
		g.constant(t)
	case 1:
		g.leaf(t)
	case 2:
		if gl := g.globalOf(t, false); gl >= 0 {
			g.emit(0x23)
			g.emitU32(gl)
		} else {
			g.constant(t)
		}
	case 3:
		g.expr(t)
		g.expr(t)
		g.emit(g.pick(binOps[t]))
	case 4:
		if t != tI32 {
			g.constant(t)
			return
		}
		u := g.valType()
		if g.n(4) == 0 && (u == tI32 || u == tI64) {
			g.expr(u)
			g.emit(map[byte]byte{tI32: 0x45, tI64: 0x50}[u])
			return
		}
		g.expr(u)
		g.expr(u)
		g.emit(g.pick(cmpOps[u]))
	case 5:
		ops := convOps[t]
		op := ops[g.n(len(ops))]
		g.expr(op[0])
		g.emit(op[1:]...)
	case 6:
		c := g.funcsReturning([]byte{t})
		if len(c) == 0 {
			g.constant(t)
			return
		}
		fi := c[g.n(len(c))]
		g.args(g.types[g.funcs[fi]].params)
		if g.yes() {
			g.emit(0x10)
			g.emitU32(fi)
			return
		}
		g.tableIndex()
		g.emit(0x11)
		g.emitU32(int(g.funcs[fi]))
		g.emitU32(0)
	case 7: // block (result t)
		g.emit(0x02)
		g.blockType([]byte{t})
		g.withLabel([]byte{t}, func() {
			g.stmts()
			if g.yes() { // leave early with a value
				g.expr(t)
				g.expr(tI32)
				g.emit(0x0D, 0x00, 0x1A)
			}
			g.expr(t)
		})
		g.emit(end)
	case 8: // if (result t) else
		g.expr(tI32)
		g.emit(0x04)
		g.blockType([]byte{t})
		g.withLabel([]byte{t}, func() {
			g.stmts()
			g.expr(t)
			g.emit(0x05)
			g.stmts()
			g.expr(t)
		})
		g.emit(end)
	case 9: // loop (result t): a branch to it carries nothing
		g.emit(0x03)
		g.blockType([]byte{t})
		g.withLabel(nil, func() {
			g.stmts()
			g.expr(t)
		})
		g.emit(end)
	case 10:
		g.expr(t)
		g.expr(t)
		g.expr(tI32)
		if g.yes() {
			g.emit(0x1B)
		} else {
			g.emit(0x1C, 0x01, t)
		}
	case 11:
		if !g.memory {
			g.constant(t)
			return
		}
		ops := loadOps[t]
		op := ops[g.n(len(ops))]
		g.address()
		g.emit(op[0])
		g.memarg(op[1])
	case 12:
		l := g.localOf(t)
		if l < 0 {
			g.constant(t)
			return
		}
		g.expr(t)
		g.emit(0x22)
		g.emitU32(l)
	default:
		if t != tI32 {
			g.constant(t)
			return
		}
		switch g.n(6) {
		case 0:
			if g.memory {
				g.emit(0x3F, 0x00) // memory.size
				return
			}
		case 1:
			if g.memory {
				g.emit(0x41)
				g.emitS32(int32(g.n(3)))
				g.emit(0x40, 0x00) // memory.grow
				return
			}
		case 2:
			g.emit(0xFC, 16) // table.size; wazero reads the sub-opcode as one byte
			g.emitU32(0)
			return
		case 3:
			if g.shared {
				g.emit(0x41)
				g.emitS32(int32(4 * g.n(16)))
				g.emit(0xFE, 0x10, 0x02, 0x00) // i32.atomic.load
				return
			}
		case 4: // i32x4.extract_lane (i32x4.add (v128.const) (v128.const))
			for range 2 {
				g.emit(0xFD, 12)
				for range 16 {
					g.emit(g.byte())
				}
			}
			g.emit(0xFD, 0xAE, 0x01, 0xFD, 0x1B, byte(g.n(4)))
			return
		case 5:
			g.tableIndex()
			g.emit(0x25, 0x00, 0xD1) // ref.is_null (table.get)
			return
		}
		g.constant(t)
	}
}

// label picks an enclosing label: its depth and what a branch to it carries.
func (g *gen) label() (int, []byte) {
	d := g.n(len(g.f.labels))
	return d, g.f.labels[len(g.f.labels)-1-d]
}

// stmt generates code that leaves the stack as it was; true when it ends control flow.
func (g *gen) stmt() bool {
	f := g.f
	f.budget--
	switch g.n(21) {
	case 0:
		t := g.valType()
		if l := g.localOf(t); l >= 0 {
			g.expr(t)
			g.emit(0x21)
			g.emitU32(l)
		}
	case 1:
		if gl := g.globalOf(tI32, true); gl >= 0 {
			g.expr(tI32)
			g.emit(0x24)
			g.emitU32(gl)
		}
	case 2:
		if !g.memory {
			return false
		}
		t := g.valType()
		op := storeOps[t][g.n(len(storeOps[t]))]
		g.address()
		g.expr(t)
		g.emit(op[0])
		g.memarg(op[1])
	case 3:
		fi := g.n(len(g.funcs))
		ft := g.types[g.funcs[fi]]
		g.args(ft.params)
		g.emit(0x10)
		g.emitU32(fi)
		g.drops(len(ft.results))
	case 4:
		g.emit(0x02)
		g.blockType(nil)
		g.withLabel(nil, g.stmts)
		g.emit(end)
	case 5:
		g.emit(0x03)
		g.blockType(nil)
		g.withLabel(nil, g.stmts)
		g.emit(end)
	case 6:
		g.expr(tI32)
		g.emit(0x04)
		g.blockType(nil)
		g.withLabel(nil, func() {
			g.stmts()
			if g.yes() {
				g.emit(0x05)
				g.stmts()
			}
		})
		g.emit(end)
	case 7:
		d, carries := g.label()
		g.args(carries)
		g.emit(0x0C)
		g.emitU32(d)
		return true
	case 8:
		d, carries := g.label()
		g.args(carries)
		g.expr(tI32)
		g.emit(0x0D)
		g.emitU32(d)
		g.drops(len(carries))
	case 9:
		d, carries := g.label()
		var targets []int
		for i := range g.f.labels {
			if slices.Equal(g.f.labels[len(g.f.labels)-1-i], carries) && g.yes() {
				targets = append(targets, i)
			}
		}
		g.args(carries)
		g.expr(tI32)
		g.emit(0x0E)
		g.emitU32(len(targets))
		for _, t := range targets {
			g.emitU32(t)
		}
		g.emitU32(d)
		return true
	case 10:
		g.args(f.typ.results)
		g.emit(0x0F)
		return true
	case 11:
		c := g.funcsReturning(f.typ.results)
		if len(c) == 0 {
			return false
		}
		fi := c[g.n(len(c))]
		g.args(g.types[g.funcs[fi]].params)
		g.emit(0x12)
		g.emitU32(fi)
		return true
	case 12:
		c := g.typesReturning(f.typ.results)
		if len(c) == 0 {
			return false
		}
		ti := c[g.n(len(c))]
		g.args(g.types[ti].params)
		g.tableIndex()
		g.emit(0x13)
		g.emitU32(ti)
		g.emitU32(0)
		return true
	case 13: // counted loop: c = k; loop { ...; br_if 0 (c = c - 1) }
		c := slices.Index(f.counters, false)
		if c < 0 {
			return false
		}
		f.counters[c] = true
		l := f.scratch + c
		g.emit(0x41)
		g.emitS32(int32(1 + g.n(12)))
		g.emit(0x21)
		g.emitU32(l)
		g.emit(0x03)
		g.blockType(nil)
		g.withLabel(nil, g.stmts)
		g.emit(0x20)
		g.emitU32(l)
		g.emit(0x41, 0x01, 0x6B, 0x22)
		g.emitU32(l)
		g.emit(0x0D, 0x00, end)
		f.counters[c] = false
	case 14: // multi-value block, loop or if with a type index
		ti := g.n(len(g.types))
		ft := g.types[ti]
		g.args(ft.params)
		kind := g.n(3)
		if kind == 2 {
			g.expr(tI32)
		}
		g.emit([]byte{0x02, 0x03, 0x04}[kind])
		g.emitU32(ti)
		carries := ft.results
		if kind == 1 {
			carries = ft.params
		}
		g.withLabel(carries, func() {
			g.drops(len(ft.params))
			g.stmts()
			if kind == 1 && g.yes() { // back-edge carrying the parameters
				g.args(ft.params)
				g.expr(tI32)
				g.emit(0x0D, 0x00)
				g.drops(len(ft.params))
			}
			g.args(ft.results)
			if kind == 2 {
				g.emit(0x05)
				g.drops(len(ft.params))
				g.stmts()
				g.args(ft.results)
			}
		})
		g.emit(end)
		g.drops(len(ft.results))
	case 15:
		g.expr(g.valType())
		g.emit(0x1A)
	case 16:
		ti := g.n(len(g.types))
		ft := g.types[ti]
		g.args(ft.params)
		g.tableIndex()
		g.emit(0x11)
		g.emitU32(ti)
		g.emitU32(0)
		g.drops(len(ft.results))
	case 17: // table[i] = ref.func f
		g.tableIndex()
		g.emit(0xD2)
		g.emitU32(g.n(len(g.funcs)))
		g.emit(0x26, 0x00)
	case 18:
		if !g.memory {
			return false
		}
		g.emit(0x41)
		g.emitS32(int32(g.n(256)))
		if g.yes() {
			g.expr(tI32)
			g.emit(0x41)
			g.emitS32(int32(g.n(64)))
			g.emit(0xFC, 11, 0x00) // memory.fill
		} else {
			g.emit(0x41)
			g.emitS32(int32(g.n(256)))
			g.emit(0x41)
			g.emitS32(int32(g.n(64)))
			g.emit(0xFC, 10, 0x00, 0x00) // memory.copy
		}
	case 19:
		if g.shared && g.yes() {
			g.emit(0xFE, 0x03, 0x00) // atomic.fence
			return false
		}
		g.emit(0x01)
	default:
		if g.n(4) == 0 {
			g.emit(0x00) // unreachable
			return true
		}
		g.emit(0x01)
	}
	return false
}
