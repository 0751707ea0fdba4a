package placement

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

func decision(ns, name, placement string, clusters ...string) *clusterv1beta1.PlacementDecision {
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{clusterv1beta1.PlacementLabel: placement}}}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return d
}

func TestDecisionIndex(t *testing.T) {
	x := newDecisionIndex()
	x.set("ns/p1-decision-1", decision("ns", "p1-decision-1", "p1", "a", "b"))
	x.set("ns/p1-decision-2", decision("ns", "p1-decision-2", "p1", "c"))
	x.set("ns/p2-decision-1", decision("ns", "p2-decision-1", "p2", "a"))
	x.set("other/p1-decision-1", decision("other", "p1-decision-1", "p1", "a"))
	check := func(cluster, placement string, count int64, selected bool) {
		t.Helper()
		if got := x.DecisionCount(cluster, placement); got != count {
			t.Errorf("DecisionCount(%s, %s) = %d, want %d", cluster, placement, got, count)
		}
		if got := x.Selected(cluster, placement); got != selected {
			t.Errorf("Selected(%s, %s) = %v, want %v", cluster, placement, got, selected)
		}
		// The bulk answers of a scheduling pass agree with the single ones.
		if got := x.Decided(placement)[cluster]; got != selected {
			t.Errorf("Decided(%s)[%s] = %v, want %v", placement, cluster, got, selected)
		}
		counts := make([]int64, 1)
		hi := x.DecisionCounts(placement, []*clusterv1.ManagedCluster{{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}, counts)
		if counts[0] != count || hi != x.MaxDecisionCount(placement) {
			t.Errorf("DecisionCounts(%s, [%s]) = %v, max %d; want [%d], max %d", placement, cluster, counts, hi, count, x.MaxDecisionCount(placement))
		}
	}
	check("a", "ns/p1", 2, true) // p2 and other/p1 besides ns/p1
	check("c", "ns/p1", 0, true)
	check("c", "ns/p2", 1, false)
	check("z", "ns/p1", 0, false)
	if got := x.MaxDecisionCount("ns/p1"); got != 2 {
		t.Errorf("MaxDecisionCount(ns/p1) = %d, want 2", got)
	}
	if got := x.MaxDecisionCount("ns/p3"); got != 3 {
		t.Errorf("MaxDecisionCount(ns/p3) = %d, want 3", got)
	}
	// A page moving a cluster, then a deleted page.
	x.set("ns/p1-decision-2", decision("ns", "p1-decision-2", "p1", "d"))
	check("c", "ns/p2", 0, false)
	check("d", "ns/p2", 1, false)
	x.set("ns/p1-decision-1", nil)
	check("a", "ns/p2", 1, true)
	check("b", "ns/p2", 0, false)
	if len(x.byPlacement["ns/p1"]) != 1 || x.count["b"] != 0 {
		t.Errorf("index kept removed decisions: %v %v", x.byPlacement, x.count)
	}
}
