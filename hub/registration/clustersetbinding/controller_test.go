package clustersetbinding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

func TestBoundCondition(t *testing.T) {
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: "prod"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "prod"}}
	if c := BoundCondition(b, true); c.Status != metav1.ConditionTrue || c.Reason != "ClusterSetBound" {
		t.Errorf("bound: %+v", c)
	}
	if c := BoundCondition(b, false); c.Status != metav1.ConditionFalse || c.Reason != "ClusterSetNotFound" {
		t.Errorf("set missing: %+v", c)
	}
	b.Spec.ClusterSet = "dev"
	if c := BoundCondition(b, true); c.Status != metav1.ConditionFalse || c.Reason != ReasonNameMismatch {
		t.Errorf("name mismatch: %+v", c)
	}
}
