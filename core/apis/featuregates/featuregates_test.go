package featuregates

import (
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
)

func TestNewGateDefaults(t *testing.T) {
	gate, err := NewGate(DefaultHubRegistrationFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	if !gate.Enabled(DefaultClusterSet) {
		t.Error("DefaultClusterSet should default to enabled on the hub")
	}
	if gate.Enabled(ManagedClusterAutoApproval) {
		t.Error("ManagedClusterAutoApproval should default to disabled")
	}
	if err := gate.Set("DefaultClusterSet=false,ManagedClusterAutoApproval=true"); err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(DefaultClusterSet) || !gate.Enabled(ManagedClusterAutoApproval) {
		t.Error("--feature-gates values were not applied")
	}
}

func TestNewGateRejectsGatesOfOtherComponents(t *testing.T) {
	gate, err := NewGate(DefaultSpokeWorkFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	err = gate.Set("DefaultClusterSet=false")
	if err == nil || !strings.Contains(err.Error(), "DefaultClusterSet") {
		t.Fatalf("setting a hub registration gate on the work agent: got %v, want an error naming the gate", err)
	}
}

func TestNewGateMergesSets(t *testing.T) {
	// V1beta1CSRAPICompatibility is in both registration sets with the same spec.
	gate, err := NewGate(DefaultSpokeRegistrationFeatureGates(), DefaultHubRegistrationFeatureGates(), DefaultHubAddonManagerFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []featuregate.Feature{ClusterClaim, AddonManagement, DefaultClusterSet, ResourceCleanup} {
		if !gate.Enabled(f) {
			t.Errorf("%s should default to enabled", f)
		}
	}
}

func TestNewGateRejectsConflictingDefaults(t *testing.T) {
	a := map[featuregate.Feature]featuregate.FeatureSpec{ClusterClaim: {Default: true, PreRelease: featuregate.Beta}}
	b := map[featuregate.Feature]featuregate.FeatureSpec{ClusterClaim: {Default: false, PreRelease: featuregate.Alpha}}
	_, err := NewGate(a, b)
	if err == nil || !strings.Contains(err.Error(), `"ClusterClaim"`) {
		t.Fatalf("got %v, want a conflict error naming ClusterClaim", err)
	}
}

func TestDefaultSetsAreFreshCopies(t *testing.T) {
	m := DefaultHubWorkFeatureGates()
	m[ManifestWorkReplicaSet] = featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA}
	if DefaultHubWorkFeatureGates()[ManifestWorkReplicaSet].Default {
		t.Fatal("changing a returned map changed the defaults for later callers")
	}
}
