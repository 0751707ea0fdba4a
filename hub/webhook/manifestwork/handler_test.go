package manifestwork

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func withExecutor(w *workv1.ManifestWork, name string) *workv1.ManifestWork {
	w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "ns1", Name: name}}}
	return w
}

func request(t *testing.T, op admissionv1.Operation, user string, obj, old *workv1.ManifestWork) admission.Request {
	t.Helper()
	raw := func(w *workv1.ManifestWork) runtime.RawExtension {
		if w == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Name: "w", Namespace: "cluster1",
		UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"team"}},
		Object:   raw(obj), OldObject: raw(old),
	}}
}

func TestHandle(t *testing.T) {
	cases := []struct {
		name      string
		req       func(t *testing.T) admission.Request
		allowed   bool
		code      int32
		reason    metav1.StatusReason
		message   string // substring
		maxSize   int
		causeHint string // a cause's field
	}{
		{name: "valid create", allowed: true, req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "bob", work(configMap), nil)
		}},
		{name: "invalid create is 422 Invalid naming index and field", code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
			message:   `ManifestWork.work.open-cluster-management.io "w" is invalid: spec.workload.manifests[1].metadata.name: Required value`,
			causeHint: "spec.workload.manifests[1].metadata.name",
			req: func(t *testing.T) admission.Request {
				return request(t, admissionv1.Create, "bob", work(configMap, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`), nil)
			}},
		{name: "oversized", code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid, maxSize: 50,
			message: "spec.workload.manifests: Too long: the size of manifests is 102 bytes which exceeds the 50 limit",
			req: func(t *testing.T) admission.Request {
				return request(t, admissionv1.Create, "bob", work(configMap), nil)
			}},
		{name: "executor is not this handler's concern (policies/execute_as.rego)", allowed: true, req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "bob", withExecutor(work(configMap), "allowed"), nil)
		}},
		{name: "invalid executor is not reviewed", code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
			message: "spec.executor.subject.serviceAccount: Required value",
			req: func(t *testing.T) admission.Request {
				w := withExecutor(work(configMap), "x")
				w.Spec.Executor.Subject.ServiceAccount = nil
				return request(t, admissionv1.Create, "alice", w, nil)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := New(Options{MaxSize: c.maxSize})
			resp := h.Handle(t.Context(), c.req(t))
			if resp.Allowed != c.allowed {
				t.Fatalf("allowed %v, want %v (%+v)", resp.Allowed, c.allowed, resp.Result)
			}
			if c.allowed {
				return
			}
			r := resp.Result
			if r.Code != c.code || r.Reason != c.reason || !strings.Contains(r.Message, c.message) {
				t.Errorf("status %d %s %q, want %d %s containing %q", r.Code, r.Reason, r.Message, c.code, c.reason, c.message)
			}
			if c.causeHint != "" && (r.Details == nil || len(r.Details.Causes) == 0 || r.Details.Causes[0].Field != c.causeHint) {
				t.Errorf("details %+v, want a cause for %s", r.Details, c.causeHint)
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	reg := New(Options{}).Registration()
	if reg.Name != Name || reg.Path != Path || len(reg.Rules) != 1 || len(reg.MatchConditions) != 1 {
		t.Fatalf("registration %+v", reg)
	}
	r := reg.Rules[0]
	if strings.Join(r.APIGroups, ",") != "work.open-cluster-management.io" || strings.Join(r.Resources, ",") != "manifestworks" ||
		len(r.Operations) != 2 {
		t.Errorf("rule %+v", r)
	}
}
