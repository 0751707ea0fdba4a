package operator

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryKlusterletField: README's list of the Klusterlet's fields is the
// operator's tables (mappings, refusals), row for row.
func TestReadmeListsEveryKlusterletField(t *testing.T) {
	want := []string{"| field | | what Flotilla does |", "|---|---|---|"}
	for _, f := range KlusterletFields() {
		acts := "refused"
		switch {
		case f.Acts:
			acts = "acts"
		case f.Blocking:
			acts = "refused (blocking)"
		}
		want = append(want, "| `"+f.Path+"` | "+acts+" | "+strings.ReplaceAll(f.Does, "|", `\|`)+" |")
	}
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const name = "klusterlet-fields"
	_, rest, ok := strings.Cut(string(data), "<!-- begin "+name+" -->\n")
	if !ok {
		t.Fatalf("README.md has no <!-- begin %s --> line", name)
	}
	block, _, ok := strings.Cut(rest, "<!-- end "+name+" -->")
	if !ok {
		t.Fatalf("README.md has no <!-- end %s --> line", name)
	}
	if strings.TrimSuffix(block, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's Klusterlet field list differs from klusterlet/operator's tables; it should read:\n%s", strings.Join(want, "\n"))
	}
}
