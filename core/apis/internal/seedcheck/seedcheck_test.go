package seedcheck

import (
	"strings"
	"testing"
)

func TestMissingLeaves(t *testing.T) {
	want := map[string]any{
		"spec": map[string]any{
			"minSuccessTime": "5m",
			"maxFailures":    "5%",
			"force":          false,
			"group":          "",
			"items":          []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
			"replicas":       int64(3),
		},
	}
	same := map[string]any{
		"spec": map[string]any{
			"minSuccessTime": "5m0s",
			"maxFailures":    "5%",
			"items":          []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
			"replicas":       int64(3),
		},
	}
	if lost := MissingLeaves("", want, same); len(lost) != 0 {
		t.Errorf("equivalent objects reported as different: %v", lost)
	}

	changed := map[string]any{
		"spec": map[string]any{
			"minSuccessTime": "6m",
			"items":          []any{map[string]any{"name": "a"}},
			"replicas":       int64(3),
			"force":          true,
		},
	}
	lost := strings.Join(MissingLeaves("", want, changed), "\n")
	for _, w := range []string{".spec.minSuccessTime (5m, got 6m)", ".spec.maxFailures (5%, got <nil>)", ".spec.items[1].name", ".spec.force (false, got true)"} {
		if !strings.Contains(lost, w) {
			t.Errorf("differences %q do not mention %q", lost, w)
		}
	}
}

func TestMissingLeavesExact(t *testing.T) {
	want := map[string]any{"spec": map[string]any{"minSuccessTime": "5m", "force": false, "name": "a"}}
	got := map[string]any{"spec": map[string]any{"minSuccessTime": "5m0s", "name": "a"}}
	lost := strings.Join(missingLeaves("", want, got, true), "\n")
	for _, w := range []string{".spec.minSuccessTime (5m, got 5m0s)", ".spec.force (false, got <nil>)"} {
		if !strings.Contains(lost, w) {
			t.Errorf("differences %q do not mention %q", lost, w)
		}
	}
	if strings.Contains(lost, ".spec.name") {
		t.Errorf("equal leaf reported: %q", lost)
	}
}
