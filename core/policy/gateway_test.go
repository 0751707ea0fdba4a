package policy

import (
	"context"
	"strings"
	"testing"
	"time"
)

const gatewayPolicy = `package flotilla.gateway.readonly

deny contains msg if {
	not input.request.verb in {"get", "list", "watch"}
	msg := sprintf("%s may not %s %s on %s", [input.user.username, input.request.verb, input.request.path, input.cluster.name])
}
`

func gatewayInput(user, verb string) *GatewayInput {
	return &GatewayInput{
		User:    UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		Cluster: GatewayCluster{Name: "cluster1", Labels: map[string]string{"env": "dev"}, ClusterSets: []string{"default"}},
		Request: GatewayRequest{Method: "DELETE", Verb: verb, Path: "/api/v1/namespaces/default/configmaps/x", IsResourceRequest: true,
			APIVersion: "v1", Resource: "configmaps", Namespace: "default", Name: "x", Query: map[string][]string{"dryRun": {"All"}}},
	}
}

func TestGatewayPolicies(t *testing.T) {
	set, err := Compile(t.Context(), []Source{{Name: "t", Files: []File{{Name: "readonly.rego", Content: gatewayPolicy}, {Name: "needs_team.rego", Content: labelPolicy}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.GatewayPolicies()); n != 1 || set.GatewayPolicies()[0].Name != "readonly" || set.GatewayPolicies()[0].Source != "t" {
		t.Fatalf("gateway policies: %+v", set.GatewayPolicies())
	}
	// Gateway policies are not admission policies: no rules, no match.
	if len(set.Policies()) != 1 || set.Policies()[0].Name != "needs_team" {
		t.Errorf("admission policies: %+v", set.Policies())
	}
	d, err := set.EvaluateGateway(t.Context(), gatewayInput("alice", "get"), nil)
	if err != nil || !d.Allowed() || len(d.Evaluated) != 1 {
		t.Errorf("get: %+v, %v", d, err)
	}
	d, err = set.EvaluateGateway(t.Context(), gatewayInput("alice", "delete"), nil)
	if err != nil || d.Allowed() || len(d.Denials) != 1 || d.Denials[0].Message != "alice may not delete /api/v1/namespaces/default/configmaps/x on cluster1" {
		t.Errorf("delete: %+v, %v", d, err)
	}
	d, err = set.EvaluateGateway(t.Context(), gatewayInput("alice", "delete"), func(*Policy) bool { return true })
	if err != nil || !d.Allowed() || len(d.Evaluated) != 0 {
		t.Errorf("skipped: %+v, %v", d, err)
	}
}

func TestGatewayPolicyInputFields(t *testing.T) {
	const echo = `package flotilla.gateway.echo

deny contains sprintf("%v %v %v %v %v %v %v", [input.cluster.labels.env, input.cluster.clusterSets, input.request.query.dryRun, input.request.upgrade, input.request.resource, input.request.namespace, input.user.groups])
`
	set, err := Compile(t.Context(), []Source{{Name: "t", Files: []File{{Name: "echo.rego", Content: echo}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := set.EvaluateGateway(t.Context(), gatewayInput("alice", "get"), nil)
	if err != nil || len(d.Denials) != 1 {
		t.Fatalf("%+v, %v", d, err)
	}
	if want := `dev ["default"] ["All"] false configmaps default ["system:authenticated"]`; d.Denials[0].Message != want {
		t.Errorf("input as the policy saw it: %q, want %q", d.Denials[0].Message, want)
	}
}

func TestGatewayPolicyErrorsFailClosed(t *testing.T) {
	const broken = `package flotilla.gateway.broken

deny contains "never" if {
	to_number(input.request.name) > 1
}
`
	set, err := Compile(t.Context(), []Source{{Name: "t", Files: []File{{Name: "broken.rego", Content: broken}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := set.EvaluateGateway(t.Context(), gatewayInput("alice", "get"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed() || len(d.Errors) != 1 || d.Errors[0].Policy != "broken" || d.Errors[0].Timeout {
		t.Errorf("an evaluation error must deny: %+v", d)
	}

	slow := strings.Replace(strings.Replace(slowPolicy, "flotilla.admission.slow", "flotilla.gateway.slow", 1),
		`match := [{"group": "flotilla.dev", "resources": ["wasmplugins"], "operations": ["CREATE"]}]`, "", 1)
	slow = strings.ReplaceAll(slow, "input.object", "input.user.extra")
	set, err = Compile(t.Context(), []Source{{Name: "t", Files: []File{{Name: "slow.rego", Content: slow}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := gatewayInput("alice", "get")
	in.User.Extra = map[string][]string{}
	for i := range 400 {
		in.User.Extra[strings.Repeat("k", i+1)] = []string{"v"}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	d, err = set.EvaluateGateway(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed() || len(d.Errors) != 1 || !d.Errors[0].Timeout {
		t.Errorf("a policy past its deadline must deny as a timeout: %+v", d)
	}
}

func TestGatewayPolicyShape(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"package flotilla.gateway.m\n\nmatch := []\n\ndeny contains \"x\" if false\n", "has a match rule"},
		{"package flotilla.gateway.w\n\nwarn contains \"x\" if false\n\ndeny contains \"x\" if false\n", "only deny"},
		{"package flotilla.gateway.n\n\nallow := true\n", "has no deny rule"},
	} {
		_, err := Compile(t.Context(), []Source{{Name: "src", Files: []File{{Name: "p.rego", Content: tc.content}}}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "src") {
			t.Errorf("%q: error %v, want one naming the source and %q", tc.content, err, tc.want)
		}
	}
}
