// Package clusterlabel_test checks the C example transformer (src/cluster_label.c) through
// the hub's host: its render engine and Wasm transformer. `make plugins-examples` builds
// build/cluster-label.wasm with clang and wasi-libc (installing them if needed).
package clusterlabel_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

func module(t *testing.T) *wasm.Module {
	b, err := os.ReadFile("build/cluster-label.wasm")
	if err != nil {
		t.Fatalf("%v: build the C example first with `make plugins-examples` (it installs clang, lld and wasi-libc if missing)", err)
	}
	return wasmrun.Load(t, b, abi.TypeManifestTransformer, nil)
}

const (
	withLabels    = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"web","labels":{"app":"web"}},"data":{"cluster":"{\"name\":\"not-me\"}"}}`
	withoutLabels = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},"spec":{"replicas":1}}`
)

// TestThroughTheHub renders two manifests (one with labels, one without) for two clusters
// with the hub's render engine and Wasm transformer, twice.
func TestThroughTheHub(t *testing.T) {
	ctx := context.Background()
	m := module(t)
	reg := wasm.NewRegistry()
	if err := reg.Set(ctx, m); err != nil {
		t.Fatal(err)
	}
	spec := flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{}
	if err := json.Unmarshal([]byte(`{"replicaSets":[{"name":"web"}],"rules":[{"name":"label","transform":{"plugin":"`+m.Name()+`"}}]}`), &spec); err != nil {
		t.Fatal(err)
	}
	prog, errs := override.Compile("labels", &spec, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	tmpl := &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
		{RawExtension: runtime.RawExtension{Raw: []byte(withLabels)}}, {RawExtension: runtime.RawExtension{Raw: []byte(withoutLabels)}}}}}
	in := override.Input{ReplicaSet: types.NamespacedName{Namespace: "web", Name: "web"}, Template: tmpl, Overrides: []*override.Program{prog},
		Transformer: &override.WasmTransformer{Registry: reg}}
	var clusters []override.Cluster
	for _, name := range []string{"cluster1", "cluster2"} {
		clusters = append(clusters, override.Cluster{Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}})
	}
	outs := override.RenderAll(ctx, in, clusters)
	again := override.RenderAll(ctx, in, clusters)
	for i, o := range outs {
		if o.Failure != nil {
			t.Fatalf("%s: %v", o.Cluster, o.Failure)
		}
		for j, want := range []map[string]string{{"app": "web", "example.flotilla.dev/cluster": o.Cluster}, {"example.flotilla.dev/cluster": o.Cluster}} {
			var obj struct {
				Metadata struct{ Labels map[string]string } `json:"metadata"`
			}
			if err := json.Unmarshal(o.Result.Spec.Workload.Manifests[j].Raw, &obj); err != nil {
				t.Fatal(err)
			}
			if len(obj.Metadata.Labels) != len(want) || obj.Metadata.Labels["app"] != want["app"] || obj.Metadata.Labels["example.flotilla.dev/cluster"] != o.Cluster {
				t.Errorf("%s manifest %d: labels %v, want %v", o.Cluster, j, obj.Metadata.Labels, want)
			}
		}
		if again[i].Result.Hash != o.Result.Hash {
			t.Errorf("%s: hash %s then %s", o.Cluster, o.Result.Hash, again[i].Result.Hash)
		}
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	m := module(t)
	res, err := wasmrun.Transform(ctx, m, abi.TransformRequest{Cluster: abi.TransformCluster{Name: "c1"}, Manifest: abi.RawJSON(withoutLabels)})
	if err != nil || string(res.AppendJSON(nil)) != `{"patch":[{"op":"add","path":"/metadata/labels","value":{"example.flotilla.dev/cluster":"c1"}}]}` {
		t.Errorf("got %s, %v", res.AppendJSON(nil), err)
	}
	for name, tc := range map[string]struct {
		req  abi.TransformRequest
		want string
	}{
		"an empty cluster name": {abi.TransformRequest{Manifest: abi.RawJSON(withoutLabels)}, "not a valid label value"},
		"a long cluster name":   {abi.TransformRequest{Cluster: abi.TransformCluster{Name: strings.Repeat("a", 64)}, Manifest: abi.RawJSON(withoutLabels)}, "not a valid label value"},
		"no metadata":           {abi.TransformRequest{Cluster: abi.TransformCluster{Name: "c1"}, Manifest: abi.RawJSON(`{"kind":"X"}`)}, "the manifest has no metadata"},
	} {
		_, err := wasmrun.Transform(ctx, m, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) || wasm.CallErrorKindOf(err) != wasm.KindGuestError {
			t.Errorf("%s: %v, want a GuestError containing %q", name, err, tc.want)
		}
	}
}
