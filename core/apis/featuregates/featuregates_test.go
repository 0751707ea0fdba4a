package featuregates

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// TestHubGatesAreTheImplementedOnes pins the hub's set to the gates whose behaviour
// `flotilla hub` has; adding one here means adding what it switches.
func TestHubGatesAreTheImplementedOnes(t *testing.T) {
	gate, err := NewGate(DefaultHubRegistrationFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{string(AddonManagement), string(CleanUpCompletedManifestWork), string(DefaultClusterSet), string(EphemeralIdentity), string(ManagedClusterAutoApproval), string(ManifestWorkReplicaSet), string(NilExecutorValidating)}
	if got := Known(gate); !slices.Equal(got, want) {
		t.Fatalf("hub gates = %v, want %v", got, want)
	}
}

// TestHubWorkGatesKeepOCMsSpec: a hub work gate `flotilla hub` implements keeps the spec of
// OCM's hub work set (CleanUpCompletedManifestWork: alpha, off by default).
func TestHubWorkGatesKeepOCMsSpec(t *testing.T) {
	hub, work := DefaultHubRegistrationFeatureGates(), DefaultHubWorkFeatureGates()
	spec, ok := hub[CleanUpCompletedManifestWork]
	if !ok || spec != work[CleanUpCompletedManifestWork] || spec.Default || spec.PreRelease != featuregate.Alpha {
		t.Fatalf("hub CleanUpCompletedManifestWork = %+v (present %t), want OCM's %+v", spec, ok, work[CleanUpCompletedManifestWork])
	}
}

func hubFlags(t *testing.T) (*pflag.FlagSet, featuregate.FeatureGate) {
	t.Helper()
	gate, err := NewGate(DefaultHubRegistrationFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("hub", pflag.ContinueOnError)
	fs.SetOutput(&strings.Builder{})
	AddFlag(fs, gate)
	return fs, gate
}

func TestFlagSetsKnownGates(t *testing.T) {
	fs, gate := hubFlags(t)
	if err := fs.Parse([]string{"--feature-gates", "DefaultClusterSet=false, ManagedClusterAutoApproval=true"}); err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(DefaultClusterSet) || !gate.Enabled(ManagedClusterAutoApproval) {
		t.Error("--feature-gates values were not applied")
	}
	usage := fs.Lookup(FlagName).Usage
	for _, want := range []string{"DefaultClusterSet=true|false (ALPHA - default=true)", "ManagedClusterAutoApproval=true|false (ALPHA - default=false)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %q:\n%s", want, usage)
		}
	}
	for _, absent := range []string{"AllAlpha", "ClusterProfile", "ResourceCleanup"} {
		if strings.Contains(usage, absent) {
			t.Errorf("usage offers %s, which the hub does not implement:\n%s", absent, usage)
		}
	}
}

func TestFlagRejectsUnknownGates(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"ClusterProfile=true", `unknown feature gate "ClusterProfile" (known gates: AddonManagement, CleanUpCompletedManifestWork, DefaultClusterSet, EphemeralIdentity, ManagedClusterAutoApproval, ManifestWorkReplicaSet, NilExecutorValidating)`},
		{"DefaultClusterSet=false,ResourceCleanup=true,ClusterImporter=true", `unknown feature gates "ResourceCleanup", "ClusterImporter" (known gates: AddonManagement, CleanUpCompletedManifestWork, DefaultClusterSet, EphemeralIdentity, ManagedClusterAutoApproval, ManifestWorkReplicaSet, NilExecutorValidating)`},
		// AllAlpha would switch on ManagedClusterAutoApproval without naming it.
		{"AllAlpha=true", `unknown feature gate "AllAlpha"`},
		{"DefaultClusterSet=maybe", "DefaultClusterSet"},
	} {
		fs, gate := hubFlags(t)
		err := fs.Parse([]string{"--feature-gates=" + tc.value})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--feature-gates=%s: got %v, want an error containing %q", tc.value, err, tc.want)
		}
		if !gate.Enabled(DefaultClusterSet) {
			t.Errorf("--feature-gates=%s: a rejected value changed the gates", tc.value)
		}
	}
}

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
	// AddonManagement is in the agent's and the add-on manager's sets with the same spec.
	gate, err := NewGate(DefaultSpokeRegistrationFeatureGates(), DefaultHubRegistrationFeatureGates(), DefaultHubAddonManagerFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []featuregate.Feature{ClusterClaim, AddonManagement, DefaultClusterSet} {
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
