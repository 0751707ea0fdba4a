// Package importrules checks the direction of imports between Flotilla's layers:
// cmd → hub, klusterlet → plugins → core → sdk, with the klusterlet importing nothing from the
// hub (and the hub nothing from the klusterlet), so that each side builds and ships alone.
// Test files are not checked: API-server suites of one side may start the other.
package importrules

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/flotilla-dev/flotilla"

// rank orders the layers: a package may import its own layer (hub and klusterlet excepted,
// see TestImportDirection) and lower ones. charts and policies are embedded data.
var rank = map[string]int{
	"sdk": 0, "charts": 0, "policies": 0,
	"core":    1,
	"plugins": 2,
	"hub":     3, "klusterlet": 3,
	"cmd": 4,
}

// exempt are packages allowed to break the rule, and why.
var exempt = map[string]string{
	// Test support for plugin authors: runs a compiled plugin in the host's Wasm engine, as
	// the hub would. Plugins never import it outside their tests.
	"sdk/sdktest/wasmrun": "core/wasm",
}

// layer is the top directory of a module path ("" outside the module).
func layer(importPath string) (string, string, bool) {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "", "", false
	}
	top, _, _ := strings.Cut(rest, "/")
	return top, rest, true
}

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	checked := 0
	for from := range rank {
		err := filepath.WalkDir(filepath.Join(root, from), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != filepath.Join(root, from) {
					return filepath.SkipDir // another module
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			pkg := filepath.ToSlash(filepath.Dir(rel))
			checked++
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				to, toPath, ok := layer(imp)
				if !ok {
					continue
				}
				if strings.HasPrefix(toPath, exempt[pkg]) && exempt[pkg] != "" {
					continue
				}
				toRank, known := rank[to]
				switch {
				case !known:
					t.Errorf("%s imports %s: %s is not a layer any product code may import", rel, imp, to)
				case toRank > rank[from]:
					t.Errorf("%s imports %s: %s may not import %s (cmd → hub, klusterlet → plugins → core → sdk)", rel, imp, from, to)
				case from != to && toRank == rank[from]:
					t.Errorf("%s imports %s: %s imports nothing from %s; move what both need to core", rel, imp, from, to)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", from, err)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is %s the module root?", checked, root)
	}
}
