package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const deploy = `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
 "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
 "status": {"readyReplicas": 2, "conditions": [{"type":"Progressing","status":"True"},{"type":"Available","status":"True"}]}}`

var request = abi.FeedbackRequest{
	Resource:   abi.RawJSON(deploy),
	Identifier: abi.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "web", Namespace: "default"},
}

func want() abi.FeedbackResult {
	return abi.FeedbackResult{Values: []abi.FeedbackValue{
		abi.IntegerValue("readyReplicas", 2),
		abi.StringValue("image", "nginx:1.27"),
		abi.BooleanValue("available", true),
		// encoding/json (used by sdktest for requests) compacts raw JSON, so the
		// sample is compact to read the same through both paths.
		abi.JsonRawValue("conditions", []byte(`[{"type":"Progressing","status":"True"},{"type":"Available","status":"True"}]`)),
	}}
}

func TestExtract(t *testing.T) {
	got, err := sdktest.ExtractFeedback(deployment{}, sdktest.NewHost(""), request)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want()) {
		t.Fatalf("got %+v\nwant %+v", got, want())
	}
}

func TestMalformedStatusNamesTheField(t *testing.T) {
	req := request
	req.Resource = abi.RawJSON(`{"status": {"readyReplicas": "two"}}`)
	_, err := sdktest.ExtractFeedback(deployment{}, sdktest.NewHost(""), req)
	if err == nil || !strings.Contains(err.Error(), "status.readyReplicas") {
		t.Fatalf("error %v, want one naming status.readyReplicas", err)
	}
}

func TestDeclaresDeployments(t *testing.T) {
	decl, err := sdktest.DeclareResources(deployment{}, sdktest.NewHost(""))
	if err != nil {
		t.Fatal(err)
	}
	if want := []abi.GroupKind{{Group: "apps", Kind: "Deployment"}}; !reflect.DeepEqual(decl.Resources, want) {
		t.Fatalf("declared %v, want %v", decl.Resources, want)
	}
}

func TestBuiltModule(t *testing.T) {
	m := wasmrun.Load(t, wasmrun.Build(t, "."), abi.TypeFeedbackExtractor, nil)
	// The host read the declaration at load.
	if got, want := m.FeedbackResources(), []abi.GroupKind{{Group: "apps", Kind: "Deployment"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("declared %v, want %v", got, want)
	}
	got, err := wasmrun.ExtractFeedback(context.Background(), m, request)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want()) {
		t.Fatalf("got %+v\nwant %+v", got, want())
	}
	req := request
	req.Identifier.Kind = "StatefulSet"
	if _, err := wasmrun.ExtractFeedback(context.Background(), m, req); err == nil || !strings.Contains(err.Error(), "handles Deployments, not StatefulSet") {
		t.Fatalf("error %v, want the plugin's own message", err)
	}
}
