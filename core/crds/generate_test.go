package crds_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The generated files are committed (CRDs are embedded, deepcopy functions compiled), so
// a type change without `make generate` would silently ship stale schemas. This test
// regenerates everything into a temporary directory with the pinned bin/controller-gen,
// exactly as the Makefile's generate target does, and compares byte for byte.

const deepcopyFile = "zz_generated.deepcopy.go"

func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	gen := controllerGen(t, root)
	tmp := t.TempDir()

	t.Run("CRD manifests in core/crds/bases", func(t *testing.T) {
		out := filepath.Join(tmp, "crds")
		run(t, root, gen, "crd", "paths=./core/apis/...", "output:crd:artifacts:config="+out)
		compareDirs(t, filepath.Join(root, "core", "crds", "bases"), out, "*.yaml")
	})

	t.Run("deepcopy functions in core/apis", func(t *testing.T) {
		pkgs := goPackageDirs(t, filepath.Join(root, "core", "apis"))
		if len(pkgs) == 0 {
			t.Fatal("no Go packages under core/apis")
		}
		// One controller-gen run per package: with a single run, every package's
		// output would land in the same override directory under the same name.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		errs := make([]error, len(pkgs))
		for i, rel := range pkgs {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				out := filepath.Join(tmp, "deepcopy", rel)
				errs[i] = runErr(root, gen,
					"object:headerFile=hack/boilerplate.go.txt",
					"paths=./"+filepath.ToSlash(filepath.Join("core", "apis", rel)),
					"output:object:artifacts:config="+out+",code="+out)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for _, rel := range pkgs {
			want := filepath.Join(tmp, "deepcopy", rel, deepcopyFile)
			got := filepath.Join(root, "core", "apis", rel, deepcopyFile)
			compareFile(t, got, want)
		}
	})
}

// repoRoot walks up from the package directory to the module root.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && firstLine(b) == "module github.com/flotilla-dev/flotilla" {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod for module github.com/flotilla-dev/flotilla above the test directory")
		}
		dir = parent
	}
}

func firstLine(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "//") {
			return line
		}
	}
	return ""
}

// controllerGen finds the pinned controller-gen the Makefile builds.
func controllerGen(t *testing.T, root string) string {
	t.Helper()
	dir := os.Getenv("FLOTILLA_BIN_DIR")
	if dir == "" {
		dir = filepath.Join(root, "bin")
	}
	p := filepath.Join(dir, "controller-gen")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run make test (it builds bin/controller-gen)", p)
	}
	return p
}

func run(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	if err := runErr(dir, bin, args...); err != nil {
		t.Fatal(err)
	}
}

func runErr(dir, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("controller-gen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// goPackageDirs lists the directories under base (relative to it, base itself as ".")
// holding non-test, non-generated Go files.
func goPackageDirs(t *testing.T, base string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != base && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		name := d.Name()
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == deepcopyFile {
			return nil
		}
		rel, err := filepath.Rel(base, filepath.Dir(p))
		if err != nil {
			return err
		}
		seen[rel] = true
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", base, err)
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}

// compareDirs checks that the files matching pattern in committed and generated are the
// same set with the same bytes.
func compareDirs(t *testing.T, committed, generated, pattern string) {
	t.Helper()
	names := func(dir string) []string {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, 0, len(matches))
		for _, m := range matches {
			out = append(out, filepath.Base(m))
		}
		return out
	}
	have, want := names(committed), names(generated)
	for _, n := range have {
		if !slices.Contains(want, n) {
			t.Errorf("%s is not generated from core/apis any more: delete it, then run make generate", filepath.Join(committed, n))
		}
	}
	for _, n := range want {
		compareFile(t, filepath.Join(committed, n), filepath.Join(generated, n))
	}
}

// compareFile checks that the committed file equals the generated one (both absent is
// equal: the package needs no generated code).
func compareFile(t *testing.T, committed, generated string) {
	t.Helper()
	got, gotErr := os.ReadFile(committed)
	want, wantErr := os.ReadFile(generated)
	switch {
	case errors.Is(gotErr, os.ErrNotExist) && errors.Is(wantErr, os.ErrNotExist):
	case errors.Is(wantErr, os.ErrNotExist):
		t.Errorf("%s exists but controller-gen generates nothing there: delete it, then run make generate", committed)
	case wantErr != nil:
		t.Errorf("reading generated %s: %v", generated, wantErr)
	case errors.Is(gotErr, os.ErrNotExist):
		t.Errorf("%s is missing: run make generate", committed)
	case gotErr != nil:
		t.Errorf("reading %s: %v", committed, gotErr)
	case !bytes.Equal(got, want):
		t.Errorf("%s is stale: run make generate\n%s", committed, firstDifference(got, want))
	}
}

// firstDifference describes the first line where the committed and generated text differ.
func firstDifference(got, want []byte) string {
	g := strings.Split(string(got), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("first difference at line %d:\n  committed: %q\n  generated: %q", i+1, gl, wl)
		}
	}
	return "files differ"
}
