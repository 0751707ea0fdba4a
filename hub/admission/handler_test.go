package admission

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flotilla-dev/flotilla/core/policy"
)

const denyAll = `package flotilla.admission.deny_all

match := [{"group": "cluster.open-cluster-management.io", "resources": ["placements"], "operations": ["CREATE"]}]

deny contains "no placements"
`

const broken = `package flotilla.admission.broken

match := [{"group": "cluster.open-cluster-management.io", "resources": ["placements", "managedclustersets"], "operations": ["CREATE", "DELETE"]}]

deny contains msg if msg := 1 / 0
`

func newTestHandler(t *testing.T, sources ...policy.Source) *Handler {
	t.Helper()
	set, err := policy.Compile(context.Background(), sources, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(set, HandlerOptions{HubIdentity: func(context.Context) string { return "system:serviceaccount:hub:flotilla" }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func placementRequest(user string, groups ...string) admission.Request {
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "p"}})
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Name: "p", Namespace: "apps",
		Resource: metav1.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"},
		Kind:     metav1.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Kind: "Placement"},
		UserInfo: authenticationv1.UserInfo{Username: user, Groups: groups},
		Object:   runtime.RawExtension{Raw: raw},
	}}
}

func TestHandleDeniesAndFailsClosed(t *testing.T) {
	h := newTestHandler(t, policy.Source{Name: "configmap ns/mine", Files: []policy.File{{Name: "a.rego", Content: denyAll}, {Name: "b.rego", Content: broken}}})
	resp := h.Handle(context.Background(), placementRequest("alice"))
	if resp.Allowed || resp.Result.Code != 403 {
		t.Fatalf("response %+v", resp.Result)
	}
	for _, want := range []string{"policy deny_all: no placements", "policy broken: evaluation failed", "(denied: policies fail closed)"} {
		if !strings.Contains(resp.Result.Message, want) {
			t.Errorf("message %q lacks %q", resp.Result.Message, want)
		}
	}
}

func TestPrivilegedAreJudgedByTheEmbeddedPoliciesOnly(t *testing.T) {
	h := newTestHandler(t,
		policy.Source{Name: policy.EmbeddedSourceName, Files: []policy.File{{Name: "a.rego", Content: denyAll}}},
		policy.Source{Name: "configmap ns/mine", Files: []policy.File{{Name: "b.rego", Content: broken}}})
	for _, req := range []admission.Request{placementRequest("admin", "system:masters"), placementRequest("system:serviceaccount:hub:flotilla")} {
		resp := h.Handle(context.Background(), req)
		if resp.Allowed || resp.Result.Message != "policy deny_all: no placements" {
			t.Fatalf("%s: response %+v, want the embedded denial only", req.UserInfo.Username, resp.Result)
		}
	}
	if resp := h.Handle(context.Background(), placementRequest("alice")); !strings.Contains(resp.Result.Message, "policy broken") {
		t.Fatalf("alice: %+v", resp.Result)
	}
}

func TestRegistrationFollowsThePolicies(t *testing.T) {
	h := newTestHandler(t, policy.Source{Name: "a", Files: []policy.File{{Name: "a.rego", Content: denyAll}}})
	reg := h.Registration()
	if reg.Name != Name || reg.Path != Path || reg.TimeoutSeconds != TimeoutSeconds || len(reg.Rules) != 1 ||
		reg.Rules[0].Resources[0] != "placements" || len(reg.Rules[0].Operations) != 1 {
		t.Fatalf("registration %+v", reg)
	}
	same, _ := policy.Compile(context.Background(), []policy.Source{{Name: "b", Files: []policy.File{{Name: "a.rego", Content: denyAll}}}}, policy.Options{SkipTests: true})
	if h.SetPolicies(same) {
		t.Fatal("same rules reported as changed")
	}
	more, _ := policy.Compile(context.Background(), []policy.Source{{Name: "b", Files: []policy.File{{Name: "b.rego", Content: broken}}}}, policy.Options{SkipTests: true})
	if !h.SetPolicies(more) {
		t.Fatal("new rules not reported")
	}
	if got := len(h.Registration().Rules); got != 2 {
		t.Fatalf("rules %+v", h.Registration().Rules)
	}
}

func TestEvalTimeoutMustBeUnderTheWebhooks(t *testing.T) {
	set, _ := policy.Compile(context.Background(), nil, policy.Options{SkipTests: true})
	if _, err := NewHandler(set, HandlerOptions{EvalTimeout: TimeoutSeconds * time.Second}); err == nil {
		t.Fatal("no error")
	}
}

// TestHandleAwaitsTheFirstLoad: a handler built for a Loader answers nobody but the privileged
// from the embedded policies; until the first load others are held, and denied when the load
// does not come within the evaluation timeout.
func TestHandleAwaitsTheFirstLoad(t *testing.T) {
	embedded, err := policy.Compile(context.Background(), nil, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(embedded, HandlerOptions{AwaitLoad: true, EvalTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Loaded():
		t.Fatal("loaded before the first SetPolicies")
	default:
	}
	if resp := h.Handle(context.Background(), placementRequest("admin", "system:masters")); !resp.Allowed {
		t.Fatalf("system:masters before the load: %+v, want allowed by the embedded policies at once", resp.Result)
	}
	resp := h.Handle(context.Background(), placementRequest("alice"))
	if resp.Allowed || resp.Result.Code != 503 || !strings.Contains(resp.Result.Message, "has not loaded the policy ConfigMaps yet") {
		t.Fatalf("alice before the load: %+v, want denied: not loaded", resp.Result)
	}

	loaded, err := policy.Compile(context.Background(), []policy.Source{{Name: "configmap ns/mine", Files: []policy.File{{Name: "a.rego", Content: denyAll}}}}, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	if !h.SetPolicies(loaded) {
		t.Fatal("the first load is not reported (the webhook server would not resync)")
	}
	select {
	case <-h.Loaded():
	default:
		t.Fatal("not loaded after SetPolicies")
	}
	if resp := h.Handle(context.Background(), placementRequest("alice")); resp.Allowed || resp.Result.Message != "policy deny_all: no placements" {
		t.Fatalf("alice after the load: %+v", resp.Result)
	}
}

// TestHubIdentityDoesNotSerializeCallers: while one lookup of the hub's identity hangs, another
// caller gives up with its own context instead of queueing behind it, callers share the one
// lookup, and its answer is remembered.
func TestHubIdentityDoesNotSerializeCallers(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	var calls atomic.Int32
	// A round-trip that hangs until released, its deadline notwithstanding.
	identity := HubIdentityFunc(func(context.Context) (string, error) {
		calls.Add(1)
		started <- struct{}{}
		<-release
		return "system:serviceaccount:hub:flotilla", nil
	}, testr.New(t))

	first := make(chan string, 1)
	go func() { first <- identity(context.Background()) }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first caller's lookup did not start within 5s")
	}

	hurried, cancel := context.WithCancel(context.Background())
	cancel()
	second := make(chan string, 1)
	go func() { second <- identity(hurried) }()
	select {
	case got := <-second:
		if got != "" {
			t.Fatalf("a caller whose context ended got %q", got)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("a caller whose context had ended still waited after 5s for another caller's lookup")
	}

	close(release)
	select {
	case got := <-first:
		if got != "system:serviceaccount:hub:flotilla" {
			t.Fatalf("first caller got %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first caller got no answer within 5s of the lookup's release")
	}
	if got := identity(context.Background()); got != "system:serviceaccount:hub:flotilla" || calls.Load() != 1 {
		t.Fatalf("later caller got %q after %d lookups, want the remembered name after 1", got, calls.Load())
	}
}

// TestRegistrationKeepsToItsGroups: a handler of some groups registers only their rules, so
// the API server sends the other groups' requests to another webhook configuration.
func TestRegistrationKeepsToItsGroups(t *testing.T) {
	const work = `package flotilla.admission.works

match := [{"group": "work.open-cluster-management.io", "resources": ["manifestworks"], "operations": ["CREATE"]}]

deny contains "no works"
`
	set, err := policy.Compile(context.Background(), []policy.Source{{Name: "a", Files: []policy.File{
		{Name: "a.rego", Content: denyAll}, {Name: "w.rego", Content: work}}}}, policy.Options{SkipTests: true})
	if err != nil {
		t.Fatal(err)
	}
	const workGroup = "work.open-cluster-management.io"
	for _, tc := range []struct {
		groups Groups
		want   []string
	}{
		{Groups{}, []string{"cluster.open-cluster-management.io", workGroup}},
		{Groups{Except: []string{workGroup}}, []string{"cluster.open-cluster-management.io"}},
		{Groups{Only: []string{workGroup}}, []string{workGroup}},
	} {
		h, err := NewHandler(set, HandlerOptions{Groups: tc.groups})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range h.Registration().Rules {
			got = append(got, r.APIGroups...)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("groups %+v: registered %v, want %v", tc.groups, got, tc.want)
		}
	}
}
