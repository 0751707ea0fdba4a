package policy

import (
	"context"
	"fmt"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// DefaultTestTimeout bounds one test rule.
const DefaultTestTimeout = 5 * time.Second

// TestResult is the outcome of one test rule.
type TestResult struct {
	// Package is the test's package, Name its rule (test_...), File "<source>/<file>".
	Package, Name, File string
	Location            string
	Pass, Skip          bool
	// Err is set when the test could not be evaluated (an error rather than false).
	Err      error
	Duration time.Duration
}

func (r TestResult) String() string {
	switch {
	case r.Skip:
		return fmt.Sprintf("SKIP %s.%s (%s)", r.Package, r.Name, r.Location)
	case r.Err != nil:
		return fmt.Sprintf("ERROR %s.%s (%s): %v", r.Package, r.Name, r.Location, r.Err)
	case r.Pass:
		return fmt.Sprintf("PASS %s.%s (%s)", r.Package, r.Name, r.Location)
	}
	return fmt.Sprintf("FAIL %s.%s (%s)", r.Package, r.Name, r.Location)
}

// Failed are the results that neither passed nor were skipped.
func Failed(results []TestResult) []TestResult {
	var out []TestResult
	for _, r := range results {
		if !r.Pass && !r.Skip {
			out = append(out, r)
		}
	}
	return out
}

func names(rs []TestResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Package + "." + r.Name
		if r.Err != nil {
			out[i] += " (" + r.Err.Error() + ")"
		}
	}
	return out
}

// Test runs the test rules (test_*) of the sources' files, compiled together, with OPA's
// tester. flotilla.authorized answers through authz, or with an error when nil, so tests mock
// it (with flotilla.authorized as f). The error is a compile error; failing tests are results.
func Test(ctx context.Context, sources []Source, authz Authorizer) ([]TestResult, error) {
	caps := capabilities()
	modules, origin, err := parse(sources, caps)
	if err != nil {
		return nil, err
	}
	results, err := runTests(ctx, modules, authz)
	if err != nil {
		return nil, compileError(err, origin)
	}
	return results, nil
}

func runTests(ctx context.Context, modules map[string]*ast.Module, authz Authorizer) ([]TestResult, error) {
	caps := capabilities()
	runner := tester.NewRunner().
		SetCompiler(newCompiler(caps)).
		AddCustomBuiltins([]*tester.Builtin{{Decl: authorizedDecl, Func: authorizedFunction(authz)}}).
		RaiseBuiltinErrors(true).
		SetTimeout(DefaultTestTimeout).
		SetModules(modules)
	ch, err := runner.RunTests(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{Package: r.Package, Name: r.Name, Pass: r.Pass(), Skip: r.Skip, Err: r.Error, Duration: r.Duration}
		if r.Location != nil {
			tr.File, tr.Location = r.Location.File, r.Location.String()
		}
		if r.Error != nil {
			tr.Pass = false
		}
		out = append(out, tr)
	}
	return out, nil
}
