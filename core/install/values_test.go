package install_test

import (
	"testing"

	"github.com/flotilla-dev/flotilla/core/install"
)

// Written by helper A to replace a values_test.go it overwrote by mistake; the lead's original
// may have covered more.
func TestMergeValues(t *testing.T) {
	base := map[string]any{
		"replicas": 1,
		"image":    map[string]any{"registry": "ghcr.io/flotilla-dev", "tag": ""},
		"flags":    map[string]any{"autoapprove-users": []any{"a"}, "v": 0},
	}
	over := map[string]any{
		"image": map[string]any{"tag": "v1"},
		"flags": map[string]any{"autoapprove-users": []any{"b", "c"}},
		"new":   map[string]any{"k": "v"},
	}
	got := install.MergeValues(base, over)
	equalJSON(t, "merged", got, map[string]any{
		"replicas": 1,
		"image":    map[string]any{"registry": "ghcr.io/flotilla-dev", "tag": "v1"},
		"flags":    map[string]any{"autoapprove-users": []any{"b", "c"}, "v": 0},
		"new":      map[string]any{"k": "v"},
	})
	// Neither argument is modified.
	equalJSON(t, "base", base, map[string]any{
		"replicas": 1,
		"image":    map[string]any{"registry": "ghcr.io/flotilla-dev", "tag": ""},
		"flags":    map[string]any{"autoapprove-users": []any{"a"}, "v": 0},
	})
	got["new"].(map[string]any)["k"] = "changed"
	if over["new"].(map[string]any)["k"] != "v" {
		t.Error("the result shares a map with over")
	}
}
