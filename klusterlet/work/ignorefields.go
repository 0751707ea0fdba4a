package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/jqpath"
)

// IgnoredFieldsAnnotation on an applied object records, per field a ServerSideApply manifest
// ignores OnSpokeChange, a hash of the value the work last applied there, so a later change
// by another actor is told from a change of the manifest.
const IgnoredFieldsAnnotation = "work.flotilla.dev/ignored-fields"

// ignoreFieldError is an ignoreFields selector that cannot be used on the object; reported
// as AppliedManifestSSAIgnoreFieldError.
type ignoreFieldError struct{ msg string }

func (e *ignoreFieldError) Error() string { return e.msg }

// path is one concrete field: object keys (string) and list indexes (int).
type path []any

func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch v := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			b.WriteString(".")
			b.WriteString(fmt.Sprint(v))
		}
	}
	return b.String()
}

// ignoreFieldsWorkBudget is how long one pass over a ManifestWork may spend evaluating its
// jqPathExpressions, all manifests together (each evaluation also has jqpath.Timeout); a
// work that needs more gets AppliedManifestSSAIgnoreFieldError on the manifests left.
const ignoreFieldsWorkBudget = 2 * time.Second

// jqBudget is the evaluation time left to one pass over a work, which applies its manifests
// one at a time.
type jqBudget struct{ left time.Duration }

type jqBudgetKey struct{}

// withIgnoreFieldsBudget gives a pass over a work its ignoreFieldsWorkBudget.
func withIgnoreFieldsBudget(ctx context.Context) context.Context {
	return context.WithValue(ctx, jqBudgetKey{}, &jqBudget{left: ignoreFieldsWorkBudget})
}

func budgetOf(ctx context.Context) *jqBudget {
	if b, ok := ctx.Value(jqBudgetKey{}).(*jqBudget); ok {
		return b
	}
	return &jqBudget{left: ignoreFieldsWorkBudget}
}

// quote quotes an expression in a message, shortened: one the webhook did not see may be long.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}

// resolve turns ignoreFields[i] into the concrete paths it selects in obj.
func resolve(ctx context.Context, obj map[string]any, i int, f workv1.IgnoreField) ([]path, error) {
	var out []path
	for k, p := range f.JSONPaths {
		pp, err := parseJSONPath(p)
		if err != nil {
			return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields[%d].jsonPaths[%d] %s: %v", i, k, quote(p), err)}
		}
		out = append(out, pp)
	}
	for k, p := range f.JSONPointers {
		pp, err := parseJSONPointer(obj, p)
		if err != nil {
			return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields[%d].jsonPointers[%d] %s: %v", i, k, quote(p), err)}
		}
		out = append(out, pp)
	}
	if len(f.JQPathExpressions) == 0 {
		return out, nil
	}
	in := jqpath.NewInput(obj)
	budget := budgetOf(ctx)
	for k, src := range f.JQPathExpressions {
		fail := func(err error) error {
			return &ignoreFieldError{msg: fmt.Sprintf("ignoreFields[%d].jqPathExpressions[%d] %s: %v", i, k, quote(src), err)}
		}
		// The webhook refuses what Parse refuses; a work it did not see is refused here.
		e, err := jqpath.Parse(src)
		if err != nil {
			return nil, fail(err)
		}
		if budget.left <= 0 {
			return nil, fail(fmt.Errorf("not evaluated: the work's jq path expressions took the %v they may take in all", ignoreFieldsWorkBudget))
		}
		lim := jqpath.DefaultLimits()
		lim.Timeout = min(lim.Timeout, budget.left)
		start := time.Now()
		paths, err := e.Paths(ctx, in, lim)
		budget.left -= time.Since(start)
		var le *jqpath.LimitError
		switch {
		case errors.As(err, &le) && le.Timeout && lim.Timeout < jqpath.Timeout:
			return nil, fail(fmt.Errorf("%w: the rest of the %v the work's jq path expressions may take in all", err, ignoreFieldsWorkBudget))
		case errors.As(err, &le) && le.Timeout:
			return nil, fail(fmt.Errorf("%w (the deadline of one expression)", err))
		case errors.As(err, &le):
			return nil, fail(fmt.Errorf("%w (the cap of one expression)", err))
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			return nil, fail(err)
		}
		for _, p := range paths {
			out = append(out, path(p))
		}
	}
	return out, nil
}

// parseJSONPath reads a kubectl-style path of field and index steps, e.g.
// .spec.template.spec.containers[0].image.
func parseJSONPath(s string) (path, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "{"), "}"))
	if !strings.HasPrefix(s, ".") {
		return nil, fmt.Errorf("must start with '.'")
	}
	var p path
	for _, part := range strings.Split(s[1:], ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" && rest == "" {
			return nil, fmt.Errorf("empty step")
		}
		if name != "" {
			p = append(p, name)
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("only field and index steps are supported (use jqPathExpressions for filters)")
			}
			p = append(p, n)
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("unexpected %q after an index", after)
			}
		}
	}
	return p, nil
}

// parseJSONPointer reads an RFC 6901 pointer; a numeric step is an index where obj has a list.
func parseJSONPointer(obj map[string]any, s string) (path, error) {
	if s == "" {
		return nil, fmt.Errorf("the whole object cannot be ignored")
	}
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("must start with '/'")
	}
	var p path
	var cur any = obj
	for _, tok := range strings.Split(s[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if list, ok := cur.([]any); ok {
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%q is not an index of a list", tok)
			}
			p = append(p, n)
			if n < len(list) {
				cur = list[n]
			} else {
				cur = nil
			}
			continue
		}
		p = append(p, tok)
		if m, ok := cur.(map[string]any); ok {
			cur = m[tok]
		} else {
			cur = nil
		}
	}
	return p, nil
}

func get(obj any, p path) (any, bool) {
	cur := obj
	for _, s := range p {
		switch k := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			cur = l[k]
		}
	}
	return cur, true
}

// set puts v at p in obj (deleting the field when present is false); missing maps on the way
// are created, a missing list element is not.
func set(obj map[string]any, p path, v any, present bool) {
	var cur any = obj
	for i, s := range p {
		last := i == len(p)-1
		switch k := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return
			}
			if last {
				if present {
					m[k] = v
				} else {
					delete(m, k)
				}
				return
			}
			next, ok := m[k]
			if !ok {
				if !present {
					return
				}
				next = map[string]any{}
				m[k] = next
			}
			cur = next
		case int:
			l, ok := cur.([]any)
			if !ok || k < 0 || k >= len(l) {
				return
			}
			if last {
				if present {
					l[k] = v
				}
				return
			}
			cur = l[k]
		}
	}
}

func hashValue(v any, present bool) string {
	if !present {
		return "-"
	}
	return hash.Short(hash.MustJSON(v))
}

// applyIgnoreFields rewrites required (about to be server-side applied) so that the fields the
// manifest ignores keep their live value: always once the object exists (OnSpokePresent), or
// once another actor changed them since the work applied them (OnSpokeChange). Keeping the
// live value, rather than leaving the field out, keeps this field manager's ownership, so the
// apply neither reverts nor removes it.
func applyIgnoreFields(ctx context.Context, required, existing *unstructured.Unstructured, fields []workv1.IgnoreField) error {
	recorded := map[string]string{}
	if existing != nil {
		if s := existing.GetAnnotations()[IgnoredFieldsAnnotation]; s != "" {
			_ = json.Unmarshal([]byte(s), &recorded)
		}
	}
	next := map[string]string{}
	for i, f := range fields {
		paths, err := resolve(ctx, required.Object, i, f)
		if err != nil {
			return err
		}
		for _, p := range paths {
			want, wantOK := get(required.Object, p)
			switch f.Condition {
			case workv1.IgnoreFieldsConditionOnSpokeChange:
				key := p.String()
				if existing != nil {
					live, liveOK := get(existing.Object, p)
					if rec, ok := recorded[key]; ok && rec != hashValue(live, liveOK) {
						// Changed on the managed cluster since applied: theirs from now on.
						set(required.Object, p, live, liveOK)
						next[key] = rec
						continue
					}
				}
				next[key] = hashValue(want, wantOK)
			default: // OnSpokePresent
				if existing != nil {
					live, liveOK := get(existing.Object, p)
					set(required.Object, p, live, liveOK)
				}
			}
		}
	}
	if len(next) > 0 {
		b, err := json.Marshal(next)
		if err != nil {
			return err
		}
		ann := required.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[IgnoredFieldsAnnotation] = string(b)
		required.SetAnnotations(ann)
	}
	return nil
}
