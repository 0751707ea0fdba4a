package jqpath

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/itchyny/gojq"
)

// deployment is an unstructured object as the agent has it: numbers are int64.
func deployment() map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "annotations": map[string]any{"a/b": "x"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "app:v1", "ports": []any{map[string]any{"containerPort": int64(80)}}},
				map[string]any{"name": "sidecar", "image": "sidecar:v1", "ports": []any{map[string]any{"containerPort": int64(9090)}}},
			}}},
		},
	}
}

func show(paths [][]any) string {
	var out []string
	for _, p := range paths {
		out = append(out, fmt.Sprint(p))
	}
	return strings.Join(out, " ")
}

func TestParseAcceptsPathExpressions(t *testing.T) {
	for expr, want := range map[string]string{
		`.spec.replicas`: `[spec replicas]`,
		`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`:                  `[spec template spec containers 1 image]`,
		`.metadata.annotations["a/b"]`:                                                            `[metadata annotations a/b]`,
		`.metadata.annotations."a/b"`:                                                             `[metadata annotations a/b]`,
		`.spec.template.spec.containers[-1].image`:                                                `[spec template spec containers 1 image]`,
		`.spec.template.spec.containers[-5].image`:                                                ``,
		`.spec | select(.replicas == 3) | .replicas`:                                              `[spec replicas]`,
		`.spec | select(.replicas | type == "number") | .replicas`:                                `[spec replicas]`,
		`.. | select(type == "string" and startswith("sidecar"))`:                                 `[spec template spec containers 1 image] [spec template spec containers 1 name]`,
		`.spec.template.spec.containers[] | select(.ports | any(.containerPort > 8000)) | .image`: `[spec template spec containers 1 image]`,
		`.spec.template.spec.containers[] | select(.name | IN("app", "web")) | .image`:            `[spec template spec containers 0 image]`,
		`.spec.template.spec.containers[] | select(.image | test("^side")) | .name`:               `[spec template spec containers 1 name]`,
		`recurse(.[]?) | objects | select(has("containerPort")) | .containerPort`:                 `[spec template spec containers 0 ports 0 containerPort] [spec template spec containers 1 ports 0 containerPort]`,
		`.spec | recurse(.template.spec.containers[]?; .name != "app") | .image?`:                 `[spec image] [spec template spec containers 1 image]`,
		`first(.spec.template.spec.containers[] | select(.name != "x")) | .image`:                 `[spec template spec containers 0 image]`,
		`limit(1; .spec.template.spec.containers[]) | .name`:                                      `[spec template spec containers 0 name]`,
		`.missing // .spec.replicas`:                                                              `[spec replicas]`,
		`if .kind == "Deployment" then .spec.replicas else empty end`:                             `[spec replicas]`,
		`try .spec.replicas[]`:                                                                    ``,
		`.metadata.name as $n | .spec.template.spec.containers[] | select(.name != $n) | .image`:  `[spec template spec containers 0 image] [spec template spec containers 1 image]`,
		`. as {metadata: {$name}} | .spec.template.spec.containers[.spec.replicas - 2].name`:      `[spec template spec containers 1 name]`,
		`.spec.template.spec.containers[] | select(.ports == [{"containerPort": 80}]) | .name`:    `[spec template spec containers 0 name]`,
		`.spec.template.spec.containers | last | .image`:                                          `[spec template spec containers 1 image]`,
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		paths, err := e.Paths(context.Background(), NewInput(deployment()), DefaultLimits())
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := show(paths); got != want {
			t.Errorf("%s: paths %s, want %s", expr, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for expr, want := range map[string]string{
		``:                                  "must not be empty",
		strings.Repeat(".a", 600):           "is 1200 bytes long, more than the 1024 allowed",
		`.spec | | .`:                       "does not parse",
		`path(repeat(.))`:                   "function path/1 is not allowed",
		`repeat(.)`:                         "repeat(.) is not allowed: it can generate values without end",
		`.a | repeat(.b)`:                   "repeat(.b) is not allowed: it can generate values without end",
		`while(true; .)`:                    "can generate values without end",
		`until(false; .)`:                   "can loop without end",
		`.items[range(1000000000)]`:         "range(1000000000) is not allowed: it can generate any number of values",
		`recurse(.)`:                        "recurse(.) is not allowed: recurse(f) ends only if f steps into the object",
		`recurse(.spec)`:                    "recurse(.spec) is not allowed",
		`recurse(.[]?, .)`:                  "is not allowed: recurse(f) ends only if",
		`recurse(if . then .[] else . end)`: "is not allowed: recurse(f) ends only if",
		`def f: f; f`:                       "defines function f: function definitions are not allowed",
		`.a | def f: .; f`:                  "function definitions are not allowed",
		`input`:                             "reads inputs other than the object",
		`inputs`:                            "reads inputs other than the object",
		`env.HOME`:                          "reads the agent's environment",
		`$ENV.HOME`:                         "variable $ENV is not defined",
		`$__loc__`:                          "variable $__loc__ is not defined",
		`error("x")`:                        "only fails the expression",
		`.spec | length`:                    "length does not select fields of the object",
		`1`:                                 "1 does not select fields of the object",
		`.a == 1`:                           "does not select fields of the object",
		`.a as $x | $x`:                     "$x does not select fields of the object",
		`.spec.containers[1:2]`:             "slices do not select fields",
		`select(.a[0:range(9)] == "")`:      "range(9) is not allowed",
		`.[select(true) | "\(.a)"]`:         "string interpolation is not allowed",
		`select(@base64 == "")`:             "formats (@base64, @json, ...) are not allowed",
		`reduce .[] as $x (.; .)`:           "reduce and foreach are not allowed",
		`label $out | .a`:                   "label and break are not allowed",
		`.a = 1`:                            "assignment (=) is not allowed",
		`.a |= 1`:                           "assignment (|=) is not allowed",
		`select(.a * 2 > 1)`:                "* is not allowed",
		`select(("x" * 1000000000) == "")`:  "* is not allowed",
		`select(.a + .b == "")`:             "arithmetic + is allowed only with a number literal on one side",
		`select([.] == [])`:                 "arrays and objects may hold only constants",
		`select({a: .} == {})`:              "arrays and objects may hold only constants",
		`select(tojson == "")`:              "function tojson/0 is not allowed (allowed: empty, select,",
		`getpath(["a"])`:                    "function getpath/1 is not allowed",
		`select(.a | contains(.b))`:         "contains(.b): the argument of contains must be a constant",
		`. as $r | .a | select(test($r.b))`: "the argument of test must be a constant",
		`try .a catch .`:                    "try ... catch does not select fields",
		`import "m" as m; .a`:               "modules (import, include) are not allowed",
	} {
		_, err := Parse(expr)
		if err == nil {
			t.Errorf("%.40s: accepted, want an error containing %q", expr, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: error %q, want it to contain %q", expr, err, want)
		}
	}
}

// unchecked compiles src as Parse does but without the static check: what the evaluator's
// own bounds must stop.
func unchecked(t *testing.T, src string) *Expr {
	t.Helper()
	q, err := gojq.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := compile(q)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// within runs f and fails unless it returns within d: the bound must stop the evaluation
// promptly also on a loaded machine.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > d {
		t.Fatalf("%s took %v, want it stopped within %v", what, took, d)
	}
}

func TestPathsStopsAtTheCapOfPaths(t *testing.T) {
	var err error
	within(t, 5*time.Second, "path(repeat(.))", func() {
		_, err = unchecked(t, "repeat(.)").Paths(context.Background(), NewInput(deployment()), DefaultLimits())
	})
	var le *LimitError
	if !errors.As(err, &le) || le.Timeout || err.Error() != "selects more than 10000 fields" {
		t.Fatalf("path(repeat(.)): error %v, want *LimitError: selects more than 10000 fields", err)
	}

	// A checked expression that selects too much on a big object.
	data := map[string]any{}
	for i := 0; i <= MaxPaths; i++ {
		data[fmt.Sprintf("k%05d", i)] = "v"
	}
	e, err := Parse(".data[]")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Paths(context.Background(), NewInput(map[string]any{"data": data}), DefaultLimits())
	if !errors.As(err, &le) || err.Error() != "selects more than 10000 fields" {
		t.Fatalf(".data[] over %d keys: error %v, want *LimitError: selects more than 10000 fields", len(data), err)
	}
	delete(data, "k00000")
	paths, err := e.Paths(context.Background(), NewInput(map[string]any{"data": data}), DefaultLimits())
	if err != nil || len(paths) != MaxPaths {
		t.Fatalf(".data[] over %d keys: %d paths, error %v; want all of them", len(data), len(paths), err)
	}
}

func TestPathsStopsAtTheCapOfSteps(t *testing.T) {
	deep := any("leaf")
	for i := 0; i < 50; i++ {
		deep = map[string]any{"a": deep}
	}
	e, err := Parse("..")
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	lim.MaxSteps = 1000 // the paths of .. here have 0+1+...+50 = 1275 steps
	_, err = e.Paths(context.Background(), NewInput(map[string]any{"x": deep}), lim)
	var le *LimitError
	if !errors.As(err, &le) || err.Error() != "selects paths of more than 1000 steps in all" {
		t.Fatalf("error %v, want *LimitError: selects paths of more than 1000 steps in all", err)
	}
}

func TestPathsStopsAtTheDeadline(t *testing.T) {
	var err error
	// Never yields a path: only the deadline stops it.
	within(t, 5*time.Second, "path(repeat(.) | select(false))", func() {
		_, err = unchecked(t, "repeat(.) | select(false)").Paths(context.Background(), NewInput(deployment()), DefaultLimits())
	})
	var le *LimitError
	if !errors.As(err, &le) || !le.Timeout || err.Error() != "did not finish within 250ms" {
		t.Fatalf("error %v, want *LimitError: did not finish within 250ms", err)
	}

	// A checked expression whose work grows with the object: each .. multiplies it.
	wide := map[string]any{}
	for i := 0; i < 2000; i++ {
		wide[fmt.Sprint(i)] = map[string]any{"a": map[string]any{"b": []any{int64(1), int64(2)}}}
	}
	e, err := Parse(".. | .. | .. | .. | .. | .. | select(false)")
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	lim.Timeout = 50 * time.Millisecond
	within(t, 5*time.Second, ".. six times", func() { _, err = e.Paths(context.Background(), NewInput(wide), lim) })
	if !errors.As(err, &le) || !le.Timeout || err.Error() != "did not finish within 50ms" {
		t.Fatalf("error %v, want *LimitError: did not finish within 50ms", err)
	}
}

func TestPathsEndsWithTheCallersContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := unchecked(t, "repeat(.) | select(false)").Paths(ctx, NewInput(deployment()), DefaultLimits())
	var le *LimitError
	if !errors.Is(err, context.Canceled) || errors.As(err, &le) {
		t.Fatalf("error %v, want context.Canceled (the caller's, not a bound)", err)
	}
}

func TestPathsReportsErrorsOfTheExpression(t *testing.T) {
	e, err := Parse(".spec.replicas[]")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Paths(context.Background(), NewInput(deployment()), DefaultLimits())
	var le *LimitError
	if err == nil || errors.As(err, &le) || !strings.Contains(err.Error(), "cannot iterate over: number (3)") {
		t.Fatalf("error %v, want gojq's: cannot iterate over: number (3)", err)
	}
}

func TestNewInputCopies(t *testing.T) {
	obj := deployment()
	in := NewInput(obj)
	obj["spec"].(map[string]any)["replicas"] = int64(5)
	e, err := Parse(".spec | select(.replicas == 3) | .replicas")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := e.Paths(context.Background(), in, DefaultLimits())
	if err != nil || !reflect.DeepEqual(paths, [][]any{{"spec", "replicas"}}) {
		t.Fatalf("paths %v, error %v; want the value NewInput saw", paths, err)
	}
}

// TestAllowedFunctionsListsLookup keeps the list users see in errors true.
func TestAllowedFunctionsListsLookup(t *testing.T) {
	listed := map[string]bool{}
	for _, name := range strings.Split(allowedFunctions, ", ") {
		listed[name] = true
		found := false
		for arity := 0; arity <= 2; arity++ {
			if _, ok := lookup(name, arity); ok {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is listed but not allowed", name)
		}
	}
	for _, name := range []string{"map", "path", "getpath", "paths", "tojson", "split", "join", "range", "repeat", "splits", "walk", "to_entries", "add"} {
		for arity := 0; arity <= 3; arity++ {
			if _, ok := lookup(name, arity); ok {
				t.Errorf("%s/%d is allowed", name, arity)
			}
		}
	}
}
