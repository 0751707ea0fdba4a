package managedcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func TestRelevantUpdate(t *testing.T) {
	accepted := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Generation: 2, Labels: map[string]string{"a": "1"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{
			{Type: clusterv1.ManagedClusterConditionHubAccepted, Status: metav1.ConditionTrue},
			{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue}}}}
	for _, tc := range []struct {
		name   string
		change func(*clusterv1.ManagedCluster)
		want   bool
	}{
		{"an agent's status report", func(mc *clusterv1.ManagedCluster) {
			mc.Status.Conditions[1].Status = metav1.ConditionUnknown
			mc.Status.Version.Kubernetes = "v1.35.1"
		}, false},
		{"the spec (acceptance)", func(mc *clusterv1.ManagedCluster) { mc.Generation++; mc.Spec.HubAcceptsClient = false }, true},
		{"a label", func(mc *clusterv1.ManagedCluster) { mc.Labels["a"] = "2" }, true},
		{"an annotation", func(mc *clusterv1.ManagedCluster) { mc.Annotations = map[string]string{"x": "y"} }, true},
		{"the finalizers", func(mc *clusterv1.ManagedCluster) { mc.Finalizers = nil; mc.Finalizers = append(mc.Finalizers, "x") }, true},
		{"deletion", func(mc *clusterv1.ManagedCluster) { now := metav1.Now(); mc.DeletionTimestamp = &now }, true},
		{"a lost HubAccepted condition", func(mc *clusterv1.ManagedCluster) { mc.Status.Conditions = mc.Status.Conditions[1:] }, true},
	} {
		n := accepted.DeepCopy()
		tc.change(n)
		if got := relevantUpdate(accepted, n); got != tc.want {
			t.Errorf("%s: relevantUpdate = %v, want %v", tc.name, got, tc.want)
		}
	}
}
