package environment

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSimulatedNode(t *testing.T) {
	capacity := DefaultSimulatedNodeCapacity()
	n := SimulatedNode(SimulatedNodeName("cluster1", 0), capacity)
	if n.Name != "cluster1-node-1" || n.Labels[SimulatedNodeLabel] != "true" {
		t.Errorf("node %s labels %v, want cluster1-node-1 labelled %s=true", n.Name, n.Labels, SimulatedNodeLabel)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi", corev1.ResourcePods: "110"} {
		for what, list := range map[string]corev1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
			if q := list[name]; q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s %s = %s, want %s", what, name, q.String(), want)
			}
		}
	}
	if len(n.Status.Conditions) != 1 || n.Status.Conditions[0].Type != corev1.NodeReady || n.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions %+v, want Ready=True", n.Status.Conditions)
	}
	// The node holds its own copy: changing it leaves the caller's list alone.
	n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("1")
	if q := capacity[corev1.ResourceCPU]; q.String() != "4" {
		t.Errorf("the caller's capacity changed to %s", q.String())
	}
}

func TestStartRejectsNegativeSimulatedNodes(t *testing.T) {
	_, err := Start(t.Context(), Options{ManagedClusters: 1, SimulatedNodes: -1})
	if err == nil || !strings.Contains(err.Error(), "SimulatedNodes -1") {
		t.Fatalf("got %v, want an error naming SimulatedNodes", err)
	}
}
