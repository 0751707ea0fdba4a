package commands

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClusterSetArguments checks the cluster-set commands' argument errors (clusteradm's
// wording where it has one), all given before any request to the hub.
func TestClusterSetArguments(t *testing.T) {
	noHub := filepath.Join(t.TempDir(), "absent.kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "clusterset"}, "the name of the clusterset must be specified"},
		{[]string{"create", "clusterset", "a", "b"}, "only one clusterset can be specified"},
		{[]string{"create", "clusterset", "Bad_Name"}, `clusterset name "Bad_Name" is invalid`},
		{[]string{"clusterset", "set", "--clusters", "c1"}, "the name of the clusterset must be specified"},
		{[]string{"clusterset", "set", "s1"}, "at least one cluster (--clusters) or namespace (--namespaces) must be specified"},
		{[]string{"clusterset", "set", "s1", "--namespaces", "app,App"}, `--namespaces: namespace name "App" is invalid`},
		{[]string{"clusterset", "set", "s1", "--clusters", "c1,,c2"}, "--clusters: cluster 2 of 3 is an empty name"},
		{[]string{"clusterset", "set", "s1", "--clusters", "C1"}, `--clusters: cluster name "C1" is invalid`},
		{[]string{"clusterset", "bind", "s1", "s2"}, "only one clusterset can be specified"},
		{[]string{"clusterset", "bind", "s1", "--namespace", ""}, "--namespace: namespace name must be specified"},
		{[]string{"clusterset", "unbind", "s1", "--namespace", "a.b"}, `--namespace: namespace name "a.b" is invalid`},
		// Valid arguments get as far as the kubeconfig.
		{[]string{"clusterset", "bind", "s1"}, "absent.kubeconfig"},
	} {
		_, _, err := flotilla(t.Context(), append(tc.args, "--kubeconfig", noHub)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flotilla %s: error %v, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestClusterSetDryRunNote checks that --dry-run says so first, as clusteradm does.
func TestClusterSetDryRunNote(t *testing.T) {
	noHub := filepath.Join(t.TempDir(), "absent.kubeconfig")
	out, _, err := flotilla(t.Context(), "clusterset", "unbind", "s1", "--dry-run", "--kubeconfig", noHub)
	if err == nil || !strings.HasPrefix(out, dryRunNote+"\n") {
		t.Errorf("stdout %q, error %v: want the dry-run note, then the kubeconfig error", out, err)
	}
}
