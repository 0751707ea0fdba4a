package wasm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Loop fuel: instead of wazero's WithCloseOnContextDone, which makes every loop
// iteration leave native code to look at the context (~60 ns each), instrument gives
// the module a fuel counter that every loop iteration and every entry into a function
// that calls decrements, and only when it runs out calls the host's deadline_check
// (deadlineCheck, engine.go), which stops the call once its context is done. Code runs
// without end only by looping or by calling (recursion: direct, indirect or tail); a
// function that calls nothing runs its body once, loop iterations aside. So a call is
// stopped a bounded amount of work after its deadline. wazero's own check sits at loop
// headers only: it cannot stop a recursion that branches (f(n) calling f(n-1) twice
// runs 2^n calls at a depth of n), this can.
const (
	deadlineModule = "flotilla:host/env"
	deadlineField  = "deadline_check"
	// fuelPerCheck loop iterations run between two host checks: the host call is then
	// noise, and even a tight loop reaches the next check within a millisecond or so.
	fuelPerCheck = 1 << 16
)

// errReservedImport: the module imports the host's deadline_check itself. Load refuses
// it; the name is the host's to give.
var errReservedImport = errors.New("the module imports " + deadlineModule + " " + deadlineField + ", which is reserved for the host")

// instrument returns module with one more function import, deadline_check (appended
// after the existing function imports, so every defined function's index moves up by
// one), one more mutable i32 global, the fuel, and this at the start of every loop body
// and of every function body with a call instruction (unless it starts with a loop,
// which checks on entry anyway):
//
//	fuel = fuel - 1; if fuel == 0 { deadline_check(); fuel = fuelPerCheck }
//
// Function indices are renumbered everywhere they occur (code, exports, start, element
// segments, global initialisers, the name section). Sections it does not change are
// copied byte for byte, except DWARF (.debug_*), whose code offsets would no longer
// be true. The output is a pure function of the input, so it caches by content.
//
// Anything it cannot decode (an unknown opcode or a type from a proposal it does not
// know) is an error, and the caller falls back to wazero's own termination checks; so is
// a type or global index past the original's (the caller's fallback then has wazero
// refuse the module).
func instrument(module []byte) ([]byte, error) { return instrumentWithFuel(module, fuelPerCheck) }

// instrumentWithFuel is instrument with fuel iterations between checks; the fuzz test
// uses a small fuel so that a looping module reaches its checks quickly.
func instrumentWithFuel(module []byte, fuel int32) ([]byte, error) {
	if len(module) < 8 || string(module[:4]) != "\x00asm" || binary.LittleEndian.Uint32(module[4:8]) != 1 {
		return nil, errors.New("not a WebAssembly version 1 binary module")
	}
	type section struct {
		id      byte
		payload []byte
	}
	var sections []section
	r := &reader{b: module, pos: 8}
	for r.pos < len(module) && r.err == nil {
		id := r.byte()
		payload := r.bytes(int(r.u32()))
		sections = append(sections, section{id, payload})
	}
	if r.err != nil {
		return nil, fmt.Errorf("reading sections: %w", r.err)
	}

	// First pass: the indices the rewrite needs.
	in := &instrumenter{voidType: -1, fuel: fuel}
	var definedGlobals uint32
	for _, s := range sections {
		var err error
		switch s.id {
		case secType:
			err = in.scanTypes(s.payload)
		case secImport:
			err = in.scanImports(s.payload)
		case secGlobal:
			definedGlobals, err = (&reader{b: s.payload}).count()
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", s.id, err)
		}
	}
	in.fuelGlobal = in.importedGlobals + definedGlobals
	in.check = fuelCheck(in.fuelGlobal, in.funcImports, fuel)

	out := make([]byte, 0, len(module)+len(module)/4+64)
	out = append(out, module[:8]...)
	// Sections the module may lack and the rewrite needs, emitted at their place in the
	// section order.
	missing := map[byte]bool{secType: true, secImport: true, secGlobal: true}
	addMissing := func(before int) {
		for _, id := range []byte{secType, secImport, secGlobal} {
			if missing[id] && sectionOrder[id] < before {
				missing[id] = false
				out = appendSection(out, id, in.newSection(id))
			}
		}
	}
	for i, s := range sections {
		if s.id != secCustom {
			order, ok := sectionOrder[s.id]
			if !ok {
				return nil, fmt.Errorf("unknown section id %d", s.id)
			}
			addMissing(order)
			missing[s.id] = false
		}
		payload, err := in.rewrite(s.id, s.payload)
		if err != nil {
			return nil, fmt.Errorf("section %d (#%d): %w", s.id, i, err)
		}
		if payload != nil {
			out = appendSection(out, s.id, payload)
		}
	}
	addMissing(len(sectionOrder) + 1)
	return out, nil
}

const (
	secCustom   byte = 0
	secType     byte = 1
	secImport   byte = 2
	secFunction byte = 3
	secTable    byte = 4
	secGlobal   byte = 6
	secExport   byte = 7
	secStart    byte = 8
	secElem     byte = 9
	secCode     byte = 10
)

// sectionOrder is the order the spec requires of non-custom sections (tag, 13, sits
// between memory and global; data count, 12, before code).
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

type instrumenter struct {
	types           uint32
	voidType        int // index of an existing () -> () type, or -1
	funcImports     uint32
	importedGlobals uint32
	fuelGlobal      uint32
	fuel            int32 // iterations between two checks
	check           []byte
	fn              uint32 // function being rewritten, for errors (original numbering)
	calls           bool   // it has a call instruction
}

// Indices one past the original's last type or global would name what instrument adds
// (deadline_check's () -> () type, the fuel global), turning an invalid module into a
// valid one: a module could set its own fuel. They are refused (the engine then hands
// the original to wazero, which refuses it). Function indices need no check: every
// defined one moves up by one, so one out of range stays out of range.
func (in *instrumenter) typeIndex(i uint64) error {
	if i >= uint64(in.types) {
		return fmt.Errorf("type index %d out of range (%d types)", i, in.types)
	}
	return nil
}

func (in *instrumenter) globalIndex(i uint32) error {
	if i >= in.fuelGlobal {
		return fmt.Errorf("global index %d out of range (%d globals)", i, in.fuelGlobal)
	}
	return nil
}

// checkFunctions reads the function section: one type index per function.
func (in *instrumenter) checkFunctions(p []byte) error {
	r := &reader{b: p}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if err := in.typeIndex(uint64(r.u32())); err != nil && r.err == nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return r.done()
}

// funcIndex renumbers a function index of the original module.
func (in *instrumenter) funcIndex(i uint32) uint32 {
	if i >= in.funcImports {
		return i + 1
	}
	return i
}

func (in *instrumenter) deadlineType() uint32 {
	if in.voidType >= 0 {
		return uint32(in.voidType)
	}
	return in.types
}

func fuelCheck(global, fn uint32, fuel int32) []byte {
	var b []byte
	getFuel := func() { b = append(b, 0x23); b = appendU32(b, global) }
	setFuel := func() { b = append(b, 0x24); b = appendU32(b, global) }
	getFuel()
	b = append(b, 0x41, 0x01, 0x6B) // i32.const 1, i32.sub
	setFuel()
	getFuel()
	b = append(b, 0x45, 0x04, 0x40, 0x10) // i32.eqz, if (empty), call
	b = appendU32(b, fn)
	b = append(b, 0x41) // i32.const
	b = appendS32(b, fuel)
	setFuel()
	return append(b, 0x0B) // end
}

func (in *instrumenter) scanTypes(p []byte) error {
	r := &reader{b: p}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			return fmt.Errorf("type %d: unsupported type form 0x%02x", i, form)
		}
		params, results := r.valTypes(), r.valTypes()
		if params == 0 && results == 0 && in.voidType < 0 {
			in.voidType = int(i)
		}
	}
	in.types = n
	return r.done()
}

func (in *instrumenter) scanImports(p []byte) error {
	r := &reader{b: p}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if mod, field := r.name(), r.name(); mod == deadlineModule && field == deadlineField {
			return errReservedImport
		}
		switch kind := r.byte(); kind {
		case 0x00: // func
			if err := in.typeIndex(uint64(r.u32())); err != nil {
				return fmt.Errorf("import %d: %w", i, err)
			}
			in.funcImports++
		case 0x01: // table
			r.refType()
			r.limits()
		case 0x02: // memory
			r.limits()
		case 0x03: // global
			r.valType()
			r.byte()
			in.importedGlobals++
		case 0x04: // tag (the instructions that use one are refused)
			r.byte()
			r.u32()
		default:
			return fmt.Errorf("import %d: unknown kind 0x%02x", i, kind)
		}
	}
	return r.done()
}

// newSection is the payload of a section the module lacks.
func (in *instrumenter) newSection(id byte) []byte {
	var b []byte
	switch id {
	case secType:
		b = append(b, 0x01, 0x60, 0x00, 0x00)
	case secImport:
		b = in.appendDeadlineImport(appendU32(b, 1))
	case secGlobal:
		b = in.appendFuelGlobal(appendU32(b, 1))
	}
	return b
}

func (in *instrumenter) appendDeadlineImport(b []byte) []byte {
	b = appendName(b, deadlineModule)
	b = appendName(b, deadlineField)
	b = append(b, 0x00)
	return appendU32(b, in.deadlineType())
}

func (in *instrumenter) appendFuelGlobal(b []byte) []byte {
	b = append(b, 0x7F, 0x01, 0x41) // i32, mutable, i32.const
	b = appendS32(b, in.fuel)
	return append(b, 0x0B)
}

// rewrite returns a section's new payload; nil drops the section.
func (in *instrumenter) rewrite(id byte, p []byte) ([]byte, error) {
	switch id {
	case secType:
		if in.voidType >= 0 {
			return p, nil
		}
		r := &reader{b: p}
		b := appendU32(nil, r.u32()+1)
		b = append(b, p[r.pos:]...)
		return append(b, 0x60, 0x00, 0x00), nil
	case secImport:
		r := &reader{b: p}
		b := appendU32(nil, r.u32()+1)
		b = append(b, p[r.pos:]...)
		return in.appendDeadlineImport(b), nil
	case secFunction:
		return p, in.checkFunctions(p)
	case secTable:
		return p, checkTables(p)
	case secGlobal:
		return in.rewriteGlobals(p)
	case secExport:
		return in.rewriteExports(p)
	case secStart:
		r := &reader{b: p}
		b := appendU32(nil, in.funcIndex(r.u32()))
		return b, r.done()
	case secElem:
		return in.rewriteElements(p)
	case secCode:
		return in.rewriteCode(p)
	case secCustom:
		r := &reader{b: p}
		name := r.name()
		switch {
		case r.err != nil:
			return nil, r.err
		case name == "name":
			if b, err := in.rewriteNames(p, r.pos); err == nil {
				return b, nil
			}
			// A malformed name section only costs names in stack traces.
			return nil, nil
		case strings.HasPrefix(name, ".debug_"):
			return nil, nil
		}
	}
	return p, nil
}

// checkTables refuses tables with an initialiser expression (function references
// proposal), which could hold a ref.func this rewriter does not renumber.
func checkTables(p []byte) error {
	r := &reader{b: p}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.refType()
		r.limits()
	}
	return r.done()
}

func (in *instrumenter) rewriteGlobals(p []byte) ([]byte, error) {
	r := &reader{b: p}
	n := r.u32()
	b := appendU32(make([]byte, 0, len(p)+8), n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		r.valType()
		r.byte()
		b = append(b, p[start:r.pos]...)
		var err error
		if b, err = in.expr(r, b); err != nil {
			return nil, fmt.Errorf("global %d: %w", i, err)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return in.appendFuelGlobal(b), nil
}

func (in *instrumenter) rewriteExports(p []byte) ([]byte, error) {
	r := &reader{b: p}
	n := r.u32()
	b := appendU32(make([]byte, 0, len(p)+8), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		r.name()
		kind := r.byte()
		b = append(b, p[start:r.pos]...)
		idx := r.u32()
		switch kind {
		case 0x00:
			idx = in.funcIndex(idx)
		case 0x03:
			if err := in.globalIndex(idx); err != nil && r.err == nil {
				return nil, fmt.Errorf("export %d: %w", i, err)
			}
		}
		b = appendU32(b, idx)
	}
	return b, r.done()
}

// rewriteElements handles the eight segment encodings (flags 0-7): bit 0 passive or
// declarative, bit 1 explicit table index (active) or declarative, bit 2 expressions
// instead of function indices.
func (in *instrumenter) rewriteElements(p []byte) ([]byte, error) {
	r := &reader{b: p}
	n := r.u32()
	b := appendU32(make([]byte, 0, len(p)+8), n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			return nil, fmt.Errorf("element segment %d: unknown flags %d", i, flags)
		}
		b = appendU32(b, flags)
		var err error
		if flags&3 == 2 {
			b = appendU32(b, r.u32()) // table index
		}
		if flags&1 == 0 {
			if b, err = in.expr(r, b); err != nil { // offset
				return nil, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
		if flags&3 != 0 {
			if flags&4 == 0 {
				if kind := r.byte(); kind != 0x00 {
					return nil, fmt.Errorf("element segment %d: unknown element kind 0x%02x", i, kind)
				}
				b = append(b, 0x00)
			} else {
				b = append(b, r.refType())
			}
		}
		m := r.u32()
		b = appendU32(b, m)
		for j := uint32(0); j < m && r.err == nil; j++ {
			if flags&4 == 0 {
				b = appendU32(b, in.funcIndex(r.u32()))
			} else if b, err = in.expr(r, b); err != nil {
				return nil, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
	}
	return b, r.done()
}

func (in *instrumenter) rewriteCode(p []byte) ([]byte, error) {
	r := &reader{b: p}
	n := r.u32()
	b := appendU32(make([]byte, 0, len(p)+len(p)/4+16), n)
	var body []byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		in.fn = in.funcImports + i
		size := r.u32()
		br := &reader{b: r.bytes(int(size))}
		if r.err != nil {
			break
		}
		// Locals: copied as they are.
		groups := br.u32()
		for j := uint32(0); j < groups && br.err == nil; j++ {
			br.u32()
			br.valType()
		}
		if br.err != nil {
			return nil, fmt.Errorf("function %d: locals: %w", in.fn, br.err)
		}
		body = append(body[:0], br.b[:br.pos]...)
		entry, loopFirst := len(body), br.pos < len(br.b) && br.b[br.pos] == 0x03
		in.calls = false
		var err error
		if body, err = in.expr(br, body); err != nil {
			return nil, fmt.Errorf("function %d: %w", in.fn, err)
		}
		// Recursion is a loop too: a function that calls checks on entry (unless its loop
		// does). One that does not call runs its body once, loop iterations aside.
		if in.calls && !loopFirst {
			body = slices.Insert(body, entry, in.check...)
		}
		if br.pos != len(br.b) {
			return nil, fmt.Errorf("function %d: %d bytes after the final end", in.fn, len(br.b)-br.pos)
		}
		b = appendU32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b, r.done()
}

// rewriteNames renumbers the function-indexed subsections of the name section:
// function names (1, where deadline_check gets its name), local names (2) and label
// names (3). Others are copied.
func (in *instrumenter) rewriteNames(p []byte, start int) ([]byte, error) {
	r := &reader{b: p, pos: start}
	b := append(make([]byte, 0, len(p)+32), p[:start]...)
	for r.pos < len(p) && r.err == nil {
		id := r.byte()
		sub := &reader{b: r.bytes(int(r.u32()))}
		if r.err != nil {
			break
		}
		var nb []byte
		switch id {
		case 1:
			n := sub.u32()
			nb = appendU32(nil, n+1)
			added := false
			for i := uint32(0); i < n && sub.err == nil; i++ {
				idx := sub.u32()
				name := sub.name()
				if !added && idx >= in.funcImports {
					nb = appendU32(nb, in.funcImports)
					nb = appendName(nb, deadlineField)
					added = true
				}
				nb = appendU32(nb, in.funcIndex(idx))
				nb = appendName(nb, name)
			}
			if !added {
				nb = appendU32(nb, in.funcImports)
				nb = appendName(nb, deadlineField)
			}
		case 2, 3:
			n := sub.u32()
			nb = appendU32(nil, n)
			for i := uint32(0); i < n && sub.err == nil; i++ {
				nb = appendU32(nb, in.funcIndex(sub.u32()))
				start := sub.pos
				m := sub.u32()
				for j := uint32(0); j < m && sub.err == nil; j++ {
					sub.u32()
					sub.name()
				}
				nb = append(nb, sub.b[start:sub.pos]...)
			}
		default:
			nb = sub.b
			sub.pos = len(sub.b)
		}
		if err := sub.done(); err != nil {
			return nil, fmt.Errorf("name subsection %d: %w", id, err)
		}
		b = append(b, id)
		b = appendU32(b, uint32(len(nb)))
		b = append(b, nb...)
	}
	return b, r.done()
}

// expr copies one expression (a function body or a constant expression) from r to
// b, up to and including the end that closes it, renumbering function indices and
// adding the fuel check to loops. Runs of unchanged instructions are copied in one go.
func (in *instrumenter) expr(r *reader, b []byte) ([]byte, error) {
	depth := 0
	copied := r.pos
	for {
		start := r.pos
		op := r.byte()
		if r.err != nil {
			return nil, r.err
		}
		switch op {
		case 0x0B: // end
			if depth == 0 {
				return append(b, r.b[copied:r.pos]...), nil
			}
			depth--
		case 0x02, 0x04: // block, if
			if err := in.blockType(r); err != nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
			depth++
		case 0x03: // loop
			if err := in.blockType(r); err != nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
			depth++
			b = append(b, r.b[copied:r.pos]...)
			b = append(b, in.check...)
			copied = r.pos
		case 0x10, 0x12, 0xD2: // call, return_call, ref.func
			in.calls = in.calls || op != 0xD2
			idx := r.u32()
			b = append(b, r.b[copied:start]...)
			b = append(b, op)
			b = appendU32(b, in.funcIndex(idx))
			copied = r.pos
		case 0x11, 0x13: // call_indirect, return_call_indirect: type, table
			in.calls = true
			ti := r.u32()
			r.u32()
			if err := in.typeIndex(uint64(ti)); err != nil && r.err == nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
		case 0x23, 0x24: // global.get, global.set
			if err := in.globalIndex(r.u32()); err != nil && r.err == nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
		default:
			if err := skipImmediates(r, op); err != nil {
				return nil, fmt.Errorf("at byte %d: %w", start, err)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
}

// skipImmediates reads the immediates of every other instruction.
func skipImmediates(r *reader, op byte) error {
	switch {
	case op <= 0x01, op == 0x05, op == 0x0F, op == 0x1A, op == 0x1B, op == 0xD1,
		op >= 0x45 && op <= 0xC4: // unreachable, nop, else, return, drop, select, ref.is_null, numeric
	case op == 0x0C, op == 0x0D: // br, br_if
		r.u32()
	case op == 0x0E: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x1C: // select t*
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.valType()
		}
	case op >= 0x20 && op <= 0x22, op == 0x25, op == 0x26: // local.*, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3E: // loads and stores
		r.memarg()
	case op == 0x3F, op == 0x40: // memory.size/grow: memory index
		r.u32()
	case op == 0x41: // i32.const
		r.leb(5)
	case op == 0x42: // i64.const
		r.leb(10)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op == 0xD0: // ref.null: heap type
		r.refType()
	case op == 0xFC:
		return skipFC(r)
	case op == 0xFD:
		return skipSIMD(r)
	case op == 0xFE:
		return skipAtomic(r)
	default:
		return fmt.Errorf("unsupported opcode 0x%02x", op)
	}
	return nil
}

func skipFC(r *reader) error {
	switch sub := r.u32(); {
	case sub <= 7: // trunc_sat
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case sub <= 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		r.u32()
	default:
		return fmt.Errorf("unsupported opcode 0xfc %d", sub)
	}
	return nil
}

func skipSIMD(r *reader) error {
	switch sub := r.u32(); {
	case sub <= 11, sub == 92, sub == 93: // loads, stores, load*_zero
		r.memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memarg()
		r.byte()
	case sub <= 255:
	default: // relaxed SIMD and later
		return fmt.Errorf("unsupported opcode 0xfd %d", sub)
	}
	return nil
}

func skipAtomic(r *reader) error {
	switch sub := r.u32(); {
	case sub == 0x03: // atomic.fence
		r.byte()
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4E:
		r.memarg()
	default:
		return fmt.Errorf("unsupported opcode 0xfe 0x%02x", sub)
	}
	return nil
}

// reader decodes a byte slice; the first error sticks and later reads return zero.
type reader struct {
	b   []byte
	pos int
	err error
}

var errEOF = errors.New("unexpected end of data")

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.pos = len(r.b)
}

func (r *reader) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail(errEOF)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.pos {
		r.fail(errEOF)
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

// leb reads an unsigned LEB128 of at most maxBytes bytes; signed ones are read the
// same way when only their length matters.
func (r *reader) leb(maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("LEB128 too long"))
	return 0
}

func (r *reader) u32() uint32 {
	v := r.leb(5)
	if v > 0xFFFFFFFF {
		r.fail(errors.New("u32 out of range"))
	}
	return uint32(v)
}

func (r *reader) count() (uint32, error) {
	n := r.u32()
	return n, r.err
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

// done reports the sticky error, or trailing bytes.
func (r *reader) done() error {
	if r.err == nil && r.pos != len(r.b) {
		r.err = fmt.Errorf("%d unexpected trailing bytes", len(r.b)-r.pos)
	}
	return r.err
}

// valType reads a one-byte value type: numeric, vector or reference. Typed references
// (GC, function references) are not supported.
func (r *reader) valType() byte {
	t := r.byte()
	switch t {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
	default:
		r.fail(fmt.Errorf("unsupported value type 0x%02x", t))
	}
	return t
}

func (r *reader) refType() byte {
	t := r.byte()
	if t != 0x70 && t != 0x6F {
		r.fail(fmt.Errorf("unsupported reference type 0x%02x", t))
	}
	return t
}

func (r *reader) valTypes() uint32 {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.valType()
	}
	return n
}

// blockType reads a block type: an s33, negative for empty (0x40) or a value type
// (usually one byte), else a type index, which must be the original's.
func (in *instrumenter) blockType(r *reader) error {
	if r.pos < len(r.b) && r.b[r.pos] > 0x40 && r.b[r.pos] <= 0x7F {
		r.valType()
		return nil
	}
	if v := r.s33(); v >= 0 && r.err == nil {
		return in.typeIndex(uint64(v))
	}
	return nil
}

func (r *reader) s33() int64 {
	var v int64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7F) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
	r.fail(errors.New("LEB128 too long"))
	return 0
}

// limits: flags (bit 0 max present, bit 1 shared, bit 2 64-bit), min, optional max.
func (r *reader) limits() {
	flags := r.byte()
	if flags > 7 {
		r.fail(fmt.Errorf("unsupported limits flags 0x%02x", flags))
		return
	}
	r.leb(10)
	if flags&1 != 0 {
		r.leb(10)
	}
}

// memarg: alignment (bit 6 announces a memory index, multi-memory) and offset.
func (r *reader) memarg() {
	if align := r.u32(); align&0x40 != 0 {
		r.u32()
	}
	r.leb(10)
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte { return appendS64(b, int64(v)) }

// appendS64 appends v in signed LEB128 (the encoding depends only on the value, so an i32
// and an i64 immediate of one value are the same bytes).
func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	return append(appendU32(b, uint32(len(s))), s...)
}

func appendSection(b []byte, id byte, payload []byte) []byte {
	b = append(b, id)
	b = appendU32(b, uint32(len(payload)))
	return append(b, payload...)
}
