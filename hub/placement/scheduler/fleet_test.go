package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

func fleetCluster(name, set, version string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}},
		Status: clusterv1.ManagedClusterStatus{Version: clusterv1.ManagedClusterVersion{Kubernetes: version}}}
}

func fleetScore(cluster string, v int32) *clusterv1alpha1.AddOnPlacementScore {
	return &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "s"},
		Status: clusterv1alpha1.AddOnPlacementScoreStatus{Scores: []clusterv1alpha1.AddOnPlacementScoreItem{{Name: "v", Value: v}}}}
}

func memberNames(s *Snapshot, set string) []string {
	var out []string
	for _, c := range s.Members(set) {
		out = append(out, c.Name)
	}
	return out
}

// TestFleetSnapshotIncremental: a status change replaces one object without matching the
// sets again, a relabelling moves the cluster between sets, and a snapshot handed out never
// changes afterwards.
func TestFleetSnapshotIncremental(t *testing.T) {
	f := NewFleet(nil)
	for _, set := range []string{"a", "b"} {
		f.SetSet(set, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}})
	}
	f.SetBinding(testNS, "a", &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "a"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "a"}})
	f.SetCluster(fleetCluster("c1", "a", "v1"))
	f.SetCluster(fleetCluster("c2", "a", "v1"))
	f.SetScore("c1", "s", fleetScore("c1", 10))
	s1 := f.Snapshot(t0)
	if got := memberNames(s1, "a"); len(got) != 2 {
		t.Fatalf("set a: members %v, want c1 and c2", got)
	}
	if f.rebuilds != 1 {
		t.Fatalf("first snapshot: %d rebuilds, want 1", f.rebuilds)
	}

	// Status and score changes: no rebuild, the old snapshot keeps what it had.
	f.SetCluster(fleetCluster("c1", "a", "v2"))
	f.SetScore("c1", "s", fleetScore("c1", 20))
	s2 := f.Snapshot(t0)
	if f.rebuilds != 1 {
		t.Errorf("a status change rebuilt the membership (%d rebuilds)", f.rebuilds)
	}
	if c, _ := s2.Cluster("c1"); c.Status.Version.Kubernetes != "v2" {
		t.Errorf("new snapshot: c1 version %q, want v2", c.Status.Version.Kubernetes)
	}
	if c, _ := s1.Cluster("c1"); c.Status.Version.Kubernetes != "v1" {
		t.Errorf("old snapshot changed: c1 version %q, want v1", c.Status.Version.Kubernetes)
	}
	if v, _ := s2.AddOnScore("c1", "s", "v"); v != 20 {
		t.Errorf("new snapshot: score %d, want 20", v)
	}
	if v, _ := s1.AddOnScore("c1", "s", "v"); v != 10 {
		t.Errorf("old snapshot changed: score %d, want 10", v)
	}

	// Relabelled into b: membership is matched again.
	f.SetCluster(fleetCluster("c2", "b", "v1"))
	s3 := f.Snapshot(t0)
	if got := memberNames(s3, "b"); len(got) != 1 || got[0] != "c2" {
		t.Errorf("set b after the relabelling: %v, want [c2]", got)
	}
	if got := memberNames(s2, "a"); len(got) != 2 {
		t.Errorf("old snapshot's set a changed: %v", got)
	}

	// Deleted: gone from the next snapshot, its bindings and scores too.
	f.DeleteCluster("c1")
	f.SetScore("c1", "s", nil)
	f.SetBinding(testNS, "a", nil)
	s4 := f.Snapshot(t0)
	if _, ok := s4.Cluster("c1"); ok {
		t.Error("c1 is still in the snapshot after its deletion")
	}
	if _, ok := s4.AddOnScore("c1", "s", "v"); ok {
		t.Error("c1's score is still in the snapshot after its deletion")
	}
	if len(s4.Bindings[testNS]) != 0 || len(s3.Bindings[testNS]) != 1 {
		t.Errorf("bindings: new %v (want none), old %v (want a)", s4.Bindings[testNS], s3.Bindings[testNS])
	}
}

// TestReads: what a placement reads besides labels, claims, taints and deletion.
func TestReads(t *testing.T) {
	sch := &Scheduler{Native: map[string]Prioritizer{
		clusterv1beta1.PrioritizerBalance: nativeBalance(), clusterv1beta1.PrioritizerSteady: nativeSteady(),
		clusterv1beta1.PrioritizerResourceAllocatableCPU: nativeBalance(),
	}}
	addOn := func(res, score string) clusterv1beta1.PrioritizerConfig {
		return clusterv1beta1.PrioritizerConfig{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeAddOn, AddOn: &clusterv1beta1.AddOnScore{ResourceName: res, ScoreName: score}}}
	}
	builtIn := func(name string) clusterv1beta1.PrioritizerConfig {
		return clusterv1beta1.PrioritizerConfig{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: name}}
	}
	cel := func(expr string) []clusterv1beta1.ClusterPredicate {
		return []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: []string{expr}}}}}
	}
	for name, tc := range map[string]struct {
		spec                          clusterv1beta1.PlacementSpec
		object, resources, readsScore bool
		otherScore                    bool
	}{
		"default (Balance, Steady)": {},
		"AddOn score": {spec: clusterv1beta1.PlacementSpec{PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{
			Configurations: []clusterv1beta1.PrioritizerConfig{addOn("res", "score")}}}, readsScore: true},
		"ResourceAllocatableCPU": {spec: clusterv1beta1.PlacementSpec{PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{
			Configurations: []clusterv1beta1.PrioritizerConfig{builtIn(clusterv1beta1.PrioritizerResourceAllocatableCPU)}}}, resources: true},
		"CEL without scores": {spec: clusterv1beta1.PlacementSpec{Predicates: cel(`managedCluster.status.version.kubernetes == "v1"`)}, object: true},
		"CEL with scores": {spec: clusterv1beta1.PlacementSpec{Predicates: cel(`managedCluster.scores("res").exists(s, s.value > 1)`)},
			object: true, readsScore: true, otherScore: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := sch.Reads(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "p"}, Spec: tc.spec})
			if r.Object != tc.object || r.Resources != tc.resources || r.ReadsScore("res", "score") != tc.readsScore ||
				r.ReadsScore("other", "x") != tc.otherScore {
				t.Errorf("Reads = %+v; want object %v, resources %v, res/score %v, other/x %v", r, tc.object, tc.resources, tc.readsScore, tc.otherScore)
			}
		})
	}
}
