package abi

import (
	"strings"
	"testing"
)

func sampleTransformRequest() *TransformRequest {
	return &TransformRequest{
		ReplicaSet: ObjectRef{Namespace: "apps", Name: "web"},
		Override:   TransformOverride{Namespace: "apps", Name: "web-extras", Rule: awkward},
		Cluster: TransformCluster{Name: "cluster1", Labels: map[string]string{"region": "eu", "a": awkward},
			Claims: map[string]string{"region.open-cluster-management.io": "eu-west-1"}, KubernetesVersion: "v1.36.3",
			Capacity: map[string]int64{"cpu": 8000}, Allocatable: map[string]int64{"cpu": 7500, "memory": 1 << 50},
			ClusterSets: []string{"eu", "global"}},
		Placement: "all", DecisionGroup: DecisionGroup{Index: 2, Name: "canary"},
		Params:   RawJSON(`{"image":"fluent-bit:3"}`),
		Manifest: RawJSON(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`),
	}
}

func TestTransformJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := []struct {
		name  string
		v     jsonCodec
		fresh func() jsonCodec
	}{
		{"request", sampleTransformRequest(), func() jsonCodec { return &TransformRequest{} }},
		{"request, bare cluster, no params", &TransformRequest{Cluster: TransformCluster{Name: "c"}, Manifest: RawJSON(`{"kind":"ConfigMap"}`)},
			func() jsonCodec { return &TransformRequest{} }},
		{"result, manifest", &TransformResult{Manifest: RawJSON(`{"kind":"ConfigMap","data":{"a":"` + strings.Repeat("x", 10) + `"}}`)},
			func() jsonCodec { return &TransformResult{} }},
		{"result, patch", &TransformResult{Patch: []PatchOp{
			{Op: "add", Path: "/metadata/labels/a", Value: RawJSON(`"b"`)},
			{Op: "move", Path: "/a", From: "/b"},
			{Op: "remove", Path: "/spec/x~1y"},
		}}, func() jsonCodec { return &TransformResult{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkAgreement(t, tc.v, tc.fresh) })
	}
}

func TestTransformResultValidate(t *testing.T) {
	cases := []struct {
		in, err string
	}{
		{`{"manifest":{"kind":"ConfigMap"}}`, ""},
		{`{"patch":[]}`, ""},
		{`{"patch":[{"op":"add","path":"/a","value":null}]}`, ""},
		{`{}`, "transform result: set exactly one of manifest and patch"},
		{`{"manifest":null}`, "transform result: set exactly one of manifest and patch"},
		{`{"manifest":{},"patch":[]}`, "not both"},
		{`{"manifest":[1]}`, "transform result: manifest: expected a JSON object"},
		{`{"patch":[{"op":"add","path":"/a"}]}`, "transform result: patch[0].value: must be set for op add"},
		{`{"patch":[{"op":"remove","path":"/a"},{"op":"frob","path":"/a"}]}`, "transform result: patch[1].op: must be one of"},
		{`{"patch":[{"op":"copy","path":"/a"}]}`, "patch[0].from: must be set for op copy"},
		{`{"patch":[{"op":"remove","path":"a"}]}`, "patch[0].path: a JSON pointer must be empty or start with /"},
		{`{"patch":{"op":"remove"}}`, "transform result: patch"},
	}
	for _, tc := range cases {
		var r TransformResult
		err := r.DecodeJSON([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want an error containing %q", tc.in, err, tc.err)
		}
	}
	var r TransformResult
	if err := r.DecodeJSON([]byte(`{"patch":[{"op":"replace","path":"/a","value":null}]}`)); err != nil || string(r.Patch[0].Value) != "null" {
		t.Errorf("a null value: %q, %v", r.Patch[0].Value, err)
	}
	if got := string(r.AppendJSON(nil)); got != `{"patch":[{"op":"replace","path":"/a","value":null}]}` {
		t.Errorf("re-encoded: %s", got)
	}
}

func TestTransformRequestHelpers(t *testing.T) {
	req := sampleTransformRequest()
	if v, ok := req.Allocatable("cpu"); !ok || v != 7500 {
		t.Errorf("Allocatable(cpu) = %d, %v", v, ok)
	}
	if _, ok := req.Allocatable("gpu"); ok {
		t.Error("Allocatable(gpu) reported")
	}
	if req.Claim("region.open-cluster-management.io") != "eu-west-1" || req.Label("region") != "eu" || req.Claim("x") != "" {
		t.Error("Claim/Label")
	}
}
