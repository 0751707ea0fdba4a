package operator

import (
	"os"
	"strings"
	"testing"
)

// readmeBlock returns the lines of README.md between the marker comments <!-- begin name -->
// and <!-- end name -->.
func readmeBlock(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- begin "+name+" -->\n")
	if !ok {
		t.Fatalf("README.md has no <!-- begin %s --> line", name)
	}
	block, _, ok := strings.Cut(rest, "<!-- end "+name+" -->")
	if !ok {
		t.Fatalf("README.md has no <!-- end %s --> line", name)
	}
	return strings.Split(strings.TrimSuffix(block, "\n"), "\n")
}

// TestReadmeListsEveryClusterManagerField: README's list of the ClusterManager's fields is
// the operator's table (clusterManagerFields), row for row.
func TestReadmeListsEveryClusterManagerField(t *testing.T) {
	want := []string{"| field | | what Flotilla does |", "|---|---|---|"}
	for _, f := range ClusterManagerFields() {
		acts := "refused"
		if f.Acts {
			acts = "acts"
		}
		want = append(want, "| `"+f.Path+"` | "+acts+" | "+strings.ReplaceAll(f.Does, "|", `\|`)+" |")
	}
	got := readmeBlock(t, "clustermanager-fields")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's ClusterManager field list differs from hub/operator's table; it should read:\n%s", strings.Join(want, "\n"))
	}
}
