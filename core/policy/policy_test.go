package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-dev/flotilla/core/sarcache"
)

const labelPolicy = `package flotilla.admission.needs_team

match := [{"group": "cluster.open-cluster-management.io", "resources": ["placements"], "operations": ["CREATE", "UPDATE"]}]

deny contains msg if {
	not input.object.metadata.labels.team
	msg := sprintf("Placement %s/%s: metadata.labels.team is required", [input.namespace, input.name])
}

warn contains "placements are watched" if input.operation == "CREATE"
`

const authzPolicy = `package flotilla.admission.bind_only

match := [{"group": "cluster.open-cluster-management.io", "resources": ["managedclustersetbindings"], "operations": ["CREATE"]}]

deny contains "no bind" if {
	not flotilla.authorized(input.user, {"verb": "create", "group": "cluster.open-cluster-management.io", "resource": "managedclustersets", "subresource": "bind", "name": input.object.spec.clusterSet})
}
`

const authzPolicyTest = `package flotilla.admission.bind_only_test

import data.flotilla.admission.bind_only

allow_all(_, _) := true

deny_all(_, _) := false

test_allowed if {
	count(bind_only.deny) == 0 with input as {"user": {"username": "a"}, "object": {"spec": {"clusterSet": "s"}}}
		with flotilla.authorized as allow_all
}

test_denied if {
	bind_only.deny == {"no bind"} with input as {"user": {"username": "a"}, "object": {"spec": {"clusterSet": "s"}}}
		with flotilla.authorized as deny_all
}
`

func request(t *testing.T, group, resource, op string, obj map[string]any) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID:       "1",
		Operation: admissionv1.Operation(op),
		Resource:  metav1.GroupVersionResource{Group: group, Version: "v1beta1", Resource: resource},
		Name:      "p", Namespace: "ns",
		UserInfo: authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a"}},
		Object:   runtime.RawExtension{Raw: raw},
	}
}

func evaluate(t *testing.T, s *Set, req *admissionv1.AdmissionRequest) *Decision {
	t.Helper()
	in, err := NewInput(req, InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Evaluate(context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompileAndEvaluate(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	authz := AuthorizerFunc(func(_ context.Context, u UserInfo, a Attributes) (bool, error) {
		calls.Add(1)
		return u.Username == "alice" && a.Subresource == "bind" && a.Name == "ok", nil
	})
	s, err := Compile(ctx, []Source{{Name: "test", Files: []File{
		{Name: "label.rego", Content: labelPolicy},
		{Name: "bind.rego", Content: authzPolicy},
		{Name: "bind_test.rego", Content: authzPolicyTest},
	}}}, Options{Authorizer: authz})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Policies()); got != 2 {
		t.Fatalf("policies = %d, want 2", got)
	}
	d := evaluate(t, s, request(t, "cluster.open-cluster-management.io", "placements", "CREATE", map[string]any{"metadata": map[string]any{"name": "p"}}))
	if d.Allowed() || len(d.Denials) != 1 || d.Denials[0].Message != "Placement ns/p: metadata.labels.team is required" || d.Denials[0].Policy != "needs_team" {
		t.Fatalf("decision = %+v", d)
	}
	if len(d.Warnings) != 1 {
		t.Fatalf("warnings = %+v", d.Warnings)
	}
	d = evaluate(t, s, request(t, "cluster.open-cluster-management.io", "placements", "UPDATE", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}))
	if !d.Allowed() || len(d.Warnings) != 0 || len(d.Evaluated) != 1 {
		t.Fatalf("decision = %+v", d)
	}
	// Not matched: DELETE is not in the match rule.
	if d = evaluate(t, s, request(t, "cluster.open-cluster-management.io", "placements", "DELETE", nil)); len(d.Evaluated) != 0 {
		t.Fatalf("decision = %+v", d)
	}
	before := calls.Load()
	if d = evaluate(t, s, request(t, "cluster.open-cluster-management.io", "managedclustersetbindings", "CREATE", map[string]any{"spec": map[string]any{"clusterSet": "ok"}})); !d.Allowed() {
		t.Fatalf("decision = %+v", d)
	}
	if d = evaluate(t, s, request(t, "cluster.open-cluster-management.io", "managedclustersetbindings", "CREATE", map[string]any{"spec": map[string]any{"clusterSet": "other"}})); d.Allowed() || d.Denials[0].Message != "no bind" {
		t.Fatalf("decision = %+v", d)
	}
	if calls.Load()-before != 2 {
		t.Fatalf("authorizer calls = %d, want 2", calls.Load()-before)
	}
}

func TestAuthorizerErrorDenies(t *testing.T) {
	s, err := Compile(context.Background(), []Source{{Name: "t", Files: []File{{Name: "b.rego", Content: authzPolicy}}}},
		Options{Authorizer: AuthorizerFunc(func(context.Context, UserInfo, Attributes) (bool, error) { return false, errors.New("api down") })})
	if err != nil {
		t.Fatal(err)
	}
	d := evaluate(t, s, request(t, "cluster.open-cluster-management.io", "managedclustersetbindings", "CREATE", map[string]any{"spec": map[string]any{"clusterSet": "ok"}}))
	if d.Allowed() || len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Error(), "api down") {
		t.Fatalf("decision = %+v", d)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		files []File
		want  string
	}{
		"syntax":         {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\nmatch := [\n"}}, "t/a.rego"},
		"no match":       {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\ndeny contains 1 if false\n"}}, "has no match rule"},
		"no deny":        {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\nmatch := [{\"group\": \"flotilla.dev\", \"resources\": [\"wasmplugins\"], \"operations\": [\"CREATE\"]}]\n"}}, "neither a deny nor a warn"},
		"match input":    {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\nmatch := input.x\ndeny contains 1 if false\n"}}, "match is undefined without input"},
		"bad resource":   {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\nmatch := [{\"group\": \"flotilla.dev\", \"resources\": [\"pods\"], \"operations\": [\"CREATE\"]}]\ndeny contains 1 if false\n"}}, `"pods" is not served`},
		"bad op":         {[]File{{Name: "a.rego", Content: "package flotilla.admission.a\nmatch := [{\"group\": \"flotilla.dev\", \"resources\": [\"wasmplugins\"], \"operations\": [\"CONNECT\"]}]\ndeny contains 1 if false\n"}}, `"CONNECT" is not one of`},
		"http.send":      {[]File{{Name: "a.rego", Content: "package x\ny := http.send({\"method\": \"get\", \"url\": \"http://x\"})\n"}}, "http.send"},
		"numbers.range":  {[]File{{Name: "a.rego", Content: "package x\ny := numbers.range(1, 1000000000)\n"}}, "numbers.range"},
		"failing test":   {[]File{{Name: "a_test.rego", Content: "package x_test\ntest_no if false\n"}}, "1 of 1 tests failed: data.x_test.test_no"},
		"unmocked authz": {[]File{{Name: "a_test.rego", Content: "package x_test\ntest_authz if flotilla.authorized({\"username\": \"a\"}, {\"verb\": \"get\"})\n"}}, "mock it"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(context.Background(), []Source{{Name: "t", Files: c.files}}, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestSourceCannotExtendAnothersPackage(t *testing.T) {
	_, err := Compile(context.Background(), []Source{
		{Name: "embedded", Files: []File{{Name: "lib.rego", Content: "package flotilla.lib\nallowed(_) := false\n"}}},
		{Name: "configmap ns/evil", Files: []File{{Name: "lib.rego", Content: "package flotilla.lib\nallowed(_) := true\n"}}},
	}, Options{})
	if err == nil || !strings.Contains(err.Error(), "configmap ns/evil: lib.rego: package flotilla.lib is already defined by embedded") {
		t.Fatalf("err = %v", err)
	}
	// A test file may use the package without being refused.
	if _, err := Compile(context.Background(), []Source{
		{Name: "embedded", Files: []File{{Name: "lib.rego", Content: "package flotilla.lib\nallowed(_) := false\n"}}},
		{Name: "cm", Files: []File{{Name: "lib_test.rego", Content: "package flotilla.lib\ntest_x if not allowed(1)\n"}}},
	}, Options{}); err != nil {
		t.Fatal(err)
	}
}

const slowPolicy = `package flotilla.admission.slow

match := [{"group": "flotilla.dev", "resources": ["wasmplugins"], "operations": ["CREATE"]}]

deny contains "never" if {
	some a in walk(input.object)
	some b in walk(input.object)
	some c in walk(input.object)
	a == b
	b == c
	false
}
`

func TestTimeoutIsAnError(t *testing.T) {
	s, err := Compile(context.Background(), []Source{{Name: "t", Files: []File{{Name: "slow.rego", Content: slowPolicy}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 400)
	for i := range items {
		items[i] = map[string]any{"i": i}
	}
	in, err := NewInput(request(t, "flotilla.dev", "wasmplugins", "CREATE", map[string]any{"items": items}), InputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	d, err := s.Evaluate(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed() || len(d.Errors) != 1 || !d.Errors[0].Timeout {
		t.Fatalf("decision = %+v", d)
	}
}

// fakeReviews allows alice only and records the last review.
type fakeReviews struct {
	calls atomic.Int32
	last  atomic.Pointer[authorizationv1.SubjectAccessReviewSpec]
}

func (f *fakeReviews) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.calls.Add(1)
	f.last.Store(sar.Spec.DeepCopy())
	sar.Status.Allowed = sar.Spec.User == "alice"
	return sar, nil
}

func TestReviewAuthorizerAsksOnceThroughACache(t *testing.T) {
	reviews := &fakeReviews{}
	cache, err := sarcache.New(sarcache.Options{Reviews: reviews, Name: t.Name(), AllowedTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a := ReviewAuthorizer{Reviews: cache}
	alice := UserInfo{Username: "alice", UID: "u1", Groups: []string{"team"}, Extra: map[string][]string{"scopes": {"s"}}}
	attrs := Attributes{Verb: "execute-as", Group: "work.open-cluster-management.io", Resource: "manifestworks", Name: "system:serviceaccount:ns:sa", Namespace: "cluster1"}
	for range 3 {
		if ok, err := a.Authorized(t.Context(), alice, attrs); err != nil || !ok {
			t.Fatalf("alice: %v, %v", ok, err)
		}
	}
	if n := reviews.calls.Load(); n != 1 {
		t.Fatalf("reviews = %d, want 1 (cached)", n)
	}
	got, _ := json.Marshal(reviews.last.Load())
	want := `{"resourceAttributes":{"namespace":"cluster1","verb":"execute-as","group":"work.open-cluster-management.io","resource":"manifestworks","name":"system:serviceaccount:ns:sa"},"user":"alice","groups":["team"],"extra":{"scopes":["s"]},"uid":"u1"}`
	if string(got) != want {
		t.Fatalf("review spec\n got %s\nwant %s", got, want)
	}
	if ok, err := a.Authorized(t.Context(), UserInfo{Username: "bob"}, attrs); err != nil || ok {
		t.Fatalf("bob: %v, %v", ok, err)
	}
}

func TestInputForManifestWork(t *testing.T) {
	work := map[string]any{"spec": map[string]any{
		"executor": map[string]any{"subject": map[string]any{"type": "ServiceAccount", "serviceAccount": map[string]any{"namespace": "app", "name": "deployer"}}},
		"workload": map[string]any{"manifests": []any{
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "app"}},
			map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "crb"}},
		}},
	}}
	req := request(t, "work.open-cluster-management.io", "manifestworks", "CREATE", work)
	req.Namespace = "cluster1"
	in, err := NewInput(req, InputOptions{IsClusterNamespace: func(ns string) bool { return ns == "cluster1" }, FeatureGates: map[string]bool{"NilExecutorValidating": true}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(map[string]any{"executor": in.Doc["executor"], "oldExecutor": in.Doc["oldExecutor"], "manifests": in.Doc["manifests"], "clusterNamespace": in.Doc["clusterNamespace"], "featureGates": in.Doc["featureGates"]})
	want := `{"clusterNamespace":"cluster1","executor":{"kind":"ServiceAccount","name":"deployer","namespace":"app","username":"system:serviceaccount:app:deployer"},"featureGates":{"NilExecutorValidating":true},"manifests":[{"group":"","kind":"ConfigMap","name":"c","namespace":"app","version":"v1"},{"group":"rbac.authorization.k8s.io","kind":"ClusterRoleBinding","name":"crb","namespace":"","version":"v1"}],"oldExecutor":null}`
	if string(got) != want {
		t.Fatalf("input:\n got %s\nwant %s", got, want)
	}
	if _, err := in.Value(); err != nil {
		t.Fatal(err)
	}
}
