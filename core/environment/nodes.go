package environment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SimulatedNodeLabel (value "true") marks the Nodes created for Options.SimulatedNodes.
const SimulatedNodeLabel = "flotilla.dev/simulated"

// DefaultSimulatedNodeCapacity is the capacity, and allocatable, of a simulated Node when
// Options.SimulatedNodeCapacity is nil: 4 CPUs, 16Gi of memory, 110 pods.
func DefaultSimulatedNodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// SimulatedNodeName is the name of the i-th (0-based) simulated Node of cluster.
func SimulatedNodeName(cluster string, i int) string { return fmt.Sprintf("%s-node-%d", cluster, i+1) }

// SimulatedNode returns a Ready Node offering capacity. It is an API object only: no kubelet
// runs behind it, nothing renews its status and nothing runs on it; it exists so that what
// sums node resources (the klusterlet's cluster status) has something to count.
func SimulatedNode(name string, capacity corev1.ResourceList) *corev1.Node {
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{SimulatedNodeLabel: "true"}},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type:               corev1.NodeReady,
				Status:             corev1.ConditionTrue,
				Reason:             "SimulatedNode",
				Message:            "API object only: no kubelet runs behind this Node",
				LastHeartbeatTime:  now,
				LastTransitionTime: now,
			}},
		},
	}
}

// CreateSimulatedNodes creates n simulated Nodes (SimulatedNode) on cp. Without a node
// lifecycle controller in kube-controller-manager they stay Ready.
func (cp *ControlPlane) CreateSimulatedNodes(ctx context.Context, n int, capacity corev1.ResourceList) error {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("control plane %s: simulated nodes: %w", cp.Name, err)
	}
	for i := range n {
		// A Node keeps the status it is created with (a kubelet registers that way).
		node := SimulatedNode(SimulatedNodeName(cp.Name, i), capacity)
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("control plane %s: creating simulated Node %s: %w", cp.Name, node.Name, err)
		}
	}
	if n > 0 {
		cp.logf("%d simulated Nodes created (%s each)", n, describeResources(capacity))
	}
	return nil
}

func describeResources(l corev1.ResourceList) string {
	return fmt.Sprintf("cpu %s, memory %s, pods %s", l.Cpu(), l.Memory(), l.Pods())
}
