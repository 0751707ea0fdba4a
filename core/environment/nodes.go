package environment

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SimulatedNodeLabel (value "true") marks the simulated Nodes of a managed cluster: the
// Nodes KWOK manages there (--manage-nodes-with-label-selector). Options.SimulatedNodes
// creates them; a Node created by hand with this label is managed as well.
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

// SimulatedNode returns a Node labelled SimulatedNodeLabel offering capacity (also its
// allocatable). No kubelet runs behind it: once created, KWOK makes it Ready (conditions,
// nodeInfo, phase Running), renews its Lease, and runs the Pods kube-scheduler binds to it
// (see kwok-stages.yaml). A Node keeps the status it is created with, so its capacity is
// what the scheduler fits Pods into and what the klusterlet sums into cluster status.
func SimulatedNode(name string, capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			// The well-known labels a kubelet sets, which manifests commonly select on.
			Labels: map[string]string{
				SimulatedNodeLabel:     "true",
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
			},
			// KWOK's own marker for the Nodes it fakes.
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
		},
	}
}

// simulatedNodeNetwork gives the i-th simulated Node of a cluster (0-based) an InternalIP
// address (172.18.0.2, 172.18.0.3, ... as on kind's network) and a /24 Pod CIDR after
// kwokFallbackPodCIDR (10.244.1.0/24, 10.244.2.0/24, ...), which KWOK assigns Pod IPs from.
// Past 254 Nodes there is no CIDR of its own left and KWOK uses the fallback.
func simulatedNodeNetwork(node *corev1.Node, i int) {
	base := netip.MustParseAddr("172.18.0.2").As4()
	ip := binary.BigEndian.Uint32(base[:]) + uint32(i)
	var addr [4]byte
	binary.BigEndian.PutUint32(addr[:], ip)
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: netip.AddrFrom4(addr).String()},
		{Type: corev1.NodeHostName, Address: node.Name},
	}
	if i < 254 {
		cidr := fmt.Sprintf("10.244.%d.0/24", i+1)
		node.Spec.PodCIDR = cidr
		node.Spec.PodCIDRs = []string{cidr}
	}
}

// kwokAddressType is the type of the Node address kube-apiserver reaches a simulated Node's
// "kubelet" (KWOK's debugging server) at, with PodDebugging: an ExternalIP, because the
// InternalIP is kind-like (simulatedNodeNetwork) and not where anything listens.
const kwokAddressType = corev1.NodeExternalIP

// kwokKubeletEndpoint makes node advertise KWOK's debugging server, on 127.0.0.1:port, as its
// kubelet (PodDebugging). KWOK's node stages write the same port (--node-port); setting it at
// creation makes it there as soon as the Node is.
func kwokKubeletEndpoint(node *corev1.Node, port int) {
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: kwokAddressType, Address: "127.0.0.1"})
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
}

// debuggingPort is the port of KWOK's debugging server, 0 without PodDebugging.
func (cp *ControlPlane) debuggingPort() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if !cp.opts.PodDebugging || len(cp.ports) < 6 {
		return 0
	}
	return cp.ports[5]
}

// CreateSimulatedNodes creates n more simulated Nodes (SimulatedNode) on cp, named after
// those created before, and waits until KWOK reports them Ready. cp must have been started
// with Workloads (KWOK is what makes a simulated Node Ready and runs its Pods).
func (cp *ControlPlane) CreateSimulatedNodes(ctx context.Context, n int, capacity corev1.ResourceList) error {
	cp.mu.Lock()
	kwok := cp.kwok
	cp.mu.Unlock()
	if kwok == nil {
		return fmt.Errorf("control plane %s: simulated Nodes need Workloads (KWOK runs them)", cp.Name)
	}
	if capacity == nil {
		capacity = DefaultSimulatedNodeCapacity()
	}
	names, err := cp.createNodes(ctx, n, capacity)
	if err != nil {
		return err
	}
	return cp.awaitNodesReady(ctx, kwok, names)
}

// createNodes creates n simulated Nodes and returns their names.
func (cp *ControlPlane) createNodes(ctx context.Context, n int, capacity corev1.ResourceList) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("control plane %s: %d simulated Nodes: must not be negative", cp.Name, n)
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, fmt.Errorf("control plane %s: simulated Nodes: %w", cp.Name, err)
	}
	cp.mu.Lock()
	first := cp.nodes
	cp.nodes += n
	cp.mu.Unlock()
	names := make([]string, 0, n)
	for i := first; i < first+n; i++ {
		// A Node keeps the status it is created with (a kubelet registers that way).
		node := SimulatedNode(SimulatedNodeName(cp.Name, i), capacity)
		simulatedNodeNetwork(node, i)
		if port := cp.debuggingPort(); port != 0 {
			kwokKubeletEndpoint(node, port)
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("control plane %s: creating simulated Node %s: %w", cp.Name, node.Name, err)
		}
		names = append(names, node.Name)
	}
	if n > 0 {
		cp.logf("%d simulated Nodes created (%s each)", n, describeResources(capacity))
	}
	return names, nil
}

// awaitNodesReady waits until KWOK has made every named Node Ready, reporting KWOK's log
// when it exits or does not get there in time.
func (cp *ControlPlane) awaitNodesReady(ctx context.Context, kwok *process, names []string) error {
	if len(names) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("control plane %s: simulated Nodes: %w", cp.Name, err)
	}
	what := fmt.Sprintf("KWOK making %d simulated Nodes Ready", len(names))
	return cp.await(ctx, kwok, what, func(ctx context.Context) error {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: SimulatedNodeLabel + "=true"})
		if err != nil {
			return err
		}
		ready := map[string]bool{}
		for _, n := range list.Items {
			ready[n.Name] = NodeReady(&n)
		}
		for _, name := range names {
			if !ready[name] {
				return fmt.Errorf("Node %s is not Ready yet", name)
			}
		}
		return nil
	})
}

// NodeReady reports whether node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describeResources(l corev1.ResourceList) string {
	return fmt.Sprintf("cpu %s, memory %s, pods %s", l.Cpu(), l.Memory(), l.Pods())
}
