package policies_test

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/policies"
)

func files(t *testing.T, fsys fs.FS, dirs ...string) []policy.File {
	t.Helper()
	var out []policy.File
	for _, dir := range dirs {
		fl, err := policy.FilesFromFS(fsys, dir)
		if err != nil {
			t.Fatalf("reading %s: %v", dir, err)
		}
		out = append(out, fl...)
	}
	return out
}

// run runs the sources' Rego tests with no authorizer (tests mock flotilla.authorized) and
// fails t unless all pass and at least one of them comes from the source named own.
func run(t *testing.T, own string, sources ...policy.Source) {
	t.Helper()
	results, err := policy.Test(context.Background(), sources, nil)
	if err != nil {
		t.Fatalf("compiling: %v", err)
	}
	n := 0
	for _, r := range results {
		if strings.HasPrefix(r.File, own+"/") {
			n++
		}
		if testing.Verbose() || !r.Pass && !r.Skip {
			t.Log(r)
		}
	}
	if failed := policy.Failed(results); len(failed) > 0 {
		t.Errorf("%d of %d Rego tests failed", len(failed), len(results))
	}
	if n == 0 {
		t.Errorf("no Rego tests of %s ran", own)
	}
}

func TestDefaults(t *testing.T) {
	run(t, policy.EmbeddedSourceName, policy.Source{Name: policy.EmbeddedSourceName, Files: files(t, policies.Defaults(), ".", "lib")})
}

// The examples import data.flotilla.lib, so they run with the defaults' library.
func TestExamples(t *testing.T) {
	run(t, "examples",
		policy.Source{Name: policy.EmbeddedSourceName, Files: files(t, policies.Defaults(), "lib")},
		policy.Source{Name: "examples", Files: files(t, policies.Examples(), ".")})
}

// Every policy file has a test file beside it, and every test file a policy file.
func TestEveryPolicyHasTests(t *testing.T) {
	all := append(files(t, policies.Defaults(), ".", "lib"), files(t, policies.Examples(), ".")...)
	have := map[string]bool{}
	for _, f := range all {
		have[f.Name] = true
	}
	for _, f := range all {
		if f.IsTest() {
			if !have[strings.TrimSuffix(f.Name, "_test.rego")+".rego"] {
				t.Errorf("%s tests no policy file", f.Name)
			}
		} else if !have[strings.TrimSuffix(f.Name, ".rego")+"_test.rego"] {
			t.Errorf("%s has no test file beside it", f.Name)
		}
	}
}

// The defaults, and the examples loaded beside them as a ConfigMap would be, compile into the
// expected policies (valid match rules, tests passing).
func TestCompile(t *testing.T) {
	defaults := policy.Source{Name: policy.EmbeddedSourceName, Files: files(t, policies.Defaults(), ".", "lib")}
	examples := policy.Source{Name: policy.ConfigMapSourceName("open-cluster-management-hub", "examples"), Files: files(t, policies.Examples(), ".")}
	for _, tc := range []struct {
		sources     []policy.Source
		want        []string
		wantGateway []string
	}{
		{[]policy.Source{defaults}, []string{"accept", "bind", "execute_as", "join", "override_target"}, nil},
		{[]policy.Source{defaults, examples}, []string{"accept", "bind", "execute_as", "join",
			"no_cluster_admin_executor", "no_clusterrolebindings", "override_registry_allowlist", "override_target", "placement_label", "team_executor_namespaces"},
			[]string{"gateway_team_dev_readonly"}},
	} {
		set, err := policy.Compile(context.Background(), tc.sources, policy.Options{})
		if err != nil {
			t.Fatalf("compiling %d sources: %v", len(tc.sources), err)
		}
		var got []string
		for _, p := range set.Policies() {
			got = append(got, p.Name)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("policies: got %v, want %v", got, tc.want)
		}
		got = nil
		for _, p := range set.GatewayPolicies() {
			got = append(got, p.Name)
		}
		if strings.Join(got, " ") != strings.Join(tc.wantGateway, " ") {
			t.Errorf("gateway policies: got %v, want %v", got, tc.wantGateway)
		}
	}
}
