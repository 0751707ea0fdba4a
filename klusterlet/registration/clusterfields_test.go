package registration

import (
	"context"
	"net"
	"reflect"
	"testing"
)

// TestClusterAnnotationsKeepOnlyTheAgentPrefix checks the filter OCM applies to
// --cluster-annotations.
func TestClusterAnnotationsKeepOnlyTheAgentPrefix(t *testing.T) {
	c := Config{ClusterAnnotations: map[string]string{
		"agent.open-cluster-management.io/owner": "team-a",
		"example.com/owner":                      "team-b",
		"agent.open-cluster-management.iox/x":    "y",
	}}
	keep, dropped := c.clusterAnnotations()
	if want := map[string]string{"agent.open-cluster-management.io/owner": "team-a"}; !reflect.DeepEqual(keep, want) {
		t.Errorf("kept %v, want %v", keep, want)
	}
	if want := []string{"agent.open-cluster-management.iox/x", "example.com/owner"}; !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
}

func TestKlusterletFieldsValidated(t *testing.T) {
	for name, c := range map[string]Config{
		"http URL":     {ExternalServers: []ExternalServer{{URL: "http://api.example.com:6443"}}},
		"no host":      {ExternalServers: []ExternalServer{{URL: "https://"}}},
		"bad label":    {ClusterLabels: map[string]string{"env": "not a value!"}},
		"empty suffix": {ReservedClusterClaimSuffixes: []string{".example.com", ""}},
	} {
		if err := c.klusterletFieldDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestHostAliasDial checks that the alias sends its host name, and only it, to its IP address.
func TestHostAliasDial(t *testing.T) {
	alias, err := ParseHostAlias("hub.example.com=10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	var dialed []string
	record := func(_ context.Context, _, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		return nil, nil
	}
	dial := alias.Dial(record)
	for _, addr := range []string{"hub.example.com:6443", "HUB.example.com.:443", "other.example.com:6443"} {
		_, _ = dial(context.Background(), "tcp", addr)
	}
	if want := []string{"10.1.2.3:6443", "10.1.2.3:443", "other.example.com:6443"}; !reflect.DeepEqual(dialed, want) {
		t.Errorf("dialed %v, want %v", dialed, want)
	}
	for _, bad := range []string{"hub.example.com", "hub.example.com=not-an-ip", "=10.1.2.3"} {
		if _, err := ParseHostAlias(bad); err == nil {
			t.Errorf("ParseHostAlias(%q) accepted", bad)
		}
	}
}
