package main

import (
	"context"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const agent = "system:open-cluster-management:cluster1:agent1"

// renewalOf returns a well-formed renewal request of cluster1's agent.
func renewalOf() abi.CSRReview {
	return abi.CSRReview{
		Name:       "csr-abc",
		SignerName: "kubernetes.io/kube-apiserver-client",
		Username:   agent,
		Groups:     []string{"system:open-cluster-management:cluster1", "system:open-cluster-management:managed-clusters", "system:authenticated"},
		Usages:     []string{"digital signature", "key encipherment", "client auth"},
		Subject: abi.CSRSubject{CommonName: agent,
			Organizations: []string{"system:open-cluster-management:cluster1", "system:open-cluster-management:managed-clusters"}},
		ClusterName: "cluster1", ClusterExists: true, ClusterAccepted: true, Renewal: true,
	}
}

var cases = []struct {
	name   string
	modify func(*abi.CSRReview)
	want   abi.CSRDecisionKind
	msg    string
}{
	{"renewal of an accepted cluster", func(*abi.CSRReview) {}, abi.CSRApprove, "renewal of " + agent},
	{"first registration", func(r *abi.CSRReview) {
		r.Renewal = false
		r.Username = "system:serviceaccount:open-cluster-management:cluster-bootstrap"
	}, abi.CSRAbstain, "not a renewal"},
	{"cluster not accepted", func(r *abi.CSRReview) { r.ClusterAccepted = false }, abi.CSRAbstain, "not accepted"},
	{"agent asks for another cluster's identity", func(r *abi.CSRReview) {
		r.Subject.CommonName = "system:open-cluster-management:cluster2:agent1"
		r.Subject.Organizations = []string{"system:open-cluster-management:cluster2"}
		r.ClusterName = "cluster2"
	}, abi.CSRDeny, "agent of cluster cluster1 and may not obtain an identity of cluster cluster2"},
	{"renewal by another agent of the same cluster", func(r *abi.CSRReview) {
		r.Username = "system:open-cluster-management:cluster1:agent2"
	}, abi.CSRAbstain, "is not the subject"},
	{"organizations miss the cluster group", func(r *abi.CSRReview) {
		r.Subject.Organizations = []string{"system:open-cluster-management:managed-clusters"}
	}, abi.CSRAbstain, "do not include system:open-cluster-management:cluster1"},
	{"common name is not an agent identity", func(r *abi.CSRReview) {
		r.Subject.CommonName = "admin"
		r.Username = "admin"
	}, abi.CSRAbstain, "not an agent identity of cluster cluster1"},
	{"common name with extra segments", func(r *abi.CSRReview) {
		r.Subject.CommonName = agent + ":x"
		r.Username = agent + ":x"
	}, abi.CSRAbstain, "not an agent identity"},
	{"label names another cluster than the subject", func(r *abi.CSRReview) { r.ClusterName = "cluster9" }, abi.CSRAbstain, "not an agent identity of cluster cluster9"},
}

func TestReviewCSR(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := renewalOf()
			tc.modify(&req)
			d, err := sdktest.ReviewCSR(renewal{}, sdktest.NewHost(""), req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != tc.want || !strings.Contains(d.Message, tc.msg) {
				t.Fatalf("decision %s %q, want %s with %q", d.Decision, d.Message, tc.want, tc.msg)
			}
		})
	}
}

// TestShippedModule runs the same cases against the module in plugins/dist.
func TestShippedModule(t *testing.T) {
	p, err := dist.Get("csr-renewal")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	m := wasmrun.Load(t, mod, abi.TypeCSRApproval, nil)
	for _, tc := range cases {
		req := renewalOf()
		tc.modify(&req)
		d, err := wasmrun.ReviewCSR(context.Background(), m, req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.Decision != tc.want || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("%s: decision %s %q, want %s with %q", tc.name, d.Decision, d.Message, tc.want, tc.msg)
		}
	}
}
