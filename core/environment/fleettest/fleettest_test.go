package fleettest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/environment"
)

func crdNames(ctx context.Context, t *testing.T, cfg *rest.Config) []string {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing CRDs on %s: %v", cfg.Host, err)
	}
	var names []string
	for _, crd := range list.Items {
		names = append(names, crd.Name)
	}
	slices.Sort(names)
	return names
}

func TestFleet(t *testing.T) {
	fleet := StartT(t, environment.Options{ManagedClusters: 1, SimulatedNodes: 2})
	if fleet.Hub == nil || fleet.Hub.Name != environment.HubName || len(fleet.Managed) != 1 || fleet.Managed[0].Name != "cluster1" {
		t.Fatalf("fleet has hub %+v and managed %+v, want hub and cluster1", fleet.Hub, fleet.Managed)
	}
	t.Logf("hub + 1 managed cluster started in %s", fleet.StartDuration)
	hub, cluster1 := fleet.Hub, fleet.Managed[0]
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	all, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, crd := range all {
		want = append(want, crd.Name)
	}
	slices.Sort(want)
	if got := crdNames(ctx, t, hub.Config); !slices.Equal(got, want) {
		t.Errorf("hub CRDs = %v, want every core/crds CRD %v", got, want)
	}
	wantManaged := slices.Sorted(slices.Values(environment.ManagedClusterCRDs))
	if got := crdNames(ctx, t, cluster1.Config); !slices.Equal(got, wantManaged) {
		t.Errorf("cluster1 CRDs = %v, want %v", got, wantManaged)
	}

	// Simulated Nodes live on managed clusters only, made Ready by KWOK and with the
	// default capacity.
	for _, cp := range fleet.ControlPlanes() {
		nodes, err := kubernetes.NewForConfigOrDie(cp.Config).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing Nodes on %s: %v", cp.Name, err)
		}
		want := 2
		if cp == hub {
			want = 0
		}
		if len(nodes.Items) != want {
			t.Errorf("%s has %d Nodes, want %d", cp.Name, len(nodes.Items), want)
		}
		for _, n := range nodes.Items {
			if n.Labels[environment.SimulatedNodeLabel] != "true" || !environment.NodeReady(&n) ||
				n.Status.Capacity.Cpu().String() != "4" || n.Status.Allocatable.Memory().String() != "16Gi" || n.Status.Capacity.Pods().String() != "110" {
				t.Errorf("%s Node %s: labels %v, status %+v; want a Ready simulated node with cpu 4, memory 16Gi, pods 110",
					cp.Name, n.Name, n.Labels, n.Status)
			}
		}
	}

	if bytes.Equal(hub.CAData, cluster1.CAData) {
		t.Fatal("hub and cluster1 share a CA")
	}
	// A hub credential must not authenticate to a managed cluster: distinct trust roots.
	cross := rest.CopyConfig(hub.Config)
	cross.Host = cluster1.URL
	cross.CAData = cluster1.CAData
	cs, err := kubernetes.NewForConfig(cross)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the hub's admin certificate was accepted by cluster1")
	}
}
