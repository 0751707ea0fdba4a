package apply_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Status writes go one way: Guarded (a status computed whole, guarded by the resourceVersion
// it was computed from) or Condition (one condition of a list keyed by type). A raw status
// update or patch elsewhere would bring back the unguarded writes issue 21 removed.
func TestStatusWritesGoThroughApply(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	raw := regexp.MustCompile(`\.Status\(\)\.(Update|Patch)\(`)
	var found []string
	for _, dir := range []string{"core", "hub", "klusterlet", "cmd", "plugins"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			if filepath.Dir(path) == filepath.Join(root, "core", "apply") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if raw.MatchString(line) {
					rel, _ := filepath.Rel(root, path)
					found = append(found, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("status written around core/apply (use apply.Guarded or apply.Condition):\n%s", strings.Join(found, "\n"))
	}
}
