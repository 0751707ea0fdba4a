package override

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func TestTransformOutput(t *testing.T) {
	in := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"spec":{"replicas":1}}`)
	cases := []struct {
		name, out, want, err string
	}{
		{"a manifest", `{"manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"spec":{"replicas":2}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"spec":{"replicas":2}}`, ""},
		{"a patch", `{"patch":[{"op":"replace","path":"/spec/replicas","value":3}]}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"spec":{"replicas":3}}`, ""},
		{"an empty patch", `{"patch":[]}`, string(in), ""},
		{"garbage", `not json`, "", `wasm plugin "p": export transform_manifest: InvalidOutput: transform output: transform result:`},
		{"both", `{"manifest":{},"patch":[]}`, "", "transform output: transform result: set exactly one of manifest and patch, not both"},
		{"a patch of a missing path", `{"patch":[{"op":"replace","path":"/spec/paused","value":true}]}`, "", "transform output: patch: "},
		{"a kind change", `{"patch":[{"op":"replace","path":"/kind","value":"Job"}]}`, "",
			`transform output: manifest: changes the manifest's identity: kind "Deployment" → "Job"`},
		{"a name removed", `{"manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"web"}}}`, "",
			`metadata.name "web" → ""`},
		{"a manifest too large", `{"manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"x":"` +
			strings.Repeat("x", MaxManifestBytes) + `"}}`, "", "transform output: manifest: 524"},
		{"an output too large", `{"manifest":{"x":"` + strings.Repeat("x", abi.MaxTransformOutputBytes) + `"}}`, "", "transform output: 10485"},
	}
	for _, tc := range cases {
		got, err := ApplyTransformOutput("p", in, []byte(tc.out))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || wasm.CallErrorKindOf(err) != wasm.KindInvalidOutput {
				t.Errorf("%s: got %v, want an InvalidOutput error containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !jsonEqual(got, []byte(tc.want)) {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	x, err1 := decode(a)
	y, err2 := decode(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ca, _ := canonical(x)
	cb, _ := canonical(y)
	return string(ca) == string(cb)
}

// The plugin sees the render's values of its cluster, and they stay as they were.
func TestTransformInput(t *testing.T) {
	c := cluster("cluster1", map[string]string{"region": "eu"}, map[string]string{"replicas": "3"})
	c.ClusterSets = []string{"global", "eu"}
	c.Placement, c.GroupName, c.GroupIndex = "all", "canary", 1
	values := Values(rs, c)
	before, _ := json.Marshal(values)
	req := TransformRequest{Plugin: "p", Params: json.RawMessage(`{"a":1}`), ReplicaSet: rs, Override: "extras", Rule: "side", Values: values,
		Manifest: json.RawMessage(`{"kind":"ConfigMap"}`)}
	got := string(transformInput(req).AppendJSON(nil))
	want := `{"replicaSet":{"namespace":"web","name":"web"},"override":{"namespace":"web","name":"extras","rule":"side"},` +
		`"cluster":{"name":"cluster1","labels":{"region":"eu"},"claims":{"replicas":"3"},"kubernetesVersion":"v1.36.3",` +
		`"capacity":{"cpu":8000,"memory":17179869184000},"allocatable":{"cpu":7500},"clusterSets":["eu","global"]},` +
		`"placement":"all","decisionGroup":{"index":1,"name":"canary"},"params":{"a":1},"manifest":{"kind":"ConfigMap"}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if after, _ := json.Marshal(values); string(after) != string(before) {
		t.Errorf("the values changed:\n%s\n%s", before, after)
	}
}

func TestWasmTransformerRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := (&WasmTransformer{}).Transform(ctx, TransformRequest{Plugin: "p"}); err == nil || err.Error() != "no Wasm plugin registry" {
		t.Errorf("no registry: %v", err)
	}
	w := &WasmTransformer{Registry: wasm.NewRegistry()}
	if _, err := w.Transform(ctx, TransformRequest{Plugin: "p"}); err == nil || err.Error() != "WasmPlugin p is not loaded" {
		t.Errorf("not loaded: %v", err)
	}
}

// A transform that cannot run fails the cluster's render, naming the override, rule, cluster,
// manifest and plugin.
func TestWasmTransformerFailureFailsTheRender(t *testing.T) {
	p := compile(t, "extras", rules("- name: side\n  manifests: [{group: apps, kind: Deployment}]\n  transform: {plugin: sidecar}\n"))
	_, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: []*Program{p}, Cluster: eu,
		Transformer: &WasmTransformer{Registry: wasm.NewRegistry()}})
	if f == nil || f.Override != "extras" || f.Rule != "side" || f.Cluster != "cluster1" || f.Manifest != "apps/Deployment web/web" ||
		f.Message != "transform with WasmPlugin sidecar: WasmPlugin sidecar is not loaded" {
		t.Errorf("got %+v", f)
	}
}
