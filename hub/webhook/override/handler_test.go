package override

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	mwrsoverride "github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

func newOverride(ops ...flotillav1alpha1.JSONPatchOperation) *flotillav1alpha1.ManifestWorkReplicaSetOverride {
	return &flotillav1alpha1.ManifestWorkReplicaSetOverride{
		TypeMeta:   metav1.TypeMeta{APIVersion: flotillav1alpha1.GroupVersion.String(), Kind: "ManifestWorkReplicaSetOverride"},
		ObjectMeta: metav1.ObjectMeta{Name: "eu", Namespace: "team-a"},
		Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{
			ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
			Rules:       []flotillav1alpha1.OverrideRule{{Name: "r", JSONPatch: ops}},
		},
	}
}

func addLabel(value string) flotillav1alpha1.JSONPatchOperation {
	op := flotillav1alpha1.JSONPatchOperation{Op: "add", Path: "/metadata/labels/region"}
	if value != "" {
		op.Value = &apiextensionsv1.JSON{Raw: []byte(value)}
	}
	return op
}

func request(t *testing.T, op admissionv1.Operation, o *flotillav1alpha1.ManifestWorkReplicaSetOverride) admission.Request {
	t.Helper()
	var raw runtime.RawExtension
	if o != nil {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		raw.Raw = b
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Name: "eu", Namespace: "team-a", Object: raw}}
}

func TestHandle(t *testing.T) {
	big := newOverride(addLabel(`"` + strings.Repeat("x", 2*mwrsoverride.MaxSpecBytes) + `"`))
	for _, tc := range []struct {
		name    string
		req     admission.Request
		allowed bool
		code    int32
		message string // substring
		field   string // a cause's field
	}{
		{name: "valid create", req: request(t, admissionv1.Create, newOverride(addLabel(`"eu"`))), allowed: true},
		{name: "valid update", req: request(t, admissionv1.Update, newOverride(addLabel(`"eu"`))), allowed: true},
		{name: "delete is not judged", req: request(t, admissionv1.Delete, nil), allowed: true},
		{name: "add without value is 422 naming the operation", req: request(t, admissionv1.Create, newOverride(addLabel(""))),
			code: http.StatusUnprocessableEntity, field: "spec.rules[0].jsonPatch[0]",
			message: `ManifestWorkReplicaSetOverride.flotilla.dev "eu" is invalid: spec.rules[0].jsonPatch[0]: Invalid value: "add": add, replace and test take value or valueTemplate`},
		{name: "bad pointer on update names path", req: request(t, admissionv1.Update, newOverride(flotillav1alpha1.JSONPatchOperation{Op: "remove", Path: "metadata"})),
			code: http.StatusUnprocessableEntity, field: "spec.rules[0].jsonPatch[0].path", message: "spec.rules[0].jsonPatch[0].path"},
		{name: "oversized object refused before decoding", req: request(t, admissionv1.Create, big),
			code: http.StatusUnprocessableEntity, field: "spec", message: "spec: Too long"},
		{name: "garbage is 400", req: admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Name: "eu", Namespace: "team-a",
			Object: runtime.RawExtension{Raw: []byte(`{"spec": 1}`)}}}, code: http.StatusBadRequest, message: "team-a/eu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := New(Options{}).Handle(ctx, tc.req)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if tc.allowed {
				return
			}
			if resp.Result.Code != tc.code || !strings.Contains(resp.Result.Message, tc.message) {
				t.Fatalf("got %d %q, want %d containing %q", resp.Result.Code, resp.Result.Message, tc.code, tc.message)
			}
			if tc.field == "" {
				return
			}
			if resp.Result.Details == nil {
				t.Fatalf("no details naming %s: %+v", tc.field, resp.Result)
			}
			for _, c := range resp.Result.Details.Causes {
				if c.Field == tc.field {
					return
				}
			}
			t.Fatalf("no cause names %s: %+v", tc.field, resp.Result.Details.Causes)
		})
	}
}

// An expired deadline refuses the request (fails closed) naming the object.
func TestHandleDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp := New(Options{}).Handle(ctx, request(t, admissionv1.Create, newOverride(addLabel(`"eu"`))))
	if resp.Allowed || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "team-a/eu") {
		t.Fatalf("want a refusal naming team-a/eu, got allowed=%v %+v", resp.Allowed, resp.Result)
	}
}

func TestRegistration(t *testing.T) {
	r := New(Options{}).Registration()
	if r.Name != Name || r.Path != Path || r.FailurePolicy != admissionregistrationv1.Fail {
		t.Fatalf("registration %+v", r)
	}
	if len(r.Rules) != 1 || r.Rules[0].APIGroups[0] != "flotilla.dev" || r.Rules[0].Resources[0] != "manifestworkreplicasetoverrides" ||
		len(r.Rules[0].Operations) != 2 {
		t.Fatalf("rules %+v", r.Rules)
	}
}
