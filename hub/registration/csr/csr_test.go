package csr

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func request(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newCSR(t *testing.T, cluster, user string, groups []string, cn string, orgs ...string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1", Labels: map[string]string{ClusterNameLabel: cluster}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request(t, cn, orgs...), SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Username: user, Groups: groups, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
}

const (
	bootstrapUser = "system:serviceaccount:open-cluster-management:agent-registration-bootstrap"
	c1Group       = "system:open-cluster-management:c1"
	c1Agent       = "system:open-cluster-management:c1:agent1"
)

func TestParse(t *testing.T) {
	first, err := Parse(newCSR(t, "c1", bootstrapUser, []string{"system:serviceaccounts"}, c1Agent, c1Group))
	if err != nil {
		t.Fatal(err)
	}
	if first.Renewal || first.ClusterName != "c1" || first.Subject.CommonName != c1Agent ||
		len(first.Subject.Organizations) != 1 || first.Usages[0] != "client auth" || first.Username != bootstrapUser {
		t.Errorf("first registration parsed as %+v", first)
	}
	renewal, err := Parse(newCSR(t, "c1", c1Agent, []string{c1Group, "system:authenticated"}, c1Agent, c1Group))
	if err != nil {
		t.Fatal(err)
	}
	if !renewal.Renewal {
		t.Errorf("a request by the agent's own identity must be a renewal: %+v", renewal)
	}
	bad := newCSR(t, "c1", bootstrapUser, nil, c1Agent, c1Group)
	bad.Spec.Request = []byte("not pem")
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "csr-1") {
		t.Errorf("bad request: want an error naming the CSR, got %v", err)
	}
}

func TestCheckIdentity(t *testing.T) {
	for _, tc := range []struct {
		name, cluster, user, cn string
		groups, orgs            []string
		wantDeny                string
	}{
		{name: "valid first registration", cluster: "c1", user: bootstrapUser, cn: c1Agent, orgs: []string{c1Group}},
		{name: "valid with managed-clusters group", cluster: "c1", user: bootstrapUser, cn: c1Agent,
			orgs: []string{c1Group, "system:open-cluster-management:managed-clusters"}},
		{name: "valid renewal", cluster: "c1", user: c1Agent, groups: []string{c1Group}, cn: c1Agent, orgs: []string{c1Group}},
		{name: "org of another cluster", cluster: "c1", user: bootstrapUser, cn: c1Agent,
			orgs: []string{"system:open-cluster-management:c2"}, wantDeny: "must include"},
		{name: "extra org", cluster: "c1", user: bootstrapUser, cn: c1Agent, orgs: []string{c1Group, "system:masters"}, wantDeny: "system:masters"},
		{name: "cn without agent", cluster: "c1", user: bootstrapUser, cn: c1Group, orgs: []string{c1Group}, wantDeny: "common name"},
		{name: "cn of another cluster", cluster: "c1", user: bootstrapUser, cn: "system:open-cluster-management:c2:a", orgs: []string{c1Group}, wantDeny: "common name"},
		{name: "agent of c2 asks for c1", cluster: "c1", user: "system:open-cluster-management:c2:a",
			groups: []string{"system:open-cluster-management:c2"}, cn: c1Agent, orgs: []string{c1Group}, wantDeny: `cluster "c2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(newCSR(t, tc.cluster, tc.user, tc.groups, tc.cn, tc.orgs...))
			if err != nil {
				t.Fatal(err)
			}
			got := CheckIdentity(r)
			if tc.wantDeny == "" && got != "" {
				t.Errorf("want no denial, got %q", got)
			}
			if tc.wantDeny != "" && !strings.Contains(got, tc.wantDeny) {
				t.Errorf("want a denial mentioning %q, got %q", tc.wantDeny, got)
			}
		})
	}
}

func TestRequesterCluster(t *testing.T) {
	if got := RequesterCluster(c1Agent, []string{c1Group}); got != "c1" {
		t.Errorf("agent of c1: got %q", got)
	}
	// A user name alone does not make an agent: the group must match too.
	if got := RequesterCluster(c1Agent, []string{"system:authenticated"}); got != "" {
		t.Errorf("without the cluster group: got %q", got)
	}
	if got := RequesterCluster(bootstrapUser, nil); got != "" {
		t.Errorf("bootstrap user: got %q", got)
	}
}

func TestIsRegistrationCSRAndPending(t *testing.T) {
	c := newCSR(t, "c1", bootstrapUser, nil, c1Agent, c1Group)
	if !IsRegistrationCSR(c) || !IsPending(c) {
		t.Fatal("a fresh labelled client CSR is a pending registration CSR")
	}
	addon := c.DeepCopy()
	addon.Labels[AddonNameLabel] = "x"
	other := c.DeepCopy()
	other.Spec.SignerName = "example.com/signer"
	unlabelled := c.DeepCopy()
	unlabelled.Labels = nil
	for _, x := range []*certificatesv1.CertificateSigningRequest{addon, other, unlabelled} {
		if IsRegistrationCSR(x) {
			t.Errorf("not a registration CSR: %+v", x.ObjectMeta)
		}
	}
	decided := c.DeepCopy()
	decided.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	if IsPending(decided) {
		t.Error("a denied CSR is not pending")
	}
}

type fakeReviewer struct {
	name       string
	out        string
	err        error
	failClosed bool
}

func (f fakeReviewer) Name() string     { return f.name }
func (f fakeReviewer) FailClosed() bool { return f.failClosed }
func (f fakeReviewer) ReviewCSR(_ context.Context, in []byte) ([]byte, error) {
	if !strings.Contains(string(in), `"clusterName":"c1"`) {
		return nil, errors.New("input lacks clusterName")
	}
	return []byte(f.out), f.err
}

func TestReview(t *testing.T) {
	in := Request{ClusterName: "c1"}
	ok := Review(context.Background(), fakeReviewer{name: "p", out: `{"decision":"Deny","message":"no"}`}, in)
	if ok.Err != nil || ok.Decision != abi.CSRDeny || ok.Message != "no" {
		t.Errorf("valid answer: %+v", ok)
	}
	for _, f := range []fakeReviewer{
		{name: "trap", err: errors.New("wasm trap: unreachable")},
		{name: "garbage", out: "\x00not json"},
		{name: "unknown", out: `{"decision":"Maybe"}`},
	} {
		if v := Review(context.Background(), f, in); v.Err == nil || v.Decision != "" {
			t.Errorf("%s: want a failure without decision, got %+v", f.name, v)
		}
	}
}

func TestCombine(t *testing.T) {
	fail := errors.New("boom")
	for _, tc := range []struct {
		name     string
		verdicts []Verdict
		want     Outcome
	}{
		{name: "nothing", want: Outcome{}},
		{name: "abstain", verdicts: []Verdict{{Plugin: "a", Decision: abi.CSRAbstain}}, want: Outcome{}},
		{name: "approve", verdicts: []Verdict{{Plugin: "a", Decision: abi.CSRAbstain}, {Plugin: "b", Decision: abi.CSRApprove, Message: "ok"}},
			want: Outcome{Decision: abi.CSRApprove, Plugin: "b", Message: "ok"}},
		{name: "deny wins", verdicts: []Verdict{{Plugin: "a", Decision: abi.CSRApprove}, {Plugin: "z", Decision: abi.CSRDeny, Message: "blocked"}},
			want: Outcome{Decision: abi.CSRDeny, Plugin: "z", Message: "blocked"}},
		{name: "failure never approves", verdicts: []Verdict{{Plugin: "a", Err: fail}}, want: Outcome{}},
		{name: "ignored failure does not block", verdicts: []Verdict{{Plugin: "a", Err: fail}, {Plugin: "b", Decision: abi.CSRApprove}},
			want: Outcome{Decision: abi.CSRApprove, Plugin: "b"}},
		{name: "fail-closed failure blocks approval", verdicts: []Verdict{{Plugin: "a", Err: fail, FailClosed: true}, {Plugin: "b", Decision: abi.CSRApprove}},
			want: Outcome{}},
		{name: "deny still wins over a fail-closed failure", verdicts: []Verdict{{Plugin: "a", Err: fail, FailClosed: true}, {Plugin: "b", Decision: abi.CSRDeny}},
			want: Outcome{Decision: abi.CSRDeny, Plugin: "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Combine(tc.verdicts); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := (Outcome{Decision: abi.CSRDeny, Plugin: "blocklist", Message: "cluster x is blocked"}).describe(); got != "denied by CSRApproval plugin blocklist: cluster x is blocked" {
		t.Errorf("describe: %q", got)
	}
}

// extraReviewers adds reviewers to those of a registry, standing in for loaded modules.
type extraReviewers struct {
	RegistryReviewers
	extra []Reviewer
}

func (e extraReviewers) Reviewers() []Reviewer {
	return append(e.RegistryReviewers.Reviewers(), e.extra...)
}

func TestUnloadedFailClosedPluginBlocksApproval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := wasm.NewRegistry()
	reviewers := RegistryReviewers{Registry: reg}
	changed := reviewers.Changed(ctx)
	for _, u := range []wasm.Unavailable{
		{Name: "strict", Type: abi.TypeCSRApproval, FailurePolicy: wasm.FailurePolicyFail, Reason: wasm.ReasonDigestMismatch, Message: "spec.sha256 differs"},
		{Name: "lenient", Type: abi.TypeCSRApproval, FailurePolicy: wasm.FailurePolicyIgnore, Reason: wasm.ReasonInvalidModule, Message: "bad binary"},
		{Name: "scorer", Type: abi.TypePrioritizer, FailurePolicy: wasm.FailurePolicyFail, Reason: wasm.ReasonInvalidModule, Message: "bad binary"},
	} {
		if err := reg.MarkUnavailable(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("a CSRApproval plugin failing to load must re-trigger the review of pending CSRs")
	}

	got := reviewers.Reviewers()
	if len(got) != 1 || got[0].Name() != "strict" || !got[0].FailClosed() {
		t.Fatalf("want only the fail-closed unloaded CSRApproval plugin strict, got %v", got)
	}
	v := Review(ctx, got[0], Request{ClusterName: "c1"})
	if v.Err == nil || v.Decision != "" || !v.FailClosed || !errors.Is(v.Err, wasm.ErrNotLoaded) ||
		!strings.Contains(v.Err.Error(), `"strict"`) || !strings.Contains(v.Err.Error(), string(wasm.ReasonDigestMismatch)) {
		t.Errorf("want a fail-closed failure naming strict and why it is not loaded, got %+v", v)
	}

	r := &Reconciler{Reviewers: extraReviewers{reviewers, []Reviewer{fakeReviewer{name: "approver", out: `{"decision":"Approve"}`}}}}
	csr := newCSR(t, "c1", bootstrapUser, nil, c1Agent, c1Group)
	if out := Combine(r.review(ctx, csr, Request{ClusterName: "c1"})); out != (Outcome{}) {
		t.Errorf("an unloaded fail-closed plugin must block approval, got %+v", out)
	}

	if _, err := reg.Remove(ctx, "strict"); err != nil {
		t.Fatal(err)
	}
	want := Outcome{Decision: abi.CSRApprove, Plugin: "approver"}
	if out := Combine(r.review(ctx, csr, Request{ClusterName: "c1"})); out != want {
		t.Errorf("once strict is gone, got %+v, want %+v", out, want)
	}
}
