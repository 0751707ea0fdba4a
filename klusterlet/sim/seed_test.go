package sim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// bootstrap is a kubeconfig of a hub nobody serves: the agents are not started.
const bootstrap = `apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: bootstrap, user: {token: unused}}]
contexts: [{name: hub, context: {cluster: hub, user: bootstrap}}]
current-context: hub
`

// TestSeed: each simulated cluster's managed side holds the Nodes with the capacity drawn for
// it and its ClusterClaims, which its registration agent reports to the hub.
func TestSeed(t *testing.T) {
	f, err := New(t.Context(), Options{Clusters: 2, BootstrapKubeconfig: []byte(bootstrap),
		CPU: Range{8, 8}, Memory: Range{32, 32}, Nodes: 2, Claims: []Vary{{Key: "tier.example.com", Values: []string{"gold", "silver"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range f.Clusters() {
		mcl, err := client.New(c.Managed.Config(), client.Options{Scheme: f.scheme})
		if err != nil {
			t.Fatal(err)
		}
		nodes := &corev1.NodeList{}
		if err := mcl.List(t.Context(), nodes); err != nil {
			t.Fatal(err)
		}
		var cpu int64
		for _, n := range nodes.Items {
			cpu += n.Status.Capacity.Cpu().Value()
		}
		if len(nodes.Items) != 2 || cpu != 8 {
			t.Errorf("cluster %s: %d Nodes with %d CPUs in all, want 2 with 8", c.Name, len(nodes.Items), cpu)
		}
		claim := &clusterv1alpha1.ClusterClaim{}
		if err := mcl.Get(t.Context(), client.ObjectKey{Name: "tier.example.com"}, claim); err != nil {
			t.Fatalf("cluster %s: claim: %v", c.Name, err)
		}
		if want := []string{"gold", "silver"}[i]; claim.Spec.Value != want {
			t.Errorf("cluster %s: claim tier.example.com = %q, want %q", c.Name, claim.Spec.Value, want)
		}
	}
}
