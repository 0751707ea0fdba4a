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
	if n.Name != "cluster1-node-1" || n.Labels[SimulatedNodeLabel] != "true" || n.Labels[corev1.LabelHostname] != n.Name || n.Labels[corev1.LabelOSStable] != "linux" {
		t.Errorf("node %s labels %v, want cluster1-node-1 labelled %s=true with a kubelet's hostname and os labels", n.Name, n.Labels, SimulatedNodeLabel)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi", corev1.ResourcePods: "110"} {
		for what, list := range map[string]corev1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
			if q := list[name]; q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s %s = %s, want %s", what, name, q.String(), want)
			}
		}
	}
	// KWOK makes it Ready: its node-initialize stage only picks up Nodes that are not.
	if NodeReady(n) || len(n.Status.Conditions) != 0 {
		t.Errorf("conditions %+v, want none until KWOK initializes the Node", n.Status.Conditions)
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

func TestSimulatedNodeNetwork(t *testing.T) {
	for _, tc := range []struct {
		i        int
		ip, cidr string
	}{
		{0, "172.18.0.2", "10.244.1.0/24"},
		{1, "172.18.0.3", "10.244.2.0/24"},
		{253, "172.18.0.255", "10.244.254.0/24"},
		{254, "172.18.1.0", ""}, // no /24 of its own left: KWOK's fallback pool
	} {
		n := SimulatedNode(SimulatedNodeName("c", tc.i), DefaultSimulatedNodeCapacity())
		simulatedNodeNetwork(n, tc.i)
		if got := n.Status.Addresses[0]; got.Type != corev1.NodeInternalIP || got.Address != tc.ip {
			t.Errorf("node %d: address %+v, want InternalIP %s", tc.i, got, tc.ip)
		}
		if n.Spec.PodCIDR != tc.cidr {
			t.Errorf("node %d: podCIDR %q, want %q", tc.i, n.Spec.PodCIDR, tc.cidr)
		}
	}
}
