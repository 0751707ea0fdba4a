package operator

import (
	"context"
	"net"
	"slices"
	"testing"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestSettingsOverFlags(t *testing.T) {
	// The flags: work caches on, add-on agent on, cluster and namespace named.
	base := klusterlet.Options{Registration: registration.Config{ClusterName: "flag", AgentNamespace: "open-cluster-management-flag"}}
	base.Work.ExecutorValidatingCaches = true

	_, flags := readSettings(nil).apply(base)
	if flags.clusterName != "flag" || flags.namespace != "open-cluster-management-flag" ||
		!flags.gates["ExecutorValidatingCaches"] || flags.gates["RawFeedbackJsonString"] || !flags.gates["AddonManagement"] {
		t.Fatalf("without a Klusterlet: %+v", flags)
	}

	k := &operatorv1.Klusterlet{Spec: operatorv1.KlusterletSpec{
		ClusterName: "c1", Namespace: "open-cluster-management-c1",
		RegistrationConfiguration: &operatorv1.RegistrationConfiguration{FeatureGates: []operatorv1.FeatureGate{
			operatorruntest.Gate("AddonManagement", false), operatorruntest.Gate("ClusterClaim", true),
			operatorruntest.Gate("RawFeedbackJsonString", true)}},
		WorkConfiguration: &operatorv1.WorkAgentConfiguration{FeatureGates: []operatorv1.FeatureGate{
			operatorruntest.Gate("ExecutorValidatingCaches", false), {Feature: "RawFeedbackJsonString", Mode: operatorv1.FeatureGateModeTypeEnable},
			operatorruntest.Gate("NilExecutorValidating", true)}},
		HubApiServerHostAlias: &operatorv1.HubApiServerHostAlias{IP: "10.0.0.1", Hostname: "hub.example"},
	}}
	k.Generation = 3
	s := readSettings(k)
	wantInvalid := []string{"Registration: [ClusterClaim RawFeedbackJsonString]", "Work: [NilExecutorValidating]"}
	if !slices.Equal(s.gates.Invalid, wantInvalid) {
		t.Errorf("invalid %q, want %q", s.gates.Invalid, wantInvalid)
	}
	opts, r := s.apply(base)
	if opts.Registration.ClusterName != "c1" || opts.Registration.AgentNamespace != "open-cluster-management-c1" {
		t.Errorf("registration %+v", opts.Registration)
	}
	if !opts.AddOn.Disabled || opts.Work.ExecutorValidatingCaches || !opts.Work.RawFeedbackJSON {
		t.Errorf("gates: add-on disabled %t, caches %t, raw feedback %t", opts.AddOn.Disabled, opts.Work.ExecutorValidatingCaches, opts.Work.RawFeedbackJSON)
	}
	if opts.Registration.HubDial == nil || base.Registration.HubDial != nil {
		t.Error("the host alias sets the Klusterlet's dial only")
	}
	if r.equal(flags) {
		t.Error("other settings compare equal")
	}
	if len(flags.diff(r)) != 6 {
		t.Errorf("diff %q", flags.diff(r))
	}
	_, again := readSettings(k).apply(base)
	if !again.equal(r) {
		t.Error("the same Klusterlet gives other settings")
	}
}

func TestAliasDial(t *testing.T) {
	var got []string
	next := func(_ context.Context, _, address string) (net.Conn, error) {
		got = append(got, address)
		return nil, nil
	}
	dial := aliasDial(operatorv1.HubApiServerHostAlias{IP: "10.0.0.1", Hostname: "hub.example"}, next)
	for _, addr := range []string{"hub.example:6443", "HUB.example.:443", "other.example:6443", "10.0.0.2:6443"} {
		if _, err := dial(context.Background(), "tcp", addr); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"10.0.0.1:6443", "10.0.0.1:443", "other.example:6443", "10.0.0.2:6443"}
	if !slices.Equal(got, want) {
		t.Errorf("dialed %q, want %q", got, want)
	}
}
