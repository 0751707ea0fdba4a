package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/policy"
)

// teamPolicy denies an unlabelled Placement unless the user may create placements/unlabelled;
// it uses the embedded library.
const teamPolicy = `package flotilla.admission.needs_team

import data.flotilla.lib

match := [{"group": "cluster.open-cluster-management.io", "resources": ["placements"], "operations": ["CREATE", "UPDATE"]}]

deny contains msg if {
	not input.object.metadata.labels.team
	not lib.allowed({"verb": "create", "group": "cluster.open-cluster-management.io", "resource": "placements", "subresource": "unlabelled", "namespace": input.namespace})
	msg := sprintf("Placement %s/%s: metadata.labels.team is required", [input.namespace, input.name])
}

warn contains sprintf("placement in cluster namespace %s", [input.clusterNamespace]) if input.clusterNamespace != ""
`

const teamPolicyTest = `package flotilla.admission.needs_team_test

import data.flotilla.admission.needs_team

no(_, _) := false

yes(_, _) := true

unlabelled := {"user": {"username": "a"}, "namespace": "ns", "name": "p", "object": {"metadata": {}}}

test_unlabelled_denied if {
	needs_team.deny == {"Placement ns/p: metadata.labels.team is required"} with input as unlabelled
		with flotilla.authorized as no
}

test_unlabelled_allowed_with_the_right if {
	count(needs_team.deny) == 0 with input as unlabelled with flotilla.authorized as yes
}

test_labelled if {
	count(needs_team.deny) == 0 with input as {"user": {"username": "a"}, "object": {"metadata": {"labels": {"team": "x"}}}}
}
`

// failingTest expects the wrong message.
const failingTest = `package flotilla.admission.needs_team_fail_test

import data.flotilla.admission.needs_team

test_wrong_message if {
	needs_team.deny == {"something else"} with input as {"user": {"username": "a"}, "namespace": "ns", "name": "p", "object": {"metadata": {}}}
		with flotilla.authorized as false
}
`

// standalone uses nothing of the embedded defaults.
const standalone = `package flotilla.admission.no_delete

match := [{"group": "cluster.open-cluster-management.io", "resources": ["managedclustersets"], "operations": ["DELETE"]}]

deny contains "managed cluster sets are not deleted here" if input.user.username != "admin"
`

const standaloneTest = `package flotilla.admission.no_delete_test

import data.flotilla.admission.no_delete

test_denied if {
	count(no_delete.deny) == 1 with input as {"user": {"username": "bob"}}
}

test_admin if {
	count(no_delete.deny) == 0 with input as {"user": {"username": "admin"}}
}
`

// writeFiles writes name → content under a new temporary directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPolicyTest(t *testing.T) {
	ok := writeFiles(t, map[string]string{"needs_team.rego": teamPolicy, "needs_team_test.rego": teamPolicyTest})
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" for success
		want    []string
		notWant []string
	}{
		{name: "passing", args: []string{ok}, want: []string{"PASS: 3/3\n"}, notWant: []string{"test_labelled", "policies:"}},
		{name: "passing verbose", args: []string{"-v", ok},
			want: []string{
				filepath.Join(ok, "needs_team_test.rego") + ":\n",
				"data.flotilla.admission.needs_team_test.test_unlabelled_denied: PASS",
				"data.flotilla.admission.needs_team_test.test_labelled: PASS",
				"PASS: 3/3\n",
				"policies:\n  needs_team (" + ok + "): cluster.open-cluster-management.io/{placements} CREATE,UPDATE",
			},
			// The defaults' own tests are not run.
			notWant: []string{"embedded/", "execute_as"}},
		{name: "files as arguments", args: []string{filepath.Join(ok, "needs_team.rego"), filepath.Join(ok, "needs_team_test.rego")},
			want: []string{"PASS: 3/3\n"}},
		{name: "a failing test", wantErr: "1 of 4 tests failed",
			args:    []string{ok, writeFiles(t, map[string]string{"fail_test.rego": failingTest})},
			want:    []string{"data.flotilla.admission.needs_team_fail_test.test_wrong_message: FAIL", "fail_test.rego:5\n", "PASS: 3/4\nFAIL: 1/4\n"},
			notWant: []string{"test_labelled"}},
		{name: "a test in error", wantErr: "1 of 3 tests failed",
			args: []string{writeFiles(t, map[string]string{"p.rego": standalone, "p_test.rego": standaloneTest +
				"\ntest_error if {\n\tflotilla.authorized({\"username\": \"a\"}, {\"verb\": \"get\"})\n}\n"})},
			want: []string{"test_error: ERROR", "p_test.rego:13\n", "flotilla.authorized is not available here (in tests, mock it", "PASS: 2/3\nFAIL: 1/3\n"}},
		{name: "a compile error names the file and line", wantErr: "broken.rego:4: rego_parse_error",
			args: []string{writeFiles(t, map[string]string{"broken.rego": "package flotilla.admission.broken\n\ndeny contains \"x\" if {\n"})}},
		{name: "an undefined reference names the file", wantErr: "p.rego:9: rego_type_error: undefined function data.flotilla.lib.nope",
			args: []string{writeFiles(t, map[string]string{"p.rego": strings.Replace(teamPolicy, "lib.allowed(", "lib.nope(", 1), "p_test.rego": teamPolicyTest})}},
		{name: "no tests", wantErr: "no tests in",
			args: []string{writeFiles(t, map[string]string{"p.rego": standalone})}, want: []string{"no tests found in"}},
		{name: "no match rule is refused as the hub would", wantErr: "package flotilla.admission.no_delete has no match rule",
			args: []string{writeFiles(t, map[string]string{"p.rego": strings.Replace(standalone, "match :=", "matches :=", 1), "p_test.rego": standaloneTest})},
			want: []string{"PASS: 2/2\n", "the hub would refuse these policies:\n"}},
		{name: "an unserved resource is refused as the hub would", wantErr: `"secrets" is not served`,
			args: []string{writeFiles(t, map[string]string{"p.rego": strings.Replace(standalone, `"managedclustersets"`, `"secrets"`, 1), "p_test.rego": standaloneTest})}},
		{name: "a default package is refused", wantErr: "package flotilla.lib is one of the hub's embedded defaults",
			args: []string{writeFiles(t, map[string]string{"lib.rego": "package flotilla.lib\n\nx := 1\n", "p.rego": standalone, "p_test.rego": standaloneTest})}},
		{name: "no defaults", args: []string{"--no-defaults", writeFiles(t, map[string]string{"p.rego": standalone, "p_test.rego": standaloneTest})},
			want: []string{"PASS: 2/2\n"}},
		{name: "no defaults and the library missing", wantErr: "data.flotilla.lib", args: []string{"--no-defaults", ok}},
		{name: "not a rego file", wantErr: "not a .rego file", args: []string{filepath.Join(writeFiles(t, map[string]string{"p.txt": "x"}), "p.txt")}},
		{name: "an empty directory", wantErr: "no .rego file in the directory", args: []string{t.TempDir()}},
		{name: "a missing file", wantErr: "missing.rego", args: []string{"missing.rego"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := flotilla(t.Context(), append([]string{"policy", "test"}, tc.args...)...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("flotilla policy test %v: %v\nstdout:\n%s\nstderr:\n%s", tc.args, err, out, errOut)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("flotilla policy test %v: error %v, want one containing %q\nstdout:\n%s", tc.args, err, tc.wantErr, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPolicyTestCurrentDirectory: without arguments, test tests ".".
func TestPolicyTestCurrentDirectory(t *testing.T) {
	t.Chdir(writeFiles(t, map[string]string{"sub/p.rego": standalone, "sub/p_test.rego": standaloneTest}))
	out, _, err := flotilla(t.Context(), "policy", "test", "-v")
	if err != nil || !strings.Contains(out, "PASS: 2/2") || !strings.Contains(out, "sub/p_test.rego:\n") {
		t.Fatalf("flotilla policy test: %v\n%s", err, out)
	}
}

const placementReviewYAML = `apiVersion: admission.k8s.io/v1
kind: AdmissionReview
request:
  uid: "1"
  operation: CREATE
  kind: {group: cluster.open-cluster-management.io, version: v1beta1, kind: Placement}
  resource: {group: cluster.open-cluster-management.io, version: v1beta1, resource: placements}
  namespace: cluster1
  name: p
  userInfo: {username: alice, groups: [team-a]}
  object:
    apiVersion: cluster.open-cluster-management.io/v1beta1
    kind: Placement
    metadata: {name: p, namespace: cluster1}
`

// placementRequestJSON is the same request, bare, in JSON.
const placementRequestJSON = `{"uid": "1", "operation": "CREATE",
 "kind": {"group": "cluster.open-cluster-management.io", "version": "v1beta1", "kind": "Placement"},
 "resource": {"group": "cluster.open-cluster-management.io", "version": "v1beta1", "resource": "placements"},
 "namespace": "cluster1", "name": "p", "userInfo": {"username": "alice", "groups": ["team-a"]},
 "object": {"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "metadata": {"name": "p", "namespace": "cluster1"}}}`

func TestPolicyEval(t *testing.T) {
	pol := writeFiles(t, map[string]string{"needs_team.rego": teamPolicy, "needs_team_test.rego": teamPolicyTest})
	reqs := writeFiles(t, map[string]string{
		"review.yaml":  placementReviewYAML,
		"request.json": placementRequestJSON,
		"labelled.json": strings.Replace(placementRequestJSON, `"metadata": {"name": "p", "namespace": "cluster1"}`,
			`"metadata": {"name": "p", "namespace": "cluster1", "labels": {"team": "a"}}`, 1),
		"delete.json":      strings.Replace(placementRequestJSON, `"CREATE"`, `"DELETE"`, 1),
		"status.json":      strings.Replace(placementRequestJSON, `"name": "p",`, `"name": "p", "subResource": "status",`, 1),
		"masters.json":     strings.Replace(placementRequestJSON, `"groups": ["team-a"]`, `"groups": ["system:masters"]`, 1),
		"unknown.json":     strings.Replace(placementRequestJSON, `"uid": "1",`, `"uid": "1", "namespaec": "x",`, 1),
		"nooperation.yaml": strings.Replace(placementReviewYAML, "operation: CREATE", "", 1),
		"v1beta1.yaml":     strings.Replace(placementReviewYAML, "admission.k8s.io/v1", "admission.k8s.io/v1beta2", 1),
		"noresource.json":  strings.Replace(placementRequestJSON, `"resource": "placements"`, `"resource": ""`, 1),
		"manifestwork.yaml": `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: w, namespace: cluster1}
`,
	})
	req := func(name string) string { return filepath.Join(reqs, name) }
	deniedLine := "  policy needs_team (" + pol + "): Placement cluster1/p: metadata.labels.team is required\n"
	question := "  policy needs_team asked: may alice (groups team-a) create group=cluster.open-cluster-management.io resource=placements subresource=unlabelled namespace=cluster1 -> "
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
		want     []string
		notWant  []string
	}{
		{name: "denied, YAML review", args: []string{"-f", req("review.yaml"), pol}, wantCode: 1, wantErr: "request denied by policy needs_team",
			want: []string{"DENIED\n", "request: CREATE cluster.open-cluster-management.io/placements cluster1/p by alice (clusterNamespace \"\")\n",
				"denials:\n" + deniedLine, "flotilla.authorized (--authorize=deny):\n" + question + "false\n", "evaluated: needs_team (" + pol + ")\n"},
			notWant: []string{"warnings:"}},
		{name: "allowed, JSON request, --authorize=allow", args: []string{"-f", req("request.json"), "--authorize=allow", pol},
			want:    []string{"ALLOWED\n", "flotilla.authorized (--authorize=allow):\n" + question + "true\n", "evaluated: needs_team (" + pol + ")\n"},
			notWant: []string{"denials:"}},
		{name: "allowed without a question", args: []string{"-f", req("labelled.json"), pol},
			want: []string{"ALLOWED\n", "evaluated: needs_team"}, notWant: []string{"flotilla.authorized"}},
		{name: "cluster namespaces", args: []string{"-f", req("request.json"), "--authorize", "allow", "--cluster-namespaces", "cluster0,cluster1", pol},
			want: []string{"ALLOWED\n", `(clusterNamespace "cluster1")`, "warnings:\n  policy needs_team (" + pol + "): placement in cluster namespace cluster1\n"}},
		{name: "standard input", args: []string{"-f", "-", pol}, wantCode: 1, wantErr: "denied", want: []string{"DENIED\n"}},
		{name: "no policy matches", args: []string{"-f", req("delete.json"), pol},
			want: []string{"ALLOWED\n", "no policy matches cluster.open-cluster-management.io/placements DELETE\n"}, notWant: []string{"evaluated:"}},
		{name: "subresources reach no policy", args: []string{"-f", req("status.json"), pol},
			want: []string{"ALLOWED\n", "the hub sends no subresource request (placements/status) to policies\n"}},
		{name: "system:masters is judged by the defaults only", args: []string{"-f", req("masters.json"), pol},
			want: []string{"ALLOWED\n", "only the embedded defaults judge"}, notWant: []string{"evaluated:"}},
		{name: "an evaluation error", args: []string{"-f", req("review.yaml"), "--timeout", "1ns", pol}, wantCode: 2,
			wantErr: "evaluation timed out", want: []string{"DENIED\n", "errors (each denies the request: policies fail closed):\n  policy needs_team (" + pol + "): evaluation timed out"}},
		{name: "unknown field", args: []string{"-f", req("unknown.json")}, wantCode: 2, wantErr: `unknown.json: AdmissionRequest: json: unknown field "namespaec"`},
		{name: "no operation", args: []string{"-f", req("nooperation.yaml")}, wantCode: 2, wantErr: "nooperation.yaml: request.operation is missing"},
		{name: "no resource", args: []string{"-f", req("noresource.json")}, wantCode: 2, wantErr: "noresource.json: resource.resource is missing"},
		{name: "wrong apiVersion", args: []string{"-f", req("v1beta1.yaml")}, wantCode: 2, wantErr: `v1beta1.yaml: apiVersion "admission.k8s.io/v1beta2": want admission.k8s.io/v1`},
		{name: "an object rather than a request", args: []string{"-f", req("manifestwork.yaml")}, wantCode: 2, wantErr: "manifestwork.yaml: kind ManifestWork: want an AdmissionReview"},
		{name: "no -f", args: []string{pol}, wantCode: 2, wantErr: "-f/--filename is required"},
		{name: "bad --authorize", args: []string{"-f", req("request.json"), "--authorize", "maybe"}, wantCode: 2, wantErr: `--authorize "maybe"`},
		{name: "bad --feature-gates", args: []string{"-f", req("request.json"), "--feature-gates", "NilExecutorValidating=yes please"}, wantCode: 2, wantErr: "--feature-gates"},
		{name: "bad -o", args: []string{"-f", req("request.json"), "-o", "yaml"}, wantCode: 2, wantErr: `-o/--output "yaml"`},
		{name: "unknown flag", args: []string{"-f", req("request.json"), "--authorise", "allow"}, wantCode: 2, wantErr: "unknown flag: --authorise"},
		{name: "a policy that does not compile", args: []string{"-f", req("request.json"), writeFiles(t, map[string]string{"b.rego": "package flotilla.admission.b\ndeny contains \"x\" if {\n"})},
			wantCode: 2, wantErr: "b.rego:3: rego_parse_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := NewRoot()
			var out, errw syncBuffer
			root.SetArgs(append([]string{"policy", "eval"}, tc.args...))
			root.SetOut(&out)
			root.SetErr(&errw)
			root.SetIn(strings.NewReader(placementReviewYAML))
			err := root.ExecuteContext(t.Context())
			if got := ExitCode(err); got != tc.wantCode {
				t.Errorf("exit status %d (error %v), want %d", got, err, tc.wantCode)
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
}

func TestPolicyEvalJSON(t *testing.T) {
	pol := writeFiles(t, map[string]string{"needs_team.rego": teamPolicy})
	reqFile := filepath.Join(writeFiles(t, map[string]string{"r.json": placementRequestJSON}), "r.json")
	out, _, err := flotilla(t.Context(), "policy", "eval", "-o", "json", "-f", reqFile, "--feature-gates", "NilExecutorValidating=true", pol)
	if ExitCode(err) != 1 {
		t.Fatalf("exit status %d (%v), want 1 (denied)\n%s", ExitCode(err), err, out)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	wantQ := authQuestion{Policy: "needs_team", User: policy.UserInfo{Username: "alice", Groups: []string{"team-a"}},
		Attributes: policy.Attributes{Verb: "create", Group: "cluster.open-cluster-management.io", Resource: "placements", Subresource: "unlabelled", Namespace: "cluster1"}}
	if rep.Allowed || len(rep.Denials) != 1 || rep.Denials[0] != (evalMessage{Policy: "needs_team", Source: pol, Message: "Placement cluster1/p: metadata.labels.team is required"}) ||
		len(rep.Evaluated) != 1 || len(rep.Authorizations) != 1 || fmt.Sprint(rep.Authorizations[0]) != fmt.Sprint(wantQ) || rep.Authorize != "deny" {
		t.Errorf("report = %+v", rep)
	}
	// The input carries the hub's gates: the given one on, the others at their defaults.
	gates, err := parsePolicyFeatureGates([]string{"NilExecutorValidating=true"})
	if err != nil || !gates["NilExecutorValidating"] || !gates["DefaultClusterSet"] || gates["ManagedClusterAutoApproval"] {
		t.Errorf("gates = %v, %v", gates, err)
	}
	if _, err := parsePolicyFeatureGates([]string{"NilExecutorValidatng=true"}); err == nil || !strings.Contains(err.Error(), "the hub has no gate NilExecutorValidatng (its gates: ") {
		t.Errorf("a misspelt gate: %v", err)
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{fmt.Errorf("plain"), 1},
		{withStatus(exitDenied, fmt.Errorf("denied")), 1},
		{fmt.Errorf("wrapped: %w", withStatus(exitError, fmt.Errorf("x"))), 2},
		{withStatus(exitError, withStatus(exitDenied, fmt.Errorf("inner wins"))), 1},
	} {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestPolicyConfigMapName(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path  string
		isDir bool
		want  string
	}{
		{"team_policies.rego", false, "team-policies"},
		{"./dir/No_Public_LB.rego", false, "no-public-lb"},
		{"policies/team-a/", true, "team-a"},
		{"policies/team.a.v2", true, "team.a.v2"},
		{"policies/team.a.v2.rego", false, "team.a.v2"},
		{"_x_.rego", false, "x"},
		{"a..b.rego", false, "a.b"},
		{"équipe.rego", false, "quipe"},
		{filepath.Join(dir, "p"), true, "p"},
		{strings.Repeat("a", 300) + ".rego", false, strings.Repeat("a", 253)},
	} {
		got, err := policyConfigMapName(tc.path, tc.isDir)
		if err != nil || got != tc.want {
			t.Errorf("policyConfigMapName(%q) = %q, %v, want %q", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{"___.rego", "-.rego", "ü.rego"} {
		if got, err := policyConfigMapName(bad, false); err == nil || !strings.Contains(err.Error(), "pass --name") {
			t.Errorf("policyConfigMapName(%q) = %q, %v, want an error", bad, got, err)
		}
	}
	// "." is the current directory's name.
	t.Chdir(writeFiles(t, map[string]string{"My_Team/p.rego": standalone}))
	t.Chdir("My_Team")
	if got, err := policyConfigMapName(".", true); err != nil || got != "my-team" {
		t.Errorf(`policyConfigMapName(".") = %q, %v, want my-team`, got, err)
	}
}

func TestPolicyConfigMap(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a/p.rego": standalone, "a/p_test.rego": standaloneTest, "a/sub/q.rego": "package q\n", "a/README.md": "not policy",
		"b/p.rego": "package other\n", "c/bad key.rego": "package c\n",
	})
	files, err := readPolicyFiles([]string{filepath.Join(dir, "a")})
	if err != nil {
		t.Fatal(err)
	}
	cm := policyConfigMap("hub-ns", "team", files)
	if cm.Namespace != "hub-ns" || cm.Name != "team" || cm.Labels[policy.ConfigMapLabel] != policy.ConfigMapLabelValue {
		t.Errorf("ConfigMap %s/%s labels %v", cm.Namespace, cm.Name, cm.Labels)
	}
	if keys := slices.Sorted(maps.Keys(cm.Data)); !slices.Equal(keys, []string{"p.rego", "p_test.rego", "q.rego"}) || cm.Data["p.rego"] != standalone {
		t.Errorf("data keys %v", keys)
	}
	// The hub sees the files under these keys.
	src := policy.SourceFromConfigMap(cm)
	if src.Name != "configmap hub-ns/team" || len(src.Files) != 3 {
		t.Errorf("source %+v", src)
	}

	_, err = readPolicyFiles([]string{filepath.Join(dir, "a"), filepath.Join(dir, "b", "p.rego")})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "a", "p.rego")+" and "+filepath.Join(dir, "b", "p.rego")+" have the same file name p.rego") {
		t.Errorf("duplicate base names: %v", err)
	}
	if _, err = readPolicyFiles([]string{filepath.Join(dir, "c")}); err == nil || !strings.Contains(err.Error(), `"bad key.rego" is not a valid ConfigMap data key`) {
		t.Errorf("bad key: %v", err)
	}
	if _, err = readPolicyFiles([]string{filepath.Join(dir, "a", "README.md")}); err == nil || !strings.Contains(err.Error(), "README.md: not a .rego file") {
		t.Errorf("not rego: %v", err)
	}
}

// TestPolicyPushChecksLocally: nothing reaches the hub when the tests fail, with or without a
// reachable hub (the kubeconfig here does not exist).
func TestPolicyPushChecksLocally(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	pol := writeFiles(t, map[string]string{"needs_team.rego": teamPolicy, "needs_team_test.rego": teamPolicyTest, "fail_test.rego": failingTest})
	_, errOut, err := flotilla(t.Context(), "policy", "push", pol, "--kubeconfig", missing)
	if err == nil || !strings.Contains(err.Error(), "local check failed, nothing pushed (--force pushes anyway): 1 of 4 tests failed") {
		t.Errorf("push of a failing policy: %v", err)
	}
	if !strings.Contains(errOut, "test_wrong_message: FAIL") {
		t.Errorf("push does not show the failing test:\n%s", errOut)
	}
	// With --force it goes on, to the (missing) hub.
	_, errOut, err = flotilla(t.Context(), "policy", "push", pol, "--force", "--kubeconfig", missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(errOut, "pushing anyway (--force)") {
		t.Errorf("push --force: %v\n%s", err, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{pol, "--name", "Bad_Name"}, `--name "Bad_Name" is not a valid ConfigMap name`},
		{[]string{pol, "--wait", "-1s"}, "--wait -1s must not be negative"},
		{[]string{filepath.Join(pol, "needs_team.rego")}, "no tests in configmap open-cluster-management-hub/needs-team"},
		{[]string{writeFiles(t, map[string]string{"p.rego": standalone})}, "no tests in configmap open-cluster-management-hub/"},
	} {
		if _, _, err := flotilla(t.Context(), append(append([]string{"policy", "push"}, tc.args...), "--kubeconfig", missing)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("push %v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// fakePolicyHub records what a hub records on the policy ConfigMaps of namespace: for each new
// version, PolicyRejected when its data mentions "fake-hub: reject", else PolicyLoaded; the
// ConfigMaps whose name starts with "ignored" get nothing. Verdicts alternate between the
// core/v1 recorder and the events.k8s.io/v1 API.
func fakePolicyHub(t *testing.T, ctx context.Context, kube kubernetes.Interface, namespace string) {
	t.Helper()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "fake-hub"})
	w, err := kube.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: policy.ConfigMapLabel + "=" + policy.ConfigMapLabelValue})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		n := 0
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || ev.Type == watch.Deleted || strings.HasPrefix(cm.Name, "ignored") {
				continue
			}
			reason, typ, msg := policy.EventReasonLoaded, corev1.EventTypeNormal, fmt.Sprintf("loaded %d files", len(cm.Data))
			for k, v := range cm.Data {
				if strings.Contains(v, "fake-hub: reject") {
					reason, typ, msg = policy.EventReasonRejected, corev1.EventTypeWarning, k+": package x is already defined by configmap other"
				}
			}
			if n++; n%2 == 1 {
				recorder.Event(cm, typ, reason, msg)
				continue
			}
			now := metav1.NowMicro()
			_, err := kube.EventsV1().Events(namespace).Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: cm.Name + "-", Namespace: namespace},
				EventTime:  now, ReportingController: "fake-hub", ReportingInstance: "fake-hub-1",
				Action: "Load", Reason: reason, Type: typ, Note: msg,
				Regarding: corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: namespace, Name: cm.Name,
					UID: cm.UID, ResourceVersion: cm.ResourceVersion},
			}, metav1.CreateOptions{})
			if err != nil && ctx.Err() == nil {
				t.Errorf("fake hub: recording an Event: %v", err)
			}
		}
	}()
}

// TestPolicyPushAgainstAPIServer pushes to a real API server, a fake hub recording the
// verdicts the real one records.
func TestPolicyPushAgainstAPIServer(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{ManagedClusters: 0})
	kube, err := kubernetes.NewForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	kc := fleet.Hub.KubeconfigPath
	ctx := t.Context()
	const ns = "policy-hub"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fakePolicyHub(t, ctx, kube, ns)
	push := func(args ...string) (string, string, error) {
		t.Helper()
		return flotilla(ctx, append(append([]string{"policy", "push"}, args...), "--kubeconfig", kc, "-n", ns)...)
	}
	dir := writeFiles(t, map[string]string{"Team_Policies/needs_team.rego": teamPolicy, "Team_Policies/needs_team_test.rego": teamPolicyTest,
		"extra/no_delete.rego": standalone, "extra/no_delete_test.rego": standaloneTest})
	team := filepath.Join(dir, "Team_Policies")

	// Created without waiting.
	out, errOut, err := push(team, "--wait", "0")
	if err != nil || !strings.HasPrefix(out, "configmap policy-hub/team-policies created (resourceVersion ") ||
		!strings.HasSuffix(out, "): needs_team.rego, needs_team_test.rego\n") {
		t.Fatalf("first push: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "team-policies", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[policy.ConfigMapLabel] != policy.ConfigMapLabelValue || cm.Data["needs_team.rego"] != teamPolicy || len(cm.Data) != 2 {
		t.Errorf("ConfigMap labels %v, keys %d", cm.Labels, len(cm.Data))
	}
	if i := slices.IndexFunc(cm.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == policyFieldManager }); i < 0 || cm.ManagedFields[i].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields %+v, want an Apply by %s", cm.ManagedFields, policyFieldManager)
	}

	// The same again: unchanged, and the verdict on that version is the fake hub's first Event.
	waitFor(t, ctx, "the fake hub's verdict on the first push", nil, func(ctx context.Context) (bool, string) {
		l, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) > 0, fmt.Sprint(err)
	})
	out, errOut, err = push(team)
	if err != nil || !strings.Contains(out, " unchanged (resourceVersion "+cm.ResourceVersion+")") || !strings.Contains(out, "PolicyLoaded: loaded 2 files\n") {
		t.Fatalf("unchanged push: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	// A changed version, with a file more (its verdict comes through events.k8s.io/v1).
	out, errOut, err = push(team, filepath.Join(dir, "extra"), "--name", "team-policies")
	if err != nil || !strings.Contains(out, "configmap policy-hub/team-policies configured") || !strings.Contains(out, "PolicyLoaded: loaded 4 files\n") {
		t.Fatalf("changed push: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	// The files left out are removed from the ConfigMap (through the core/v1 recorder).
	out, errOut, err = push(team)
	if err != nil || !strings.Contains(out, "PolicyLoaded: loaded 2 files\n") {
		t.Fatalf("push dropping files: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if cm, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "team-policies", metav1.GetOptions{}); err != nil || len(cm.Data) != 2 || cm.Data["no_delete.rego"] != "" {
		t.Errorf("after dropping files: %v, data keys %d", err, len(cm.Data))
	}

	// The hub rejects a version: push fails with the Event's message.
	rejected := writeFiles(t, map[string]string{"p.rego": standalone + "\n# fake-hub: reject\n", "p_test.rego": standaloneTest})
	out, errOut, err = push(rejected, "--name", "team-policies")
	if err == nil || !strings.Contains(err.Error(), "the hub rejected ConfigMap policy-hub/team-policies") ||
		!strings.Contains(err.Error(), "p.rego: package x is already defined by configmap other") || !strings.Contains(out, "PolicyRejected: ") {
		t.Fatalf("rejected push: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	// No hub judges it: the wait ends with an error saying what was awaited.
	start := time.Now()
	_, _, err = push(team, "--name", "ignored-policies", "--wait", "2s")
	if err == nil || !strings.Contains(err.Error(), "ConfigMap policy-hub/ignored-policies: no PolicyLoaded or PolicyRejected Event within 2s") {
		t.Errorf("push without a hub: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("push --wait 2s took %s", d)
	}

	// A namespace that does not exist.
	if _, _, err = flotilla(ctx, "policy", "push", team, "--kubeconfig", kc, "-n", "nowhere", "--wait", "0"); err == nil || !strings.Contains(err.Error(), `namespace "nowhere" does not exist`) {
		t.Errorf("push to a missing namespace: %v", err)
	}

	// policy eval --authorize=hub asks the API server, and finds the cluster namespace.
	evalAgainstHub(t, ctx, kube, fleet, kc)
}

// evalAgainstHub runs policy eval --authorize=hub: SubjectAccessReviews answer, and the
// request's namespace is a cluster namespace because a ManagedCluster of that name exists.
func evalAgainstHub(t *testing.T, ctx context.Context, kube kubernetes.Interface, fleet *environment.Fleet, kc string) {
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "unlabelled-placements"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"placements/unlabelled"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ManagedCluster's namespace, where team-a may create unlabelled placements.
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings("cluster1").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "cluster1"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "unlabelled-placements"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-a"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pol := writeFiles(t, map[string]string{"needs_team.rego": teamPolicy})
	reqs := writeFiles(t, map[string]string{
		"alice.yaml": placementReviewYAML,
		"bob.yaml":   strings.Replace(placementReviewYAML, "{username: alice, groups: [team-a]}", "{username: bob, groups: [team-b]}", 1),
	})
	out, _, err := flotilla(ctx, "policy", "eval", "-f", filepath.Join(reqs, "alice.yaml"), "--authorize=hub", "--kubeconfig", kc, pol)
	if err != nil || !strings.HasPrefix(out, "ALLOWED\n") || !strings.Contains(out, `(clusterNamespace "cluster1")`) ||
		!strings.Contains(out, "flotilla.authorized (--authorize=hub):\n  policy needs_team asked: may alice (groups team-a) create group=cluster.open-cluster-management.io resource=placements subresource=unlabelled namespace=cluster1 -> true\n") {
		t.Errorf("eval --authorize=hub for alice: %v\n%s", err, out)
	}
	out, _, err = flotilla(ctx, "policy", "eval", "-f", filepath.Join(reqs, "bob.yaml"), "--authorize=hub", "--kubeconfig", kc, pol)
	if ExitCode(err) != 1 || !strings.HasPrefix(out, "DENIED\n") || !strings.Contains(out, "subresource=unlabelled namespace=cluster1 -> false\n") {
		t.Errorf("eval --authorize=hub for bob: %v\n%s", err, out)
	}
	// --cluster-namespaces replaces the lookup.
	out, _, err = flotilla(ctx, "policy", "eval", "-f", filepath.Join(reqs, "alice.yaml"), "--authorize=hub", "--cluster-namespaces", "other", "--kubeconfig", kc, pol)
	if err != nil || !strings.Contains(out, `(clusterNamespace "")`) {
		t.Errorf("eval --authorize=hub --cluster-namespaces other: %v\n%s", err, out)
	}
}
