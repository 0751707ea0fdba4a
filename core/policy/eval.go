package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Denial is one deny message of one policy.
type Denial struct {
	Policy, Source, Message string
}

// EvalError is a policy that could not be evaluated: the request is denied (fail closed).
type EvalError struct {
	Policy, Source string
	// Timeout is set when the evaluation was stopped by its deadline.
	Timeout bool
	Err     error
}

func (e EvalError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("policy %s: evaluation timed out: %v", e.Policy, e.Err)
	}
	return fmt.Sprintf("policy %s: evaluation failed: %v", e.Policy, e.Err)
}

// Decision is the outcome of evaluating the matching policies of one request.
type Decision struct {
	// Evaluated are the names of the policies evaluated.
	Evaluated []string
	Denials   []Denial
	Warnings  []Denial
	Errors    []EvalError
}

// Allowed says whether the request may proceed: no denial and no error.
func (d *Decision) Allowed() bool { return len(d.Denials) == 0 && len(d.Errors) == 0 }

// Evaluate runs the policies matching the request in input (resource group and resource,
// operation) that skip does not exclude (nil excludes none). ctx bounds each evaluation.
func (s *Set) Evaluate(ctx context.Context, in *Input, skip func(*Policy) bool) (*Decision, error) {
	res, _ := in.Doc["resource"].(map[string]any)
	group, _ := res["group"].(string)
	resource, _ := res["resource"].(string)
	op, _ := in.Doc["operation"].(string)
	return s.EvaluatePolicies(ctx, s.Matching(group, resource, op), in, skip)
}

// EvaluatePolicies runs the given policies on input.
func (s *Set) EvaluatePolicies(ctx context.Context, policies []*Policy, in *Input, skip func(*Policy) bool) (*Decision, error) {
	d := &Decision{}
	if len(policies) == 0 {
		return d, nil
	}
	value, err := in.Value()
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	for _, p := range policies {
		if skip != nil && skip(p) {
			continue
		}
		d.Evaluated = append(d.Evaluated, p.Name)
		deny, warn, err := p.eval(ctx, value)
		if err != nil {
			d.Errors = append(d.Errors, EvalError{Policy: p.Name, Source: p.Source, Timeout: isTimeout(ctx, err), Err: err})
			continue
		}
		for _, m := range deny {
			d.Denials = append(d.Denials, Denial{Policy: p.Name, Source: p.Source, Message: m})
		}
		for _, m := range warn {
			d.Warnings = append(d.Warnings, Denial{Policy: p.Name, Source: p.Source, Message: m})
		}
	}
	return d, nil
}

func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var te *topdown.Error
	return errors.As(err, &te) && te.Code == topdown.CancelErr && ctx.Err() != nil
}

// eval runs one policy; a panic in OPA or a built-in is an error, not a crash.
func (p *Policy) eval(ctx context.Context, input ast.Value) (deny, warn []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	rs, err := p.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return nil, nil, err
	}
	if len(rs) == 0 {
		return nil, nil, nil
	}
	if len(rs) > 1 {
		return nil, nil, fmt.Errorf("%d results: deny and warn must be sets", len(rs))
	}
	if deny, err = messages(rs[0].Bindings["deny"], "deny"); err != nil {
		return nil, nil, err
	}
	if warn, err = messages(rs[0].Bindings["warn"], "warn"); err != nil {
		return nil, nil, err
	}
	return deny, warn, nil
}

// maxMessages bounds what one policy can put in an answer.
const (
	maxMessages      = 50
	maxMessageLength = 2048
)

// messages reads a deny or warn set: strings as they are, other values as JSON (a policy's
// mistake shows rather than vanishes).
func messages(v any, rule string) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a set of messages, got %T", rule, v)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			b, err := json.Marshal(e)
			if err != nil {
				return nil, fmt.Errorf("%s: message %v: %w", rule, e, err)
			}
			s = string(b)
		}
		if len(s) > maxMessageLength {
			s = s[:maxMessageLength] + "…"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	if len(out) > maxMessages {
		out = append(out[:maxMessages], fmt.Sprintf("and %d more", len(out)-maxMessages))
	}
	return out, nil
}
