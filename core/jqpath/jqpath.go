// Package jqpath checks and evaluates the jq path expressions of a ManifestWork's
// serverSideApply.ignoreFields (jqPathExpressions). They are user input run by the work
// agent on every managed cluster, so both halves of the bounds live here: the hub's webhook
// and the agent refuse, with Parse, expressions that are not path expressions or can run
// without end, and the agent evaluates the rest under a deadline and caps on what they
// select (Expr.Paths).
package jqpath

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// Bounds on one expression; README.md (ServerSideApply ignoreFields) lists them.
const (
	// MaxLength caps an expression's length in bytes.
	MaxLength = 1024
	// Timeout is how long one evaluation may run.
	Timeout = 250 * time.Millisecond
	// MaxPaths caps the fields one evaluation may select.
	MaxPaths = 10000
	// MaxSteps caps the steps of all the paths one evaluation selects together
	// (.spec.replicas is 2 steps), so deep paths cannot fill memory either.
	MaxSteps = 100000
)

// Expr is a checked jq path expression, compiled as path(expr).
type Expr struct {
	code *gojq.Code
}

// Parse parses and checks src. The error says what is wrong without naming the field; the
// caller names it. Allowed are field and index steps (.a, ."a", .[0], .[-1], .[]), ..,
// pipes, commas, //, if, try, ?, `as` bindings, comparisons, and the functions listed in
// allowedFunctions (contains, inside and test with a constant argument); refused are slices, function definitions, reduce/foreach/label,
// assignments, formats, string interpolation, * and arithmetic without a number literal,
// and everything that can run without end or reads more than the object (repeat, while,
// until, range, recurse(f) whose f does not step into the object, input, env, $ENV,
// $__loc__, ...).
func Parse(src string) (*Expr, error) {
	if len(src) > MaxLength {
		return nil, fmt.Errorf("is %d bytes long, more than the %d allowed", len(src), MaxLength)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("must not be empty")
	}
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %v", err)
	}
	if err := check(q); err != nil {
		return nil, err
	}
	return compile(q)
}

// compile builds path(q) from the parsed q, never from text, so src cannot close the
// parenthesis and run outside path().
func compile(q *gojq.Query) (*Expr, error) {
	code, err := gojq.Compile(&gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc,
		Func: &gojq.Func{Name: "path", Args: []*gojq.Query{q}}}})
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	return &Expr{code: code}, nil
}

// Limits bound one evaluation.
type Limits struct {
	Timeout  time.Duration
	MaxPaths int
	MaxSteps int
}

// DefaultLimits are Timeout, MaxPaths and MaxSteps.
func DefaultLimits() Limits {
	return Limits{Timeout: Timeout, MaxPaths: MaxPaths, MaxSteps: MaxSteps}
}

// LimitError is an evaluation stopped at one of its Limits.
type LimitError struct {
	// Timeout is set when the deadline stopped it, else a cap did.
	Timeout bool
	msg     string
}

func (e *LimitError) Error() string { return e.msg }

// Input is an object as the evaluator reads it.
type Input struct{ v any }

// NewInput prepares obj (an unstructured object: int64 numbers, which gojq does not know)
// for evaluation; obj is not changed, and later changes of it are not seen.
func NewInput(obj map[string]any) Input { return Input{v: normalize(obj)} }

func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = normalize(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = normalize(x)
		}
		return l
	case int64:
		if t >= math.MinInt && t <= math.MaxInt {
			return int(t)
		}
		return float64(t)
	case int32:
		return int(t)
	case float32:
		return float64(t)
	}
	return v
}

// Paths evaluates e on in and returns the fields it selects, each a list of object keys
// (string) and list indexes (int, a negative one counted from the end of the list in in).
// It stops with a *LimitError when lim.Timeout passes or a cap is passed, and with ctx's
// error when ctx ends first.
func (e *Expr) Paths(ctx context.Context, in Input, lim Limits) (paths [][]any, err error) {
	run, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	defer func() {
		// gojq panics on values it does not know; input comes from the API server, but an
		// agent must not crash on one manifest.
		if r := recover(); r != nil {
			paths, err = nil, fmt.Errorf("evaluation failed: %v", r)
		}
	}()
	iter := e.code.RunWithContext(run, in.v)
	steps := 0
	for {
		v, ok := iter.Next()
		if !ok {
			return paths, nil
		}
		if err, isErr := v.(error); isErr {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, context.DeadlineExceeded):
				return nil, &LimitError{Timeout: true, msg: fmt.Sprintf("did not finish within %v", lim.Timeout)}
			}
			return nil, err
		}
		if len(paths) == lim.MaxPaths {
			return nil, &LimitError{msg: fmt.Sprintf("selects more than %d fields", lim.MaxPaths)}
		}
		p, ok, err := resolve(in.v, v)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if steps += len(p); steps > lim.MaxSteps {
			return nil, &LimitError{msg: fmt.Sprintf("selects paths of more than %d steps in all", lim.MaxSteps)}
		}
		paths = append(paths, p)
	}
}

// resolve turns a path from gojq into keys and non-negative indexes, reading in along the
// way to count a negative index from the end of its list; ok is false for a negative index
// before the start of the list (or of no list), which names no field.
func resolve(in any, v any) ([]any, bool, error) {
	segs, _ := v.([]any)
	out := make([]any, 0, len(segs))
	cur := in
	for _, s := range segs {
		if k, isKey := s.(string); isKey {
			m, _ := cur.(map[string]any)
			cur = m[k]
			out = append(out, k)
			continue
		}
		n, err := listIndex(s)
		if err != nil {
			return nil, false, err
		}
		l, _ := cur.([]any)
		if n < 0 {
			if n += len(l); n < 0 {
				return nil, false, nil
			}
		}
		cur = nil
		if n < len(l) {
			cur = l[n]
		}
		out = append(out, n)
	}
	return out, true, nil
}

// listIndex reads an index step: an int, or a float64 holding one.
func listIndex(s any) (int, error) {
	switch k := s.(type) {
	case int:
		return k, nil
	case float64:
		if k == math.Trunc(k) && math.Abs(k) <= math.MaxInt32 {
			return int(k), nil
		}
	}
	return 0, fmt.Errorf("unsupported path step %v", s)
}
