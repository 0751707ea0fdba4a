package override

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// Limits of one template: its source, its parse tree and what it may write. Without loops
// or calls between templates, execution is linear in the tree, so these bound its work.
const (
	MaxTemplateSource = 4 << 10
	MaxTemplateNodes  = 256
	MaxTemplateOutput = 16 << 10
)

// builtins are text/template's functions a template may call; printf and friends are left
// out because a width such as %*d allocates before any writer can cap it, call and slice
// because they reach code or memory the template does not describe, html/js/urlquery
// because nothing here is HTML.
var builtins = map[string]bool{
	"index": true, "len": true, "eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"and": true, "or": true, "not": true,
}

// funcs are the functions Flotilla adds. Each bounds its output by its inputs (replace is
// checked against MaxTemplateOutput before it allocates).
var funcs = template.FuncMap{
	"default": func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	},
	"required": func(msg string, v any) (any, error) {
		if v == nil || v == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	},
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
	"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
	"replace": func(old, new, s string) (string, error) {
		if old == "" {
			return "", errors.New("replace: empty old string")
		}
		if n := strings.Count(s, old); len(s)+n*(len(new)-len(old)) > MaxTemplateOutput {
			return "", fmt.Errorf("replace: result over %d bytes", MaxTemplateOutput)
		}
		return strings.ReplaceAll(s, old, new), nil
	},
	"atoi": func(v any) (int64, error) { return toInt(v) },
	"toString": func(v any) string {
		return fmt.Sprint(v)
	},
	"add": func(a, b any) (int64, error) { return arith(a, b, '+') },
	"sub": func(a, b any) (int64, error) { return arith(a, b, '-') },
	"mul": func(a, b any) (int64, error) { return arith(a, b, '*') },
	"div": func(a, b any) (int64, error) { return arith(a, b, '/') },
	"min": func(a, b any) (int64, error) { return arith(a, b, 'm') },
	"max": func(a, b any) (int64, error) { return arith(a, b, 'M') },
}

// toInt reads an integer from a template value (numbers, and strings such as label values).
func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", x)
		}
		return n, nil
	default:
		return 0, fmt.Errorf("%v (%T) is not an integer", v, v)
	}
}

// arith is int64 arithmetic that refuses overflow and division by zero.
func arith(av, bv any, op rune) (int64, error) {
	a, err := toInt(av)
	if err != nil {
		return 0, err
	}
	b, err := toInt(bv)
	if err != nil {
		return 0, err
	}
	overflow := fmt.Errorf("integer overflow: %d %c %d", a, op, b)
	switch op {
	case '+':
		if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
			return 0, overflow
		}
		return a + b, nil
	case '-':
		if (b < 0 && a > math.MaxInt64+b) || (b > 0 && a < math.MinInt64+b) {
			return 0, overflow
		}
		return a - b, nil
	case '*':
		if a == 0 || b == 0 {
			return 0, nil
		}
		r := a * b
		if r/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return 0, overflow
		}
		return r, nil
	case '/':
		if b == 0 {
			return 0, fmt.Errorf("division by zero: %d / 0", a)
		}
		if a == math.MinInt64 && b == -1 {
			return 0, overflow
		}
		return a / b, nil
	case 'm':
		return min(a, b), nil
	default:
		return max(a, b), nil
	}
}

// tmpl is a parsed, restricted template; nil for a string without "{{" (a literal).
type tmpl struct {
	t   *template.Template
	lit string
}

// parseTemplate parses src and refuses what the restricted grammar does not admit.
func parseTemplate(src string) (*tmpl, error) {
	if !strings.Contains(src, "{{") {
		return &tmpl{lit: src}, nil
	}
	if len(src) > MaxTemplateSource {
		return nil, fmt.Errorf("template: %d bytes, at most %d", len(src), MaxTemplateSource)
	}
	fm := template.FuncMap{}
	for k, v := range funcs {
		fm[k] = v
	}
	t, err := template.New("t").Option("missingkey=error").Funcs(fm).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if len(t.Templates()) > 1 {
		return nil, errors.New("template: define and block are not allowed")
	}
	n := 0
	if err := admit(t.Tree.Root, &n); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return &tmpl{t: t}, nil
}

// admit walks the parse tree and refuses loops, calls between templates and functions
// outside builtins and funcs; n counts nodes.
func admit(node parse.Node, n *int) error {
	if node == nil {
		return nil
	}
	if *n++; *n > MaxTemplateNodes {
		return fmt.Errorf("more than %d nodes", MaxTemplateNodes)
	}
	switch x := node.(type) {
	case *parse.ListNode:
		if x == nil {
			return nil
		}
		for _, c := range x.Nodes {
			if err := admit(c, n); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return admit(x.Pipe, n)
	case *parse.PipeNode:
		if x == nil {
			return nil
		}
		for _, c := range x.Cmds {
			if err := admit(c, n); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		for _, a := range x.Args {
			if err := admit(a, n); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return admit(x.Node, n)
	case *parse.IdentifierNode:
		if _, ok := funcs[x.Ident]; !ok && !builtins[x.Ident] {
			return fmt.Errorf("function %q is not allowed", x.Ident)
		}
	case *parse.IfNode:
		return admitBranch(&x.BranchNode, n)
	case *parse.WithNode:
		return admitBranch(&x.BranchNode, n)
	case *parse.RangeNode:
		return errors.New("range is not allowed")
	case *parse.TemplateNode:
		return fmt.Errorf("template %q is not allowed", x.Name)
	case *parse.BreakNode, *parse.ContinueNode:
		return errors.New("break and continue are not allowed")
	case *parse.TextNode, *parse.FieldNode, *parse.VariableNode, *parse.DotNode, *parse.NilNode,
		*parse.BoolNode, *parse.NumberNode, *parse.StringNode, *parse.CommentNode:
	default:
		return fmt.Errorf("%T is not allowed", node)
	}
	return nil
}

func admitBranch(b *parse.BranchNode, n *int) error {
	for _, c := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if l, ok := c.(*parse.ListNode); ok && l == nil {
			continue
		}
		if err := admit(c, n); err != nil {
			return err
		}
	}
	return nil
}

// cappedWriter fails once more than MaxTemplateOutput bytes were written.
type cappedWriter struct{ bytes.Buffer }

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > MaxTemplateOutput {
		return 0, fmt.Errorf("output over %d bytes", MaxTemplateOutput)
	}
	return w.Buffer.Write(p)
}

// execute renders the template with data.
func (t *tmpl) execute(data map[string]any) (string, error) {
	if t.t == nil {
		return t.lit, nil
	}
	var w cappedWriter
	if err := t.t.Execute(&w, data); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	return w.String(), nil
}
