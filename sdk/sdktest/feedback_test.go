package sdktest_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/feedback"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
)

// certs reports a Certificate's Ready condition and notAfter; its declaration comes from
// config: "bad" declares an invalid kind.
type certs struct{}

func (certs) Resources(h sdk.Host) (abi.FeedbackResources, error) {
	if string(h.Config()) == "bad" {
		return abi.FeedbackResources{Resources: []abi.GroupKind{{Group: "cert-manager.io", Kind: "certificate!"}}}, nil
	}
	return abi.FeedbackResources{Resources: []abi.GroupKind{{Group: "cert-manager.io", Kind: "Certificate"}}}, nil
}

func (certs) ExtractFeedback(_ sdk.Host, r *abi.FeedbackRequest) (abi.FeedbackResult, error) {
	var res abi.FeedbackResult
	err := feedback.Condition(&res, r.Resource, "Ready", "Ready")
	if err == nil {
		err = feedback.String(&res, r.Resource, "NotAfter", "status", "notAfter")
	}
	if err == nil {
		err = feedback.Integer(&res, r.Resource, "Revision", "status", "revision")
	}
	return res, err
}

func certificate(status string) abi.FeedbackRequest {
	return abi.FeedbackRequest{
		Resource:   abi.RawJSON(`{"apiVersion":"cert-manager.io/v1","kind":"Certificate","metadata":{"name":"web"},"status":` + status + `}`),
		Identifier: abi.ResourceIdentifier{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Resource: "certificates", Name: "web", Namespace: "default"},
	}
}

func TestExtractFeedbackGoesThroughTheWire(t *testing.T) {
	got, err := sdktest.ExtractFeedback(certs{}, sdktest.NewHost(""), certificate(
		`{"conditions":[{"type":"Issuing","status":"False"},{"type":"Ready","status":"True"}],"notAfter":"2027-01-01T00:00:00Z","revision":3}`))
	if err != nil {
		t.Fatal(err)
	}
	want := abi.FeedbackResult{Values: []abi.FeedbackValue{
		abi.StringValue("Ready", "True"), abi.StringValue("NotAfter", "2027-01-01T00:00:00Z"), abi.IntegerValue("Revision", 3)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Missing (or null) fields report no value, as OCM's JSONPath reader does.
	got, err = sdktest.ExtractFeedback(certs{}, sdktest.NewHost(""), certificate(`{"conditions":[{"type":"Issuing","status":"True"}],"notAfter":null}`))
	if err != nil || len(got.Values) != 0 {
		t.Fatalf("missing fields: %+v, %v", got, err)
	}
	// A field of the wrong type is an error naming it.
	if _, err := sdktest.ExtractFeedback(certs{}, sdktest.NewHost(""), certificate(`{"revision":"three"}`)); err == nil || !strings.Contains(err.Error(), "status.revision") {
		t.Fatalf("wrong type: %v", err)
	}
}

func TestExtractFeedbackChecksTheDeclaration(t *testing.T) {
	decl, err := sdktest.DeclareResources(certs{}, sdktest.NewHost(""))
	if err != nil || !decl.Serves("cert-manager.io", "Certificate") {
		t.Fatalf("declaration %+v, %v", decl, err)
	}
	req := certificate(`{}`)
	req.Identifier.Kind = "Issuer"
	if _, err := sdktest.ExtractFeedback(certs{}, sdktest.NewHost(""), req); err == nil ||
		!strings.Contains(err.Error(), "would not call this plugin for a Issuer.cert-manager.io: it declares [Certificate.cert-manager.io]") {
		t.Fatalf("undeclared kind: %v", err)
	}
	if _, err := sdktest.ExtractFeedback(certs{}, sdktest.NewHost("bad"), certificate(`{}`)); err == nil ||
		!strings.Contains(err.Error(), `resources[0].kind: "certificate!" is not a kind`) {
		t.Fatalf("invalid declaration: %v", err)
	}
}
