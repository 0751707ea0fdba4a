package mwrs

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
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

// TestOverrideStatusFailuresByCluster: an override's status lists its first failures by
// cluster name, whatever order the placements decided the clusters in, and counts them all;
// failed clusters are neither matched nor changed.
func TestOverrideStatusFailuresByCluster(t *testing.T) {
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	o := flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "o"},
		Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "app"}},
			Rules: []flotillav1alpha1.OverrideRule{{Name: "r", Labels: &flotillav1alpha1.MetadataOverride{Set: map[string]string{"a": "b"}}}}}}
	d, err := newDesired(rs, []flotillav1alpha1.ManifestWorkReplicaSetOverride{o})
	if err != nil {
		t.Fatal(err)
	}
	d.use("ok", &cachedRender{hash: "h", matched: []string{"o"}, trace: []override.Applied{{Override: "o", Rule: "r", Manifests: 1}}})
	for i := 20; i > 0; i-- {
		c := fmt.Sprintf("c%02d", i)
		d.use(c, &cachedRender{hash: "h", matched: []string{"o"}, trace: []override.Applied{{Override: "o", Rule: "r", Manifests: 1}}})
		d.drop(c) // failed after its render (as the determinism check does)
		d.fail(&override.RuleFailure{Override: "o", Rule: "r", Cluster: c, Message: "boom"})
	}
	d.tally()
	st := overrideStatus(&o, rs, d)
	if st.ClustersFailed != 20 || st.ClustersMatched != 1 || st.ClustersChanged != 1 {
		t.Fatalf("failed/matched/changed = %d/%d/%d, want 20/1/1", st.ClustersFailed, st.ClustersMatched, st.ClustersChanged)
	}
	var got []string
	for _, f := range st.Failures {
		got = append(got, f.Cluster)
	}
	if want := "c01 c02 c03 c04 c05 c06 c07 c08 c09 c10"; strings.Join(got, " ") != want {
		t.Fatalf("failures listed for %s, want the first ten by name: %s", strings.Join(got, " "), want)
	}
}

// TestUnrecordedRevisionIsTold: a revision too large to record says so in RolledBack.
func TestUnrecordedRevisionIsTold(t *testing.T) {
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Generation: 2,
		Annotations: map[string]string{RollbackAnnotation: "true"}}}
	s := &status{rev: "r1", unrecorded: "revision r1 (template and overrides) is over 1048576 bytes: it is not recorded, so no rollback can return to it"}
	c := s.rollbackCondition(rs)
	if c == nil || !strings.Contains(c.Message, "no rollback can return to it") {
		t.Fatalf("RolledBack = %+v, want its message to say the revision cannot be rolled back to", c)
	}
}
