package work

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
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

// resolve turns one ignoreFields entry into the concrete paths it selects in obj.
func resolve(obj map[string]any, f workv1.IgnoreField) ([]path, error) {
	var out []path
	for _, p := range f.JSONPaths {
		pp, err := parseJSONPath(p)
		if err != nil {
			return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields jsonPaths %q: %v", p, err)}
		}
		out = append(out, pp)
	}
	for _, p := range f.JSONPointers {
		pp, err := parseJSONPointer(obj, p)
		if err != nil {
			return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields jsonPointers %q: %v", p, err)}
		}
		out = append(out, pp)
	}
	for _, expr := range f.JQPathExpressions {
		q, err := gojq.Parse("path(" + expr + ")")
		if err != nil {
			return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields jqPathExpressions %q: %v", expr, err)}
		}
		iter := q.Run(any(obj))
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := v.(error); isErr {
				return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields jqPathExpressions %q: %v", expr, err)}
			}
			segs, _ := v.([]any)
			var pp path
			for _, s := range segs {
				switch t := s.(type) {
				case string:
					pp = append(pp, t)
				case int:
					pp = append(pp, t)
				case float64:
					pp = append(pp, int(t))
				default:
					return nil, &ignoreFieldError{msg: fmt.Sprintf("ignoreFields jqPathExpressions %q: unsupported path step %v", expr, s)}
				}
			}
			out = append(out, pp)
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
			if !ok || k >= len(l) {
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
			if !ok || k >= len(l) {
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
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// applyIgnoreFields rewrites required (about to be server-side applied) so that the fields the
// manifest ignores keep their live value: always once the object exists (OnSpokePresent), or
// once another actor changed them since the work applied them (OnSpokeChange). Keeping the
// live value, rather than leaving the field out, keeps this field manager's ownership, so the
// apply neither reverts nor removes it.
func applyIgnoreFields(required, existing *unstructured.Unstructured, fields []workv1.IgnoreField) error {
	recorded := map[string]string{}
	if existing != nil {
		if s := existing.GetAnnotations()[IgnoredFieldsAnnotation]; s != "" {
			_ = json.Unmarshal([]byte(s), &recorded)
		}
	}
	next := map[string]string{}
	for _, f := range fields {
		paths, err := resolve(required.Object, f)
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
