package admin

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

func TestSortDecisions(t *testing.T) {
	var ds []clusterv1beta1.PlacementDecision
	// As the API server lists them: by name, so p-decision-10 before p-decision-2.
	for _, n := range []string{"other-page", "p-decision-1", "p-decision-10", "p-decision-2", "p-decision-x"} {
		ds = append(ds, clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	SortDecisions("p", ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Name)
	}
	if want := []string{"p-decision-1", "p-decision-2", "p-decision-10", "other-page", "p-decision-x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("decision order %v, want %v", got, want)
	}
}

func TestDecidedClusters(t *testing.T) {
	page := func(clusters ...string) clusterv1beta1.PlacementDecision {
		d := clusterv1beta1.PlacementDecision{}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	var got []string
	for _, d := range DecidedClusters([]clusterv1beta1.PlacementDecision{page("b", "a"), page(), page("a", "c", "")}) {
		got = append(got, d.ClusterName)
	}
	if want := []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

func TestTruncateClusters(t *testing.T) {
	for _, tc := range []struct {
		names []string
		width int
		want  string
	}{
		{nil, 20, ""},
		{[]string{"c1", "c2", "c3"}, 20, "c1,c2,c3"},
		{[]string{"c1", "c2", "c3"}, 8, "c1,c2,c3"},
		{[]string{"cluster1", "cluster2", "cluster3", "cluster4"}, 20, "cluster1,+3 more"},
		{[]string{"cluster1", "cluster2", "cluster3", "cluster4"}, 26, "cluster1,cluster2,+2 more"},
		{[]string{"cluster1", "cluster2", "cluster3", "cluster4"}, 35, "cluster1,cluster2,cluster3,cluster4"},
		{[]string{"cluster1", "cluster2", "cluster3", "cluster4"}, 34, "cluster1,cluster2,cluster3,+1 more"},
		{[]string{"a-very-long-cluster-name", "b"}, 10, "a-very-long-cluster-name,+1 more"},
	} {
		got := TruncateClusters(tc.names, tc.width)
		if got != tc.want {
			t.Errorf("TruncateClusters(%v, %d) = %q, want %q", tc.names, tc.width, got, tc.want)
		}
	}
}

func TestPlacementRowOf(t *testing.T) {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	p.Status.Conditions = []metav1.Condition{
		{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionFalse, Reason: clusterv1beta1.PlacementReasonNotAllDecisionsScheduled},
		{Type: clusterv1beta1.PlacementConditionMisconfigured, Status: metav1.ConditionTrue, Reason: clusterv1beta1.PlacementReasonMisconfigured},
	}
	r := PlacementRowOf(p, nil)
	if r.Satisfied != "False" || r.Reason != clusterv1beta1.PlacementReasonMisconfigured {
		t.Errorf("row %+v, want Satisfied False and reason Misconfigured", r)
	}
}

func TestParsePlacementRef(t *testing.T) {
	if ns, n, err := ParsePlacementRef("default/web"); err != nil || ns != "default" || n != "web" {
		t.Errorf("ParsePlacementRef(default/web) = %q, %q, %v", ns, n, err)
	}
	for _, bad := range []string{"", "web", "/web", "default/", "a/b/c"} {
		if _, _, err := ParsePlacementRef(bad); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
			t.Errorf("ParsePlacementRef(%q): error %v", bad, err)
		}
	}
}
