package fleettest

import (
	"bytes"
	"slices"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/environment"
)

func crdNames(t *testing.T, cfg *rest.Config) []string {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(t.Context(), metav1.ListOptions{})
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
	fleet := StartT(t, environment.Options{ManagedClusters: 1})
	if fleet.Hub == nil || fleet.Hub.Name != environment.HubName || len(fleet.Managed) != 1 || fleet.Managed[0].Name != "cluster1" {
		t.Fatalf("fleet has hub %+v and managed %+v, want hub and cluster1", fleet.Hub, fleet.Managed)
	}
	t.Logf("hub + 1 managed cluster started in %s", fleet.StartDuration)
	hub, cluster1 := fleet.Hub, fleet.Managed[0]

	all, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, crd := range all {
		want = append(want, crd.Name)
	}
	slices.Sort(want)
	if got := crdNames(t, hub.Config); !slices.Equal(got, want) {
		t.Errorf("hub CRDs = %v, want every core/crds CRD %v", got, want)
	}
	wantManaged := slices.Sorted(slices.Values(environment.ManagedClusterCRDs))
	if got := crdNames(t, cluster1.Config); !slices.Equal(got, wantManaged) {
		t.Errorf("cluster1 CRDs = %v, want %v", got, wantManaged)
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
	if _, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("the hub's admin certificate was accepted by cluster1")
	}
}
