package builtin_test

import (
	"testing"

	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// The hub labels what the klusterlet looks for.
func TestLabelIsTheKlusterlets(t *testing.T) {
	if builtin.Label != addon.BuiltinLabel {
		t.Errorf("hub label %q, klusterlet label %q", builtin.Label, addon.BuiltinLabel)
	}
}

// Design 23 Q2: the AddOnDeploymentConfig's namespace, then the spec's, then the built-in's
// default; OCM's generic default is no choice.
func TestInstallNamespacePrecedence(t *testing.T) {
	a, _ := builtin.Lookup(builtin.ManagedServiceAccount)
	const generic = "open-cluster-management-agent-addon"
	for _, c := range []struct{ adc, spec, want string }{
		{"", "", "open-cluster-management-managed-serviceaccount"},
		{"", generic, "open-cluster-management-managed-serviceaccount"},
		{generic, generic, "open-cluster-management-managed-serviceaccount"},
		{"", "mine", "mine"},
		{generic, "mine", "mine"},
		{"adc", "mine", "adc"},
	} {
		if got := a.InstallNamespace(c.adc, c.spec); got != c.want {
			t.Errorf("adc %q spec %q: %q, want %q", c.adc, c.spec, got, c.want)
		}
	}
}

// cluster-gateway registers no hub identity and gets no hub permission.
func TestClusterGatewayHasNoHubIdentity(t *testing.T) {
	a, ok := builtin.Lookup(builtin.ClusterGateway)
	if !ok || len(a.Registrations("cluster1")) != 0 || len(a.Permissions()) != 0 {
		t.Errorf("cluster-gateway: %v registrations %v permissions %v", ok, a.Registrations("cluster1"), a.Permissions())
	}
	if _, ok := builtin.Lookup("hello"); ok {
		t.Error("hello is no built-in")
	}
}
