package environment

import (
	"slices"
	"testing"

	"github.com/flotilla-dev/flotilla/core/crds"
)

// TestCRDSplit: every CRD named for a managed cluster is embedded in core/crds (the hub
// gets all of them), the Klusterlet CRD goes to managed clusters and the ClusterManager
// CRD does not.
func TestCRDSplit(t *testing.T) {
	all, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]bool{}
	for _, crd := range all {
		embedded[crd.Name] = true
	}
	for _, name := range append(slices.Clone(ManagedClusterCRDs), ClusterManagerCRD) {
		if !embedded[name] {
			t.Errorf("%s is not embedded in core/crds", name)
		}
	}
	if !slices.Contains(ManagedClusterCRDs, KlusterletCRD) {
		t.Errorf("ManagedClusterCRDs %v lack %s", ManagedClusterCRDs, KlusterletCRD)
	}
	if slices.Contains(ManagedClusterCRDs, ClusterManagerCRD) {
		t.Errorf("ManagedClusterCRDs %v hold the hub's %s", ManagedClusterCRDs, ClusterManagerCRD)
	}
}
