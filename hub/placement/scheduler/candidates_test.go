package scheduler

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

func TestCandidates(t *testing.T) {
	clusters := []*clusterv1.ManagedCluster{
		mc("a2", inSet("a")),
		mc("a1", inSet("a"), withLabels("env", "prod")),
		mc("b1", inSet("b"), withLabels("env", "prod")),
		mc("c1", inSet("c"), terminating()),
		mc("x1"),
	}
	sets := []*clusterv1beta2.ManagedClusterSet{
		exclusiveSet("a"), exclusiveSet("b"), exclusiveSet("c"), exclusiveSet("empty"),
		labelSet("prod", &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}),
		labelSet("broken", nil), // LabelSelector type without a selector: no members
		globalSet(),
	}
	bind := func(sets ...string) []*clusterv1beta2.ManagedClusterSetBinding {
		var out []*clusterv1beta2.ManagedClusterSetBinding
		for _, s := range sets {
			out = append(out, binding(testNS, s))
		}
		return out
	}
	const (
		noBindings = clusterv1beta1.PlacementReasonNoManagedClusterSetBindings
		noInter    = clusterv1beta1.PlacementReasonNoIntersection
		allEmpty   = clusterv1beta1.PlacementReasonAllManagedClusterSetsEmpty
	)
	cases := []struct {
		name     string
		bindings []*clusterv1beta2.ManagedClusterSetBinding
		p        *clusterv1beta1.Placement
		want     expect
	}{
		{name: "no bindings", p: placement(),
			want: expect{reason: noBindings, message: "No valid ManagedClusterSetBindings found in placement namespace"}},
		{name: "bindings in another namespace only", bindings: []*clusterv1beta2.ManagedClusterSetBinding{binding("other", "a")}, p: placement(),
			want: expect{reason: noBindings}},
		{name: "spec.clusterSets not bound", bindings: bind("a"), p: placement(clusterSets("b", "zzz")),
			want: expect{reason: noInter, message: "None of ManagedClusterSets [b,zzz] is bound"}},
		{name: "bound set without members", bindings: bind("empty"), p: placement(),
			want: expect{reason: allEmpty, message: "All ManagedClusterSets [empty] have no member ManagedCluster"}},
		{name: "bound sets", bindings: bind("a", "b"), p: placement(),
			want: scheduled("a1", "a2", "b1")},
		{name: "spec.clusterSets restricts", bindings: bind("a", "b"), p: placement(clusterSets("b")),
			want: scheduled("b1")},
		{name: "spec.clusterSets naming bound and unbound sets", bindings: bind("a"), p: placement(clusterSets("a", "b")),
			want: scheduled("a1", "a2")},
		{name: "LabelSelector set", bindings: bind("prod"), p: placement(),
			want: scheduled("a1", "b1")},
		{name: "LabelSelector set without a selector", bindings: bind("broken"), p: placement(),
			want: expect{reason: allEmpty}},
		{name: "global set: every cluster but the terminating one", bindings: bind("global"), p: placement(),
			want: scheduled("a1", "a2", "b1", "x1")},
		{name: "overlapping sets select each cluster once", bindings: bind("a", "prod", "global"), p: placement(),
			want: scheduled("a1", "a2", "b1", "x1")},
		{name: "only member terminating", bindings: bind("c"), p: placement(),
			want: expect{reason: allEmpty, message: "[c]"}},
		{name: "binding to a missing set beside a valid one", bindings: bind("ghost", "a"), p: placement(),
			want: scheduled("a1", "a2")},
		// OCM counts only bindings whose set exists: with none, the reason is
		// NoManagedClusterSetBindings whether or not spec.clusterSets is set.
		{name: "binding to a missing set only", bindings: bind("ghost"), p: placement(),
			want: expect{reason: noBindings}},
		{name: "binding to a missing set named in spec.clusterSets", bindings: bind("ghost"), p: placement(clusterSets("ghost")),
			want: expect{reason: noBindings}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := SnapshotInput{Now: t0, Clusters: clusters, Sets: sets, Bindings: tc.bindings}
			res := schedule(t, newTestScheduler(nil), in, tc.p)
			tc.want.check(t, res)
			if !tc.want.satisfied && (len(res.Groups) != 1 || len(res.Groups[0].Clusters) != 0) {
				t.Errorf("unsatisfied placement groups = %v, want one empty group 0", res.Groups)
			}
		})
	}
}

func TestSnapshot(t *testing.T) {
	future, past := t0.Add(time.Hour), t0.Add(-time.Second)
	snap := NewSnapshot(SnapshotInput{
		Now:      t0,
		Clusters: []*clusterv1.ManagedCluster{mc("c3", inSet("s")), mc("c1", inSet("s")), mc("c2")},
		Sets:     []*clusterv1beta2.ManagedClusterSet{exclusiveSet("s"), {ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: "Bogus"}}}},
		Scores: []*clusterv1alpha1.AddOnPlacementScore{
			addonScore("c1", "default", nil, "cpu", 66, "mem", -5),
			addonScore("c2", "default", &future, "cpu", 10),
			addonScore("c3", "default", &past, "cpu", 99),
			addonScore("c3", "edge", &t0, "cpu", 42), // valid until now: expired
		},
		Decisions: map[string][]string{
			testKey:    {"c1"},
			"ns/other": {"c1", "c2"},
			"x/third":  {"c1"},
		},
	})
	if got := names(snap.Clusters); !reflect.DeepEqual(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("Clusters = %v, want sorted by name", got)
	}
	if got := names(snap.Members("s")); !reflect.DeepEqual(got, []string{"c1", "c3"}) {
		t.Errorf("Members(s) = %v", got)
	}
	if got := snap.Members("bad"); len(got) != 0 {
		t.Errorf("Members of a set with an unknown selector type = %v, want none", names(got))
	}
	if c, ok := snap.Cluster("c2"); !ok || c.Name != "c2" {
		t.Errorf("Cluster(c2) = %v, %v", c, ok)
	}
	if _, ok := snap.Cluster("nope"); ok {
		t.Errorf("Cluster(nope) found")
	}
	scoreCases := []struct {
		cluster, resource, score string
		want                     int64
		ok                       bool
	}{
		{"c1", "default", "cpu", 66, true},
		{"c1", "default", "mem", -5, true},
		{"c1", "default", "gpu", 0, false},
		{"c1", "missing", "cpu", 0, false},
		{"c2", "default", "cpu", 10, true},
		{"c3", "default", "cpu", 0, false},
		{"c3", "edge", "cpu", 0, false},
		{"nope", "default", "cpu", 0, false},
	}
	for _, sc := range scoreCases {
		if got, ok := snap.AddOnScore(sc.cluster, sc.resource, sc.score); got != sc.want || ok != sc.ok {
			t.Errorf("AddOnScore(%s, %s, %s) = %d, %v; want %d, %v", sc.cluster, sc.resource, sc.score, got, ok, sc.want, sc.ok)
		}
	}
	countCases := []struct {
		cluster, key string
		want         int64
		selected     bool
	}{
		{"c1", testKey, 2, true},
		{"c1", "ns/other", 2, true},
		{"c1", "ns/nobody", 3, false},
		{"c2", testKey, 1, false},
		{"c3", testKey, 0, false},
	}
	for _, cc := range countCases {
		if got := snap.DecisionCount(cc.cluster, cc.key); got != cc.want {
			t.Errorf("DecisionCount(%s, %s) = %d, want %d", cc.cluster, cc.key, got, cc.want)
		}
		if got := snap.Selected(cc.cluster, cc.key); got != cc.selected {
			t.Errorf("Selected(%s, %s) = %v, want %v", cc.cluster, cc.key, got, cc.selected)
		}
	}
	if NewSnapshot(SnapshotInput{}).Now.IsZero() {
		t.Errorf("a snapshot without a clock should default to time.Now")
	}
}

// fakeIndex is a live DecisionIndex: "busy" is selected by 4 other placements, and this
// placement selects "mine".
type fakeIndex struct{}

func (fakeIndex) DecisionCount(cluster, placement string) int64 {
	if cluster == "busy" {
		return 4
	}
	return 0
}

func (fakeIndex) Selected(cluster, placement string) bool {
	return cluster == "mine" && placement == testKey
}

func (fakeIndex) MaxDecisionCount(string) int64 { return 4 }

func (fakeIndex) Decided(placement string) map[string]bool {
	if placement == testKey {
		return map[string]bool{"mine": true}
	}
	return map[string]bool{}
}

func (f fakeIndex) DecisionCounts(placement string, clusters []*clusterv1.ManagedCluster, counts []int64) int64 {
	for i, c := range clusters {
		counts[i] = f.DecisionCount(c.Name, placement)
	}
	return f.MaxDecisionCount(placement)
}

// A live index answers instead of SnapshotInput.Decisions, for the prioritizers and for
// NoSelectIfNew alike.
func TestSnapshotLiveIndex(t *testing.T) {
	in := globalFleet(mc("busy"), mc("idle"), mc("mine", taint("maintenance", "", clusterv1.TaintEffectNoSelectIfNew, t0)))
	in.Decisions = map[string][]string{testKey: {"idle"}, "ns/other": {"idle", "mine"}} // ignored
	in.Index = fakeIndex{}
	snap := NewSnapshot(in)
	if snap.DecisionCount("busy", testKey) != 4 || snap.DecisionCount("idle", testKey) != 0 || !snap.Selected("mine", testKey) || snap.Selected("idle", testKey) ||
		!reflect.DeepEqual(snap.Decided(testKey), map[string]bool{"mine": true}) {
		t.Fatalf("the snapshot does not answer from its index")
	}
	res := schedule(t, newTestScheduler(nil), in, placement(numberOf(2)))
	scheduled("idle", "mine").check(t, res)
	if want := map[string]int64{"busy": -100, "idle": 100, "mine": 200}; !reflect.DeepEqual(res.Scores, want) {
		t.Errorf("Scores = %v, want %v", res.Scores, want)
	}
}
