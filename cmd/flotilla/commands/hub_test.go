package commands

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestHubRejectsUnimplementedFeatureGates(t *testing.T) {
	cmd := newHubCommand()
	cmd.SetArgs([]string{"--feature-gates", "ClusterProfile=true"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.ExecuteContext(t.Context())
	want := `unknown feature gate "ClusterProfile" (known gates: AddonManagement, CleanUpCompletedManifestWork, DefaultClusterSet, EphemeralIdentity, ManagedClusterAutoApproval, ManifestWorkReplicaSet, NilExecutorValidating)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

func TestHubHelpListsOnlyImplementedGates(t *testing.T) {
	cmd := newHubCommand()
	var out bytes.Buffer
	cmd.SetArgs([]string{"--help"})
	cmd.SetOut(&out)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, want := range []string{"DefaultClusterSet=true|false", "ManagedClusterAutoApproval=true|false", "CleanUpCompletedManifestWork=true|false", "ManifestWorkReplicaSet=true|false",
		"--autoapprove-users U --autoapprove-cluster-patterns '*'"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, absent := range []string{"ClusterProfile", "ClusterImporter", "ResourceCleanup", "V1beta1CSRAPICompatibility", "AllAlpha"} {
		if strings.Contains(help, absent) {
			t.Errorf("--help offers %s, which the hub does not implement", absent)
		}
	}
}

func TestHubRefusesUnknownComponents(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"registration-controller,placement", `--components: unknown component "placement" (valid: all, registration-controller, registration-webhook, work-webhook, work-controller, placement-controller, addon-manager)`},
		{"all,work-webhook", `--components: "all" cannot be combined with other components`},
	} {
		cmd := newHubCommand()
		cmd.SetArgs([]string{"--components", tc.arg})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--components %s: got %v, want an error containing %q", tc.arg, err, tc.want)
		}
	}
}

// TestHubRefusesBadWebhookNames: a webhook configuration or Secret name the API server (or
// the Service the APIServices need) would refuse is an error naming the flag.
func TestHubRefusesBadWebhookNames(t *testing.T) {
	for _, tc := range []struct{ flag, arg, want string }{
		{"--webhook-configuration-name", "Work_Webhook", `--webhook-configuration-name "Work_Webhook": must be a lowercase DNS label`},
		{"--webhook-secret-name", "certs/x", `--webhook-secret-name "certs/x"`},
	} {
		cmd := newHubCommand()
		cmd.SetArgs([]string{tc.flag, tc.arg})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: got %v, want an error containing %q", tc.flag, tc.arg, err, tc.want)
		}
	}
}
