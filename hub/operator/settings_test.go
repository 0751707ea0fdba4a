package operator

import (
	"slices"
	"testing"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
)

func TestSettingsPerComponent(t *testing.T) {
	flags, err := manager.NewFeatureGate()
	if err != nil {
		t.Fatal(err)
	}
	known := featuregates.Known(flags)
	cm := &operatorv1.ClusterManager{Spec: operatorv1.ClusterManagerSpec{
		RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{FeatureGates: []operatorv1.FeatureGate{
			operatorruntest.Gate("DefaultClusterSet", false), operatorruntest.Gate("ManagedClusterAutoApproval", true),
			// A work gate in the registration list, as OCM would not take it either.
			operatorruntest.Gate("ManifestWorkReplicaSet", true), operatorruntest.Gate("ResourceCleanup", true),
		}},
		WorkConfiguration: &operatorv1.WorkConfiguration{FeatureGates: []operatorv1.FeatureGate{
			operatorruntest.Gate("ManifestWorkReplicaSet", false), operatorruntest.Gate("NilExecutorValidating", true),
			operatorruntest.Gate("CloudEventsDrivers", true),
			{Feature: "CleanUpCompletedManifestWork"}, // mode left to the CRD's default, Disable
		}},
		AddOnManagerConfiguration: &operatorv1.AddOnManagerConfiguration{FeatureGates: []operatorv1.FeatureGate{
			operatorruntest.Gate("AddonManagement", false), operatorruntest.Gate("AllAlpha", true),
		}},
	}}
	cm.Generation = 7
	s := readSettings(cm, known)
	if s.generation != 7 {
		t.Errorf("generation %d", s.generation)
	}
	want := map[string]bool{"DefaultClusterSet": false, "ManagedClusterAutoApproval": true, "ManifestWorkReplicaSet": false,
		"NilExecutorValidating": true, "CleanUpCompletedManifestWork": false, "AddonManagement": false}
	if len(s.gates.Overrides) != len(want) {
		t.Errorf("overrides %v, want %v", s.gates.Overrides, want)
	}
	for k, v := range want {
		if got, ok := s.gates.Overrides[k]; !ok || got != v {
			t.Errorf("override %s = %t (set %t), want %t", k, got, ok, v)
		}
	}
	wantInvalid := []string{"Registration: [ManifestWorkReplicaSet ResourceCleanup]", "Work: [CloudEventsDrivers]", "Addon: [AllAlpha]"}
	if !slices.Equal(s.gates.Invalid, wantInvalid) {
		t.Errorf("invalid %q, want %q", s.gates.Invalid, wantInvalid)
	}
	if msg := s.gates.Condition().Message; msg != "There are some invalid feature gates of Registration: [ManifestWorkReplicaSet ResourceCleanup] Work: [CloudEventsDrivers] Addon: [AllAlpha], will process them with default values" {
		t.Errorf("message %q", msg)
	}
}

func TestApplyOverFlags(t *testing.T) {
	flags, err := manager.NewFeatureGate()
	if err != nil {
		t.Fatal(err)
	}
	// --feature-gates: the ClusterManager comes on top of them, the defaults under them.
	if err := flags.Set("DefaultClusterSet=false,NilExecutorValidating=true"); err != nil {
		t.Fatal(err)
	}
	known := featuregates.Known(flags)
	base := manager.Options{FeatureGates: flags, AutoApprove: plugininstall.AutoApprove{Users: []string{"flag-user"}, ClusterNamePatterns: []string{"dev-*"}}}

	_, none, err := readSettings(nil, known).apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if none.gates["DefaultClusterSet"] || !none.gates["NilExecutorValidating"] || !none.gates["ManifestWorkReplicaSet"] {
		t.Errorf("without a ClusterManager: %v", none.gates)
	}

	cm := &operatorv1.ClusterManager{Spec: operatorv1.ClusterManagerSpec{
		RegistrationConfiguration: &operatorv1.RegistrationHubConfiguration{
			AutoApproveUsers:    []string{"u2", "u1"},
			RegistrationDrivers: []operatorv1.RegistrationDriverHub{{AuthType: "csr", CSR: &operatorv1.CSRConfig{AutoApprovedIdentities: []string{"u1", "u3"}}}},
		},
		WorkConfiguration: &operatorv1.WorkConfiguration{FeatureGates: []operatorv1.FeatureGate{operatorruntest.Gate("ManifestWorkReplicaSet", false)}},
	}}
	opts, r, err := readSettings(cm, known).apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if r.gates["ManifestWorkReplicaSet"] || r.gates["DefaultClusterSet"] || !r.gates["NilExecutorValidating"] {
		t.Errorf("gates %v", r.gates)
	}
	if !flags.Enabled(featuregates.ManifestWorkReplicaSet) {
		t.Error("the flags' gate was changed")
	}
	// Without ManagedClusterAutoApproval, the users do nothing (as in OCM).
	if !slices.Equal(opts.AutoApprove.Users, []string{"flag-user"}) {
		t.Errorf("auto-approval %+v", opts.AutoApprove)
	}
	if d := none.diff(r); !slices.Equal(d, []string{"ManifestWorkReplicaSet=false (was true)"}) {
		t.Errorf("diff %q", d)
	}

	cm.Spec.RegistrationConfiguration.FeatureGates = []operatorv1.FeatureGate{operatorruntest.Gate("ManagedClusterAutoApproval", true)}
	opts, r, err = readSettings(cm, known).apply(base)
	if err != nil {
		t.Fatal(err)
	}
	want := plugininstall.AutoApprove{Users: []string{"u1", "u2", "u3"}, ClusterNamePatterns: []string{"dev-*"}}
	if !slices.Equal(opts.AutoApprove.Users, want.Users) || !slices.Equal(opts.AutoApprove.ClusterNamePatterns, want.ClusterNamePatterns) {
		t.Errorf("auto-approval %+v, want %+v", opts.AutoApprove, want)
	}
	if r.equal(none) {
		t.Error("settings with other users compare equal")
	}
	base.AutoApprove = plugininstall.AutoApprove{}
	opts, _, err = readSettings(cm, known).apply(base)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opts.AutoApprove.ClusterNamePatterns, []string{"*"}) {
		t.Errorf("without flag patterns every cluster name is approved, got %+v", opts.AutoApprove)
	}
}
