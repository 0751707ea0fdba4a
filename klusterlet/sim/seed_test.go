package sim

import (
	"context"
	"testing"
	"time"

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

// TestGrow: a grown fleet continues the index (names, labels, claims) with the same fraction
// of silent clusters, and a running fleet starts the new clusters' agents.
func TestGrow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f, err := New(ctx, Options{Clusters: 10, BootstrapKubeconfig: []byte(bootstrap), Silent: 0.2,
		Labels: []Vary{{Key: "region", Values: []string{"a", "b", "c"}}}})
	if err != nil {
		t.Fatal(err)
	}
	run := make(chan error, 1)
	go func() { run <- f.Run(ctx) }()
	added, err := f.Grow(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 5 || added[0].Name != "sim-00010" || added[4].Name != "sim-00014" || len(f.Clusters()) != 15 {
		t.Fatalf("grew to %d clusters, added %d from %s; want 15, sim-00010 to sim-00014", len(f.Clusters()), len(added), added[0].Name)
	}
	if got := added[1].Labels["region"]; got != "c" { // index 11 mod 3
		t.Errorf("sim-00011 region %q, want c", got)
	}
	if f.Cluster("sim-00014") != added[4] {
		t.Error("Cluster(sim-00014) does not find the grown cluster")
	}
	silent := 0
	for _, c := range added {
		if c.Behaviour == Silent {
			silent++
		}
	}
	if silent != 1 {
		t.Errorf("%d of the 5 grown clusters are silent, want 1 (20%%)", silent)
	}
	// The agents cannot reach the hub, so they keep trying: all 15 stay running.
	for running := 0; running < 15; running, _ = f.Counts() {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of 15 agents running after Grow, want all: %v", running, ctx.Err())
		case err := <-run:
			t.Fatalf("Run ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-run; err != nil {
		t.Fatal(err)
	}
}
