package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gatewayRequestYAML is alice, in team-a, deleting a ConfigMap on cluster1 through the gateway.
const gatewayRequestYAML = `kind: GatewayRequest
user: {username: alice, groups: [team-a, system:authenticated]}
cluster: {name: cluster1, labels: {env: dev}, clusterSets: [default]}
request:
  method: DELETE
  verb: delete
  path: /api/v1/namespaces/default/configmaps/app
  isResourceRequest: true
  apiVersion: v1
  resource: configmaps
  namespace: default
  name: app
`

// examplesDir is policies/examples of this checkout.
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "policies", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPolicyEvalGatewayRequest(t *testing.T) {
	ex := examplesDir(t)
	pol := writeFiles(t, map[string]string{
		"gateway_team_dev_readonly.rego": mustRead(t, filepath.Join(ex, "gateway_team_dev_readonly.rego")),
	})
	reqs := writeFiles(t, map[string]string{
		"delete.yaml":  gatewayRequestYAML,
		"list.yaml":    strings.Replace(strings.Replace(gatewayRequestYAML, "verb: delete", "verb: list", 1), "method: DELETE", "method: GET", 1),
		"masters.yaml": strings.Replace(gatewayRequestYAML, "groups: [team-a, system:authenticated]", "groups: [team-a, system:masters]", 1),
		"unknown.yaml": strings.Replace(gatewayRequestYAML, "verb: delete", "verb: delete\n  verbs: [x]", 1),
		"noverb.yaml":  strings.Replace(gatewayRequestYAML, "  verb: delete\n", "", 1),
		"broken.yaml":  strings.Replace(gatewayRequestYAML, "name: app", "name: not-a-number", 1),
	})
	broken := writeFiles(t, map[string]string{"b.rego": "package flotilla.gateway.numbers\n\ndeny contains \"x\" if to_number(input.request.name) > 1\n"})
	req := func(name string) string { return filepath.Join(reqs, name) }
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		want     []string
		notWant  []string
	}{
		{name: "denied", args: []string{"-f", req("delete.yaml"), pol}, wantCode: 1, wantErr: "request denied by policy gateway_team_dev_readonly",
			want: []string{"DENIED\n", "gateway request: DELETE /api/v1/namespaces/default/configmaps/app (verb delete) to cluster cluster1 by alice\n",
				"  policy gateway_team_dev_readonly (" + pol + "): members of team-a may only read through the gateway (get, list, watch), not delete /api/v1/namespaces/default/configmaps/app on cluster cluster1\n",
				"evaluated: gateway_team_dev_readonly (" + pol + ")\n"}},
		{name: "allowed", args: []string{"-f", req("list.yaml"), pol}, want: []string{"ALLOWED\n", "evaluated: gateway_team_dev_readonly"}, notWant: []string{"denials:"}},
		{name: "system:masters", args: []string{"-f", req("masters.yaml"), pol}, want: []string{"ALLOWED\n", "only the embedded defaults judge"}, notWant: []string{"evaluated:"}},
		{name: "no gateway policy", args: []string{"-f", req("delete.yaml")}, want: []string{"ALLOWED\n", "no gateway policy (package under flotilla.gateway) in these files\n"}},
		{name: "an evaluation error fails closed", args: []string{"-f", req("broken.yaml"), broken}, wantCode: 2, wantErr: "policy numbers: evaluation failed",
			want: []string{"DENIED\n", "errors (each denies the request: policies fail closed):\n  policy numbers ("}},
		{name: "unknown field", args: []string{"-f", req("unknown.yaml"), pol}, wantCode: 2, wantErr: `unknown.yaml: GatewayRequest: json: unknown field "verbs"`},
		{name: "no verb", args: []string{"-f", req("noverb.yaml"), pol}, wantCode: 2, wantErr: "noverb.yaml: GatewayRequest: request.verb is missing"},
		{name: "cluster namespaces do not apply", args: []string{"-f", req("delete.yaml"), "--cluster-namespaces", "x", pol}, wantCode: 2, wantErr: "--cluster-namespaces applies to admission requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := NewRoot()
			var out, errw syncBuffer
			root.SetArgs(append([]string{"policy", "eval"}, tc.args...))
			root.SetOut(&out)
			root.SetErr(&errw)
			err := root.ExecuteContext(t.Context())
			if got := ExitCode(err); got != tc.wantCode {
				t.Errorf("exit status %d (error %v), want %d\n%s", got, err, tc.wantCode, out.String())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}

	out, _, err := flotilla(t.Context(), "policy", "eval", "-o", "json", "-f", req("delete.yaml"), pol)
	if ExitCode(err) != 1 {
		t.Fatalf("-o json: exit status %d (%v)\n%s", ExitCode(err), err, out)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if rep.Allowed || rep.Request.Cluster != "cluster1" || rep.Request.Path != "/api/v1/namespaces/default/configmaps/app" || len(rep.Denials) != 1 {
		t.Errorf("-o json: %+v", rep)
	}
}

// flotilla policy test runs gateway policies' tests and lists them with -v.
func TestPolicyTestGatewayPolicies(t *testing.T) {
	ex := examplesDir(t)
	dir := writeFiles(t, map[string]string{
		"gateway_team_dev_readonly.rego":      mustRead(t, filepath.Join(ex, "gateway_team_dev_readonly.rego")),
		"gateway_team_dev_readonly_test.rego": mustRead(t, filepath.Join(ex, "gateway_team_dev_readonly_test.rego")),
	})
	out, _, err := flotilla(t.Context(), "policy", "test", "-v", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"PASS: 5/5\n", "test_team_cannot_delete: PASS", "gateway policies:\n  gateway_team_dev_readonly (" + dir + ")\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	bad := writeFiles(t, map[string]string{
		"m.rego":      "package flotilla.gateway.m\n\nmatch := []\n\ndeny contains \"x\" if false\n",
		"m_test.rego": "package flotilla.gateway.m_test\n\ntest_ok if true\n",
	})
	out, _, err = flotilla(t.Context(), "policy", "test", bad)
	if err == nil || !strings.Contains(out, "the hub would refuse these policies") || !strings.Contains(err.Error(), "package flotilla.gateway.m has a match rule") {
		t.Errorf("a gateway policy with a match rule: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
