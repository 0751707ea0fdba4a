package jqpath

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// mode is what a sub-expression must produce.
type mode int

const (
	// valueMode: any value; the expression only computes (a select condition, an index key).
	valueMode mode = iota
	// pathMode: fields of the input, so that path(...) can name them.
	pathMode
)

// argMode is what a function argument must be.
type argMode int

const (
	argValue   argMode = iota // a value, whatever the call's mode
	argSame                   // a path when the call is in path mode
	argDescent                // a step down into the input (recurse's f)
	argConst                  // a constant: contains and test of two inputs take their product
)

// fn describes one allowed function of a given arity.
type fn struct {
	path bool // the result is a field of the input (usable in path mode)
	args []argMode
}

// allowedFunctions is the list users see in errors (and README.md).
const allowedFunctions = "empty, select, recurse, first, last, limit, arrays, objects, iterables, booleans, numbers, " +
	"strings, nulls, values, scalars, not, length, utf8bytelength, type, keys, keys_unsorted, has, in, contains, " +
	"inside, startswith, endswith, ltrimstr, rtrimstr, ascii_downcase, ascii_upcase, test, tostring, tonumber, " +
	"any, all, isempty, IN"

// lookup returns the allowed function name/arity. Every allowed function ends on a finite
// input, builds values no larger than the input, and takes time about linear in it (contains
// and test only with a constant argument): the static half of the bounds.
func lookup(name string, arity int) (fn, bool) {
	v, s, d, c := argValue, argSame, argDescent, argConst
	switch fmt.Sprintf("%s/%d", name, arity) {
	case "empty/0", "first/0", "last/0", "recurse/0",
		"arrays/0", "objects/0", "iterables/0", "booleans/0", "numbers/0", "strings/0", "nulls/0", "values/0", "scalars/0":
		return fn{path: true}, true
	case "select/1":
		return fn{path: true, args: []argMode{v}}, true
	case "first/1":
		return fn{path: true, args: []argMode{s}}, true
	case "limit/2":
		return fn{path: true, args: []argMode{v, s}}, true
	case "recurse/1":
		return fn{path: true, args: []argMode{d}}, true
	case "recurse/2":
		return fn{path: true, args: []argMode{d, v}}, true
	case "not/0", "length/0", "utf8bytelength/0", "type/0", "keys/0", "keys_unsorted/0",
		"ascii_downcase/0", "ascii_upcase/0", "tostring/0", "tonumber/0", "any/0", "all/0":
		return fn{}, true
	case "has/1", "in/1", "startswith/1", "endswith/1", "ltrimstr/1", "rtrimstr/1",
		"any/1", "all/1", "isempty/1", "IN/1", "last/1":
		return fn{args: []argMode{v}}, true
	case "contains/1", "inside/1", "test/1":
		return fn{args: []argMode{c}}, true
	case "any/2", "all/2", "IN/2":
		return fn{args: []argMode{v, v}}, true
	case "test/2":
		return fn{args: []argMode{c, c}}, true
	}
	return fn{}, false
}

// refused says why a function that is not allowed is dangerous, for the ones that are: they
// can go on without end, or read something other than the object.
func refused(name string) (string, bool) {
	switch name {
	case "repeat", "while", "recurse":
		return "can generate values without end", true
	case "until":
		return "can loop without end", true
	case "range":
		return "can generate any number of values", true
	case "input", "inputs", "input_filename":
		return "reads inputs other than the object", true
	case "env":
		return "reads the agent's environment", true
	case "error":
		return "only fails the expression", true
	case "halt", "halt_error":
		return "stops the evaluator", true
	case "debug", "stderr":
		return "writes to the agent's log", true
	}
	return "", false
}

// scope is the variables bound around a sub-expression.
type scope struct {
	name string
	up   *scope
}

func (s *scope) has(name string) bool {
	for ; s != nil; s = s.up {
		if s.name == name {
			return true
		}
	}
	return false
}

// check refuses what cannot be a bounded path expression: it walks the parsed query and
// allows only field and index steps, iteration, a list of functions that end and build no
// more than their input, comparisons, and arithmetic against a number.
func check(q *gojq.Query) error {
	if q.Meta != nil || len(q.Imports) > 0 {
		return fmt.Errorf("modules (import, include) are not allowed")
	}
	return query(q, pathMode, nil)
}

func notPath(what fmt.Stringer) error {
	return fmt.Errorf("%s does not select fields of the object: a jq path expression selects fields, e.g. .spec.replicas or .items[] | select(...)", clip(what.String()))
}

func query(q *gojq.Query, m mode, s *scope) error {
	if q == nil {
		return nil
	}
	if len(q.FuncDefs) > 0 {
		return fmt.Errorf("defines function %s: function definitions are not allowed", q.FuncDefs[0].Name)
	}
	if q.Term != nil {
		return term(q.Term, m, s)
	}
	switch q.Op {
	case gojq.OpPipe:
		if len(q.Patterns) > 0 {
			// `v as $x | p`: v is computed, p selects.
			if err := query(q.Left, valueMode, s); err != nil {
				return err
			}
			for _, p := range q.Patterns {
				var err error
				if s, err = pattern(p, s); err != nil {
					return err
				}
			}
			return query(q.Right, m, s)
		}
		return both(q, m, m, s)
	case gojq.OpComma, gojq.OpAlt:
		return both(q, m, m, s)
	case gojq.OpAnd, gojq.OpOr, gojq.OpEq, gojq.OpNe, gojq.OpLt, gojq.OpGt, gojq.OpLe, gojq.OpGe:
		if m == pathMode {
			return notPath(q)
		}
		return both(q, valueMode, valueMode, s)
	case gojq.OpAdd, gojq.OpSub, gojq.OpDiv, gojq.OpMod:
		if m == pathMode {
			return notPath(q)
		}
		// Against a number the result is a number (or an error), never a larger value.
		if !isNumber(q.Left) && !isNumber(q.Right) {
			return fmt.Errorf("%s: arithmetic %s is allowed only with a number literal on one side", clip(q.String()), q.Op)
		}
		return both(q, valueMode, valueMode, s)
	case gojq.OpMul:
		return fmt.Errorf("%s: * is not allowed (it repeats strings and merges objects)", clip(q.String()))
	default:
		return fmt.Errorf("%s: assignment (%s) is not allowed", clip(q.String()), q.Op)
	}
}

func both(q *gojq.Query, left, right mode, s *scope) error {
	if err := query(q.Left, left, s); err != nil {
		return err
	}
	return query(q.Right, right, s)
}

func term(t *gojq.Term, m mode, s *scope) error {
	var err error
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeRecurse:
	case gojq.TermTypeIndex:
		err = index(t.Index, m, s)
	case gojq.TermTypeFunc:
		err = call(t.Func, m, s)
	case gojq.TermTypeQuery:
		err = query(t.Query, m, s)
	case gojq.TermTypeIf:
		err = ifTerm(t.If, m, s)
	case gojq.TermTypeTry:
		if t.Try.Catch != nil && m == pathMode {
			return fmt.Errorf("%s: try ... catch does not select fields; use try without catch, or ?", clip(t.String()))
		}
		if err = query(t.Try.Body, m, s); err == nil {
			err = query(t.Try.Catch, valueMode, s)
		}
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber, gojq.TermTypeString,
		gojq.TermTypeUnary, gojq.TermTypeArray, gojq.TermTypeObject:
		if m == pathMode {
			return notPath(t)
		}
		err = literal(t, s)
	case gojq.TermTypeFormat:
		return fmt.Errorf("%s: formats (@base64, @json, ...) are not allowed", clip(t.String()))
	case gojq.TermTypeReduce, gojq.TermTypeForeach:
		return fmt.Errorf("%s: reduce and foreach are not allowed", clip(t.String()))
	case gojq.TermTypeLabel, gojq.TermTypeBreak:
		return fmt.Errorf("%s: label and break are not allowed", clip(t.String()))
	default:
		return fmt.Errorf("%s is not allowed", clip(t.String()))
	}
	if err != nil {
		return err
	}
	for _, sfx := range t.SuffixList {
		if sfx.Index != nil {
			if err := index(sfx.Index, m, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// index checks a field or index step: .name, ."name", .[expr], and a slice .[a:b] only
// where it computes a value: a field the agent ignores has no slice steps.
func index(ix *gojq.Index, m mode, s *scope) error {
	if ix.IsSlice && m == pathMode {
		return fmt.Errorf("%s: slices do not select fields; select elements with .[] | select(...)", clip(ix.String()))
	}
	if ix.Str != nil && ix.Str.Queries != nil {
		return fmt.Errorf("%s: string interpolation is not allowed", clip(ix.String()))
	}
	if err := query(ix.Start, valueMode, s); err != nil {
		return err
	}
	return query(ix.End, valueMode, s)
}

func ifTerm(i *gojq.If, m mode, s *scope) error {
	if err := query(i.Cond, valueMode, s); err != nil {
		return err
	}
	if err := query(i.Then, m, s); err != nil {
		return err
	}
	for _, e := range i.Elif {
		if err := query(e.Cond, valueMode, s); err != nil {
			return err
		}
		if err := query(e.Then, m, s); err != nil {
			return err
		}
	}
	return query(i.Else, m, s)
}

func call(f *gojq.Func, m mode, s *scope) error {
	if strings.HasPrefix(f.Name, "$") {
		if !s.has(f.Name) {
			return fmt.Errorf("variable %s is not defined (only variables bound with `as` are)", f.Name)
		}
		if m == pathMode {
			return notPath(f)
		}
		return nil
	}
	spec, ok := lookup(f.Name, len(f.Args))
	if !ok {
		if why, bad := refused(f.Name); bad {
			return fmt.Errorf("%s is not allowed: it %s", clip(f.String()), why)
		}
		return fmt.Errorf("function %s/%d is not allowed (allowed: %s)", f.Name, len(f.Args), allowedFunctions)
	}
	if m == pathMode && !spec.path {
		return notPath(f)
	}
	for i, a := range f.Args {
		var err error
		switch spec.args[i] {
		case argValue:
			err = query(a, valueMode, s)
		case argSame:
			err = query(a, m, s)
		case argConst:
			if !constantQuery(a) {
				return fmt.Errorf("%s: the argument of %s must be a constant (a string, number, array or object literal)", clip(f.String()), f.Name)
			}
		case argDescent:
			if down, serr := steps(a, s); serr != nil || !down {
				return fmt.Errorf("%s is not allowed: recurse(f) ends only if f steps into the object on every branch, "+
					"e.g. recurse(.[]?) or recurse(.spec.items[]?); .. visits every field", clip(f.String()))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// steps checks that q is made of field, index and iteration steps only, and reports whether
// every branch iterates (.[]): then each output is inside its input, or the next step fails
// on null, so recursing with q ends on a finite object.
func steps(q *gojq.Query, s *scope) (bool, error) {
	if q == nil {
		return false, fmt.Errorf("not a step")
	}
	if q.Term == nil {
		if len(q.FuncDefs) > 0 || len(q.Patterns) > 0 {
			return false, fmt.Errorf("not a step")
		}
		l, err := steps(q.Left, s)
		if err != nil {
			return false, err
		}
		r, err := steps(q.Right, s)
		if err != nil {
			return false, err
		}
		switch q.Op {
		case gojq.OpComma:
			return l && r, nil
		case gojq.OpPipe:
			return l || r, nil
		}
		return false, fmt.Errorf("not a step")
	}
	t := q.Term
	down := false
	switch t.Type {
	case gojq.TermTypeIdentity:
	case gojq.TermTypeIndex:
		if err := index(t.Index, pathMode, s); err != nil {
			return false, err
		}
	case gojq.TermTypeQuery:
		var err error
		if down, err = steps(t.Query, s); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("not a step")
	}
	for _, sfx := range t.SuffixList {
		switch {
		case sfx.Iter:
			down = true
		case sfx.Index != nil:
			if err := index(sfx.Index, pathMode, s); err != nil {
				return false, err
			}
		}
	}
	return down, nil
}

// literal checks a constant: null, booleans, numbers, strings without interpolation, and
// arrays and objects of constants; a unary minus or plus applies to any allowed value.
func literal(t *gojq.Term, s *scope) error {
	switch t.Type {
	case gojq.TermTypeString:
		if t.Str.Queries != nil {
			return fmt.Errorf("%s: string interpolation is not allowed", clip(t.String()))
		}
	case gojq.TermTypeUnary:
		return term(t.Unary.Term, valueMode, s)
	case gojq.TermTypeArray, gojq.TermTypeObject:
		if !constant(t) {
			return fmt.Errorf("%s: arrays and objects may hold only constants", clip(t.String()))
		}
	}
	return nil
}

func constant(t *gojq.Term) bool {
	if len(t.SuffixList) > 0 {
		return false
	}
	switch t.Type {
	case gojq.TermTypeNull, gojq.TermTypeTrue, gojq.TermTypeFalse, gojq.TermTypeNumber:
		return true
	case gojq.TermTypeString:
		return t.Str.Queries == nil
	case gojq.TermTypeUnary:
		return constant(t.Unary.Term)
	case gojq.TermTypeArray:
		return t.Array.Query == nil || constantQuery(t.Array.Query)
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			if kv.KeyQuery != nil || strings.HasPrefix(kv.Key, "$") || kv.Val == nil ||
				(kv.KeyString != nil && kv.KeyString.Queries != nil) || !constantQuery(kv.Val) {
				return false
			}
		}
		return true
	}
	return false
}

func constantQuery(q *gojq.Query) bool {
	if len(q.FuncDefs) > 0 || len(q.Patterns) > 0 {
		return false
	}
	if q.Term != nil {
		return constant(q.Term)
	}
	return q.Op == gojq.OpComma && constantQuery(q.Left) && constantQuery(q.Right)
}

func isNumber(q *gojq.Query) bool {
	if q == nil || q.Term == nil || len(q.Term.SuffixList) > 0 {
		return false
	}
	t := q.Term
	if t.Type == gojq.TermTypeUnary {
		t = t.Unary.Term
		if len(t.SuffixList) > 0 {
			return false
		}
	}
	return t.Type == gojq.TermTypeNumber
}

// pattern checks the destructuring of `as` and returns the scope with its variables.
func pattern(p *gojq.Pattern, s *scope) (*scope, error) {
	if p.Name != "" {
		return &scope{name: p.Name, up: s}, nil
	}
	var err error
	for _, e := range p.Array {
		if s, err = pattern(e, s); err != nil {
			return nil, err
		}
	}
	for _, o := range p.Object {
		if strings.HasPrefix(o.Key, "$") {
			s = &scope{name: o.Key, up: s}
		}
		if o.KeyString != nil && o.KeyString.Queries != nil {
			return nil, fmt.Errorf("%s: string interpolation is not allowed", clip(o.KeyString.String()))
		}
		if err := query(o.KeyQuery, valueMode, s); err != nil {
			return nil, err
		}
		if o.Val != nil {
			if s, err = pattern(o.Val, s); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// clip shortens an expression quoted in a message.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
