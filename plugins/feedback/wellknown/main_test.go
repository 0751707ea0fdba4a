package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

func request(group, kind, object string) abi.FeedbackRequest {
	return abi.FeedbackRequest{
		Resource:   abi.RawJSON(object),
		Identifier: abi.ResourceIdentifier{Group: group, Version: "v1", Kind: kind, Name: "x", Namespace: "default"},
	}
}

type kindCase struct {
	name        string
	group, kind string
	object      string
	want        []abi.FeedbackValue
}

// cases are live objects as the API server returns them, with what OCM's well-known rules
// (JSONPaths) read from them, under the names of core/apis/work/v1.
var cases = []kindCase{
	{name: "Deployment", group: "apps", kind: "Deployment",
		object: `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3},"status":{"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":2,"availableReplicas":1,"unavailableReplicas":2}}`,
		want: []abi.FeedbackValue{abi.IntegerValue(workv1.WellKnownReadyReplicas, 2), abi.IntegerValue(workv1.WellKnownReplicas, 3),
			abi.IntegerValue(workv1.WellKnownAvailableReplicas, 1)}},
	{name: "Deployment scaled to zero", group: "apps", kind: "Deployment",
		object: `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":0},"status":{"observedGeneration":4}}`,
		want:   nil},
	{name: "StatefulSet", group: "apps", kind: "StatefulSet",
		object: `{"apiVersion":"apps/v1","kind":"StatefulSet","status":{"replicas":2,"readyReplicas":2,"availableReplicas":2,"currentReplicas":2}}`,
		want: []abi.FeedbackValue{abi.IntegerValue(workv1.WellKnownReadyReplicas, 2), abi.IntegerValue(workv1.WellKnownReplicas, 2),
			abi.IntegerValue(workv1.WellKnownAvailableReplicas, 2)}},
	{name: "DaemonSet", group: "apps", kind: "DaemonSet",
		object: `{"apiVersion":"apps/v1","kind":"DaemonSet","status":{"currentNumberScheduled":3,"desiredNumberScheduled":3,"numberMisscheduled":0,"numberReady":2,"numberAvailable":2}}`,
		want: []abi.FeedbackValue{abi.IntegerValue(workv1.WellKnownDesiredNumberScheduled, 3), abi.IntegerValue(workv1.WellKnownNumberReady, 2),
			abi.IntegerValue(workv1.WellKnownNumberAvailable, 2)}},
	{name: "Job", group: "batch", kind: "Job",
		object: `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True","reason":"CompletionsReached"}],"succeeded":1,"ready":0}}`,
		want:   []abi.FeedbackValue{abi.StringValue(workv1.WellKnownJobComplete, "True"), abi.IntegerValue(workv1.WellKnownJobSucceeded, 1)}},
	{name: "running Job", group: "batch", kind: "Job",
		object: `{"apiVersion":"batch/v1","kind":"Job","status":{"active":1,"ready":1}}`,
		want:   nil},
	{name: "Pod", group: "", kind: "Pod",
		object: `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False","reason":"ContainersNotReady"}]}}`,
		want:   []abi.FeedbackValue{abi.StringValue(workv1.WellKnownPodReady, "False"), abi.StringValue(workv1.WellKnownPodPhase, "Running")}},
	{name: "pending Pod", group: "", kind: "Pod",
		object: `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending"}}`,
		want:   []abi.FeedbackValue{abi.StringValue(workv1.WellKnownPodPhase, "Pending")}},
}

func TestWellKnownValues(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sdktest.ExtractFeedback(wellKnown{}, sdktest.NewHost(""), request(c.group, c.kind, c.object))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Values, c.want) && !(len(got.Values) == 0 && len(c.want) == 0) {
				t.Fatalf("got %v\nwant %v", got.Values, c.want)
			}
			// No status at all: no values, no error.
			bare := request(c.group, c.kind, `{"apiVersion":"v1","kind":"`+c.kind+`","metadata":{"name":"x"}}`)
			if got, err := sdktest.ExtractFeedback(wellKnown{}, sdktest.NewHost(""), bare); err != nil || len(got.Values) != 0 {
				t.Fatalf("without status: %v, %v", got.Values, err)
			}
		})
	}
}

func TestDeclaresTheFiveKinds(t *testing.T) {
	decl, err := sdktest.DeclareResources(wellKnown{}, sdktest.NewHost(""))
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "batch", Kind: "Job"}, {Kind: "Pod"},
		{Group: "apps", Kind: "DaemonSet"}, {Group: "apps", Kind: "StatefulSet"}}
	if !reflect.DeepEqual(decl.Resources, want) {
		t.Fatalf("declared %v, want %v", decl.Resources, want)
	}
}

func TestMalformedFieldIsAnErrorNamingIt(t *testing.T) {
	_, err := sdktest.ExtractFeedback(wellKnown{}, sdktest.NewHost(""), request("apps", "Deployment", `{"status":{"replicas":"three"}}`))
	if err == nil || !strings.Contains(err.Error(), "status.replicas") {
		t.Fatalf("error %v, want one naming status.replicas", err)
	}
	_, err = sdktest.ExtractFeedback(wellKnown{}, sdktest.NewHost(""), request("", "Pod", `{"status":{"conditions":{"type":"Ready"}}}`))
	if err == nil || !strings.Contains(err.Error(), "status.conditions") {
		t.Fatalf("error %v, want one naming status.conditions", err)
	}
}

// TestBuiltModule runs the module as the klusterlet does: through the Wasm host.
func TestBuiltModule(t *testing.T) {
	m := wasmrun.Load(t, wasmrun.Build(t, "."), abi.TypeFeedbackExtractor, nil)
	decl, err := wasmrun.DeclareResources(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.FeedbackResources(); len(got) != 5 || !reflect.DeepEqual(got, decl.Resources) {
		t.Fatalf("the host read the declaration %v, declare_resources answers %v", got, decl.Resources)
	}
	for _, c := range cases {
		got, err := wasmrun.ExtractFeedback(context.Background(), m, request(c.group, c.kind, c.object))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Values, c.want) && !(len(got.Values) == 0 && len(c.want) == 0) {
			t.Fatalf("%s: got %v\nwant %v", c.name, got.Values, c.want)
		}
	}
	_, err = wasmrun.ExtractFeedback(context.Background(), m, request("apps", "ReplicaSet", `{}`))
	if err == nil || !strings.Contains(err.Error(), "feedback-wellknown does not serve ReplicaSet.apps") {
		t.Fatalf("undeclared kind: %v", err)
	}
}
