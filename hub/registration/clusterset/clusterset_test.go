package clusterset

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

func TestSelector(t *testing.T) {
	exclusive := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	sel, err := Selector(exclusive)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set{clusterv1beta2.ClusterSetLabel: "prod"}) || sel.Matches(labels.Set{clusterv1beta2.ClusterSetLabel: "dev"}) {
		t.Errorf("exclusive selector %v", sel)
	}
	global := DefaultSets()[1]
	sel, err = Selector(global)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set{}) || !sel.Matches(labels.Set{"a": "b"}) {
		t.Errorf("the global set must select every cluster, got %v", sel)
	}
	byLabel := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
		ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}}}}
	if sel, _ = Selector(byLabel); !sel.Matches(labels.Set{"gpu": "true"}) || sel.Matches(labels.Set{}) {
		t.Errorf("label selector %v", sel)
	}
	byLabel.Spec.ClusterSelector.LabelSelector = nil
	if _, err := Selector(byLabel); err == nil || !strings.Contains(err.Error(), "spec.clusterSelector.labelSelector") {
		t.Errorf("missing labelSelector: want an error naming the field, got %v", err)
	}
	byLabel.Spec.ClusterSelector.SelectorType = "Bogus"
	if _, err := Selector(byLabel); err == nil || !strings.Contains(err.Error(), "gpu") {
		t.Errorf("unknown selector type: want an error naming the set, got %v", err)
	}
}

func TestEmptyCondition(t *testing.T) {
	if c := EmptyCondition(0); c.Status != metav1.ConditionTrue || c.Reason != "NoClusterMatched" || c.Message != "No ManagedCluster selected" {
		t.Errorf("empty: %+v", c)
	}
	if c := EmptyCondition(3); c.Status != metav1.ConditionFalse || c.Reason != "ClustersSelected" || c.Message != "3 ManagedClusters selected" {
		t.Errorf("three: %+v", c)
	}
}

func TestSameSelector(t *testing.T) {
	sets := DefaultSets()
	if !sameSelector(sets[1].Spec.ClusterSelector, DefaultSets()[1].Spec.ClusterSelector) {
		t.Error("global equals itself")
	}
	edited := sets[1].Spec.ClusterSelector
	edited.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	if sameSelector(edited, sets[1].Spec.ClusterSelector) {
		t.Error("a narrowed global selector must be restored")
	}
	if sameSelector(sets[0].Spec.ClusterSelector, sets[1].Spec.ClusterSelector) {
		t.Error("default and global differ")
	}
}
