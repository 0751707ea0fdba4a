package admin

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func TestClusterTable(t *testing.T) {
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "default"}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue},
				{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionUnknown}},
			Capacity: clusterv1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi")},
			Version:  clusterv1.ManagedClusterVersion{Kubernetes: "v1.36.3"},
		},
	}
	r := Row(mc)
	want := ClusterRow{Name: "c1", Accepted: "true", Joined: "True", Available: "Unknown", ClusterSet: "default", CPU: "4", Memory: "8Gi", KubernetesVersion: "v1.36.3"}
	if r != want {
		t.Errorf("row %+v, want %+v", r, want)
	}
	var buf bytes.Buffer
	if err := WriteClusters(&buf, []ClusterRow{r, Row(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "new"}})}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "KUBERNETES VERSION") ||
		strings.Fields(lines[2])[1] != "false" || strings.Fields(lines[2])[2] != "-" {
		t.Errorf("table:\n%s", buf.String())
	}
}
