package main

import (
	"context"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const (
	bootstrap      = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
	bootstrapGroup = "system:bootstrappers:managedcluster"
	cfg            = `{"clusterNamePatterns": ["dev-*", "lab-[0-9]"], "users": ["` + bootstrap + `"], "groups": ["` + bootstrapGroup + `"]}`
)

func registrationOf(cluster string) abi.CSRReview {
	return abi.CSRReview{
		Name:       "csr-xyz",
		SignerName: "kubernetes.io/kube-apiserver-client",
		Username:   bootstrap,
		Groups:     []string{"system:serviceaccounts", "system:serviceaccounts:open-cluster-management", "system:authenticated"},
		Usages:     []string{"digital signature", "key encipherment", "client auth"},
		Subject: abi.CSRSubject{CommonName: "system:open-cluster-management:" + cluster + ":agent1",
			Organizations: []string{"system:open-cluster-management:" + cluster, "system:open-cluster-management:managed-clusters"}},
		ClusterName: cluster,
	}
}

var cases = []struct {
	name string
	req  func() abi.CSRReview
	want abi.CSRDecisionKind
	msg  string
}{
	{"matching first registration", func() abi.CSRReview { return registrationOf("dev-eu1") }, abi.CSRApprove, "matches the auto-approval rules"},
	{"second pattern", func() abi.CSRReview { return registrationOf("lab-7") }, abi.CSRApprove, ""},
	{"name matches no pattern", func() abi.CSRReview { return registrationOf("prod-eu1") }, abi.CSRAbstain, "matches no pluginConfig.clusterNamePatterns"},
	{"unlisted user", func() abi.CSRReview {
		r := registrationOf("dev-eu1")
		r.Username = "system:serviceaccount:default:someone"
		return r
	}, abi.CSRAbstain, "is not in pluginConfig.users, nor in one of pluginConfig.groups"},
	{"bootstrap token in a listed group", func() abi.CSRReview {
		r := registrationOf("dev-eu1")
		r.Username = "system:bootstrap:abc123"
		r.Groups = []string{"system:bootstrappers", bootstrapGroup, "system:authenticated"}
		return r
	}, abi.CSRApprove, "registered by system:bootstrap:abc123"},
	{"bootstrap token in no listed group", func() abi.CSRReview {
		r := registrationOf("dev-eu1")
		r.Username = "system:bootstrap:abc123"
		r.Groups = []string{"system:bootstrappers", "system:authenticated"}
		return r
	}, abi.CSRAbstain, "is not in pluginConfig.users"},
	{"renewal", func() abi.CSRReview {
		r := registrationOf("dev-eu1")
		r.Renewal, r.ClusterAccepted = true, true
		return r
	}, abi.CSRAbstain, "renewals are not auto-approved"},
	{"subject of another cluster", func() abi.CSRReview {
		r := registrationOf("dev-eu1")
		r.Subject.CommonName = "system:open-cluster-management:prod-1:agent1"
		return r
	}, abi.CSRAbstain, "subject is not an agent identity of cluster dev-eu1"},
}

func TestReviewCSR(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := sdktest.ReviewCSR(&autoApprove{}, sdktest.NewHost(cfg), tc.req())
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != tc.want || !strings.Contains(d.Message, tc.msg) {
				t.Fatalf("decision %s %q, want %s with %q", d.Decision, d.Message, tc.want, tc.msg)
			}
		})
	}
}

func TestValidateConfig(t *testing.T) {
	for _, tc := range []struct{ config, wantErr string }{
		{cfg, ""},
		{"", "pluginConfig is required"},
		{`"dev-*"`, "must be a JSON object"},
		{`{"clusterNamePatterns": [], "users": ["u"]}`, "pluginConfig.clusterNamePatterns: must list at least one pattern"},
		{`{"clusterNamePatterns": ["dev-*"]}`, "must list at least one user or group"},
		{`{"clusterNamePatterns": ["dev-*"], "users": [], "groups": []}`, "must list at least one user or group"},
		{`{"clusterNamePatterns": ["dev-*"], "groups": ["g"]}`, ""},
		{`{"clusterNamePatterns": ["a"], "groups": ["g", ""]}`, "pluginConfig.groups[1]: must not be empty"},
		{`{"clusterNamePatterns": ["dev-["], "users": ["u"]}`, `pluginConfig.clusterNamePatterns[0]: "dev-[" is not a valid pattern`},
		{`{"clusterNamePatterns": ["a", ""], "users": ["u"]}`, "pluginConfig.clusterNamePatterns[1]: must not be empty"},
		{`{"clusterNamePatterns": ["a"], "users": [""]}`, "pluginConfig.users[0]: must not be empty"},
		{`{"clusterNamePatterns": ["a"], "users": [7]}`, "pluginConfig.users[0]: invalid JSON"},
		{`{"clusterNamePatterns": "a", "users": ["u"]}`, "pluginConfig.clusterNamePatterns: invalid JSON"},
		{`{"clusterNamePattern": ["a"], "users": ["u"]}`, `unknown field "clusterNamePattern"`},
	} {
		err := sdktest.ValidateConfig(&autoApprove{}, sdktest.NewHost(tc.config))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("config %s: unexpected error %v", tc.config, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("config %s: error %v, want one containing %q", tc.config, err, tc.wantErr)
		}
	}
}

// TestReviewWithoutConfigFails covers a host that skipped validate_config.
func TestReviewWithoutConfigFails(t *testing.T) {
	_, err := sdktest.ReviewCSR(&autoApprove{}, sdktest.NewHost(""), registrationOf("dev-eu1"))
	if err == nil || !strings.Contains(err.Error(), "pluginConfig is required") {
		t.Fatalf("error %v, want pluginConfig is required", err)
	}
}

func TestShippedModule(t *testing.T) {
	p, err := dist.Get("csr-autoapprove")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	m := wasmrun.Load(t, mod, abi.TypeCSRApproval, []byte(cfg))
	for _, tc := range cases {
		d, err := wasmrun.ReviewCSR(context.Background(), m, tc.req())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.Decision != tc.want || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("%s: decision %s %q, want %s with %q", tc.name, d.Decision, d.Message, tc.want, tc.msg)
		}
	}
}

// TestShippedModuleRejectsBadConfig checks the host reports validate_config's
// rejection, with the plugin's message, as ConfigRejected.
func TestShippedModuleRejectsBadConfig(t *testing.T) {
	p, err := dist.Get("csr-autoapprove")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	_, err = engine.Load(ctx, wasm.ModuleSpec{Name: "auto", Type: abi.TypeCSRApproval, Wasm: mod,
		Config: []byte(`{"clusterNamePatterns": ["dev-["], "users": ["u"]}`)})
	if wasm.LoadReasonOf(err) != wasm.ReasonConfigRejected || !strings.Contains(err.Error(), `"dev-[" is not a valid pattern`) {
		t.Fatalf("load error %v (reason %q), want ConfigRejected naming the pattern", err, wasm.LoadReasonOf(err))
	}
}
