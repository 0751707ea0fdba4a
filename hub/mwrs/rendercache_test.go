package mwrs

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

func rendered(key string, manifestBytes int) *cachedRender {
	return &cachedRender{key: key, hash: "h-" + key, spec: &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
		{RawExtension: runtime.RawExtension{Raw: []byte(strings.Repeat("x", manifestBytes))}}}}}}
}

// TestRenderCacheEvictsUnderItsByteBound: the cache holds renders up to its byte bound, evicting
// the least recently used; a render larger than the bound is not kept.
func TestRenderCacheEvictsUnderItsByteBound(t *testing.T) {
	c := newRenderCache(3000)
	c.put(rendered("a", 1000))
	c.put(rendered("b", 1000))
	if c.get("a") == nil { // a is now the most recently used
		t.Fatal("render a missing before the bound is reached")
	}
	c.put(rendered("c", 1000))
	if c.bytes() > 3000 {
		t.Fatalf("cache holds %d bytes, bound 3000", c.bytes())
	}
	if c.get("b") != nil {
		t.Error("render b, the least recently used, was not evicted")
	}
	if c.get("a") == nil || c.get("c") == nil {
		t.Errorf("renders a and c evicted; %d entries left", c.len())
	}
	c.put(rendered("huge", 5000))
	if c.get("huge") != nil || c.len() != 2 {
		t.Errorf("a render over the bound was kept, or evicted others: %d entries", c.len())
	}
	c.remove("a")
	if c.get("a") != nil || c.len() != 1 {
		t.Errorf("removed render a is still served: %d entries", c.len())
	}
}

// TestFailureReason: render failures are counted by what failed.
func TestFailureReason(t *testing.T) {
	plugins := map[string]string{"o/tx": "p"}
	templates := map[string]bool{"o/expand": true}
	for _, tc := range []struct {
		f    override.RuleFailure
		want string
	}{
		{override.RuleFailure{Override: "o", Rule: "tx", Message: "transform with WasmPlugin p: trap"}, failureWasm},
		{override.RuleFailure{Override: "o", Rule: "expand", Message: `template: map has no entry for key "x"`}, failureTemplate},
		{override.RuleFailure{Override: "o", Rule: "img", Message: "image.registry: template: bad"}, failureTemplate},
		{override.RuleFailure{Override: "o", Rule: "patch", Message: "the manifest is 600000 bytes, at most 524288"}, failureSize},
		{override.RuleFailure{Override: "o", Rule: "patch", Message: "replace operation does not apply: doc is missing path"}, failureRule},
	} {
		if got := failureReason(&tc.f, plugins, templates); got != tc.want {
			t.Errorf("failureReason(%s) = %s, want %s", tc.f.Error(), got, tc.want)
		}
	}
}
