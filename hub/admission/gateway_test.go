package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/core/policy"
)

const gatewayDenyDelete = `package flotilla.gateway.no_delete

deny contains msg if {
	input.request.verb == "delete"
	msg := sprintf("no delete on %s", [input.cluster.name])
}
`

func gatewayRequest(user, verb string, groups ...string) *policy.GatewayInput {
	return &policy.GatewayInput{
		User:    policy.UserInfo{Username: user, Groups: groups},
		Cluster: policy.GatewayCluster{Name: "cluster1"},
		Request: policy.GatewayRequest{Method: "DELETE", Verb: verb, Path: "/api/v1/namespaces/default/configmaps/x"},
	}
}

func TestEvaluateGateway(t *testing.T) {
	embedded := policy.Source{Name: policy.EmbeddedSourceName}
	empty, err := policy.Compile(t.Context(), []policy.Source{embedded}, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(empty, HandlerOptions{AwaitLoad: true, EvalTimeout: 200 * time.Millisecond,
		HubIdentity: func(context.Context) string { return "system:serviceaccount:hub:flotilla" }})
	if err != nil {
		t.Fatal(err)
	}

	// Before the first load: refused (fail closed) after the evaluation deadline, except for
	// the privileged, whom no ConfigMap policy judges.
	if _, err := h.EvaluateGateway(t.Context(), gatewayRequest("alice", "get")); !errors.Is(err, ErrNotLoaded) {
		t.Errorf("before the first load: %v, want ErrNotLoaded", err)
	}
	if d, err := h.EvaluateGateway(t.Context(), gatewayRequest("root", "delete", "system:masters")); err != nil || !d.Allowed() {
		t.Errorf("system:masters before the load: %+v, %v", d, err)
	}

	// The Loader's set (ConfigMaps compiled with the embedded policies) carries the gateway
	// policies: SetPolicies is the hand-off.
	set, err := policy.Compile(t.Context(), []policy.Source{embedded, {Name: "configmap ns/gw", Files: []policy.File{{Name: "g.rego", Content: gatewayDenyDelete}}}}, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	h.SetPolicies(set)
	d, err := h.EvaluateGateway(t.Context(), gatewayRequest("alice", "delete"))
	if err != nil || d.Allowed() || len(d.Denials) != 1 || d.Denials[0].Policy != "no_delete" || d.Denials[0].Message != "no delete on cluster1" {
		t.Errorf("alice's delete: %+v, %v", d, err)
	}
	if d, err := h.EvaluateGateway(t.Context(), gatewayRequest("alice", "get")); err != nil || !d.Allowed() {
		t.Errorf("alice's get: %+v, %v", d, err)
	}
	for _, u := range []*policy.GatewayInput{gatewayRequest("root", "delete", "system:masters"), gatewayRequest("system:serviceaccount:hub:flotilla", "delete")} {
		if d, err := h.EvaluateGateway(t.Context(), u); err != nil || !d.Allowed() || len(d.Evaluated) != 0 {
			t.Errorf("%s is privileged: %+v, %v", u.User.Username, d, err)
		}
	}
}
