package clusterset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// TestMembershipChanged: only a label change can change which sets a cluster is in; the
// agents' status reports do not wake the set status controller.
func TestMembershipChanged(t *testing.T) {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "dev"}},
		Status: clusterv1.ManagedClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue}}}}
	for _, tc := range []struct {
		name   string
		change func(*clusterv1.ManagedCluster)
		want   bool
	}{
		{"an agent's status report", func(mc *clusterv1.ManagedCluster) {
			mc.Status.Conditions[0].Status = metav1.ConditionUnknown
			mc.Status.Version.Kubernetes = "v1.35.1"
		}, false},
		{"an annotation", func(mc *clusterv1.ManagedCluster) { mc.Annotations = map[string]string{"x": "y"} }, false},
		{"a label's value", func(mc *clusterv1.ManagedCluster) { mc.Labels["env"] = "prod" }, true},
		{"a new label", func(mc *clusterv1.ManagedCluster) { mc.Labels["cluster.open-cluster-management.io/clusterset"] = "a" }, true},
	} {
		n := mc.DeepCopy()
		tc.change(n)
		if got := membershipChanged(mc, n); got != tc.want {
			t.Errorf("%s: membershipChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUnlabelled(t *testing.T) {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"env": "dev"}}}
	if !unlabelled(mc) {
		t.Errorf("a cluster without %s must wake the default-label controller", clusterv1beta2.ClusterSetLabel)
	}
	mc.Labels[clusterv1beta2.ClusterSetLabel] = "default"
	if unlabelled(mc) {
		t.Errorf("a labelled cluster (any status report of it) must not wake the default-label controller")
	}
	mc.Labels[clusterv1beta2.ClusterSetLabel] = ""
	if unlabelled(mc) {
		t.Errorf("an empty %s label is a choice (no set), not a missing one", clusterv1beta2.ClusterSetLabel)
	}
}
