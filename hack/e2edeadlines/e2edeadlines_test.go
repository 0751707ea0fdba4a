// Package e2edeadlines checks that every node of the Ginkgo e2e suites that can block has
// its own deadline: a spec, setup or cleanup that hangs then fails naming itself instead of
// running into go test's -timeout, which kills the whole package without saying which spec
// waited for what.
package e2edeadlines

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// needs maps a Ginkgo node taking a function literal to the decorator that bounds it.
var needs = map[string]string{
	"It": "SpecTimeout", "FIt": "SpecTimeout", "PIt": "SpecTimeout", "Specify": "SpecTimeout",
	// A table's entries carry the spec decorators (Ginkgo refuses them on DescribeTable).
	"Entry": "SpecTimeout", "FEntry": "SpecTimeout",
	"BeforeSuite": "NodeTimeout", "AfterSuite": "NodeTimeout",
	"BeforeAll": "NodeTimeout", "AfterAll": "NodeTimeout",
	"BeforeEach": "NodeTimeout", "AfterEach": "NodeTimeout",
	"DeferCleanup": "NodeTimeout",
}

func TestE2ENodesHaveDeadlines(t *testing.T) {
	root, err := filepath.Abs("../../e2e")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || needs[id.Name] == "" || (!strings.HasSuffix(id.Name, "Entry") && !hasFuncLit(call)) {
				return true
			}
			checked++
			if !hasDecorator(call, needs[id.Name]) {
				rel, _ := filepath.Rel(filepath.Dir(root), path)
				t.Errorf("%s:%d: %s has no %s: if it blocks, it hangs until go test's -timeout",
					rel, fset.Position(call.Pos()).Line, id.Name, needs[id.Name])
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("no Ginkgo nodes found under %s: the check checks nothing", root)
	}
}

// hasFuncLit says whether the node runs a function literal (a DeferCleanup of a method value,
// such as a cancel func, is not checked: a NodeTimeout needs a function taking a context).
func hasFuncLit(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if _, ok := a.(*ast.FuncLit); ok {
			return true
		}
	}
	return false
}

func hasDecorator(call *ast.CallExpr, name string) bool {
	for _, a := range call.Args {
		if c, ok := a.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == name {
				return true
			}
		}
	}
	return false
}
