package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"web"},
"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`

func TestCPU(t *testing.T) {
	for cpu, want := range map[int64]int64{0: 20, 4000: 20, 16000: 40, 80000: 200, 1 << 40: 200} {
		if got := CPUMilli(cpu); got != want {
			t.Errorf("CPUMilli(%d) = %d, want %d", cpu, got, want)
		}
	}
}

func TestPatches(t *testing.T) {
	req := abi.TransformRequest{Cluster: abi.TransformCluster{Name: "cluster1", Claims: map[string]string{RegionClaim: "eu-west-1"},
		Allocatable: map[string]int64{"cpu": 16000}}, Manifest: abi.RawJSON(deployment)}
	res, err := sdktest.Transform(sidecar{}, sdktest.NewHost(`{"image":"fluent/fluent-bit:3.2"}`), req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"patch":[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"log-shipper","image":"fluent/fluent-bit:3.2",` +
		`"env":[{"name":"CLUSTER","value":"cluster1"},{"name":"REGION","value":"eu-west-1"}],"resources":{"requests":{"cpu":"40m"}}}}]}`
	if got := string(res.AppendJSON(nil)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A container of that name is replaced in place.
	req.Manifest = abi.RawJSON(strings.Replace(deployment, `"name":"web","image"`, `"name":"log-shipper","image"`, 1))
	res, err = sdktest.Transform(sidecar{}, sdktest.NewHost(""), req)
	if err != nil || len(res.Patch) != 1 || res.Patch[0].Op != "replace" || res.Patch[0].Path != "/spec/template/spec/containers/0" {
		t.Errorf("replace: %+v %v", res, err)
	}
	// No pod template: no change.
	req.Manifest = abi.RawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"spec":{"containers":[]}}`)
	if res, err = sdktest.Transform(sidecar{}, sdktest.NewHost(""), req); err != nil || res.Patch == nil || len(res.Patch) != 0 {
		t.Errorf("ConfigMap: %+v %v", res, err)
	}
	if err := sdktest.ValidateConfig(sidecar{}, sdktest.NewHost(`{"image":""}`)); err == nil || !strings.Contains(err.Error(), "pluginConfig.image: is empty") {
		t.Errorf("empty image: %v", err)
	}
}

func mc(name, region string, cpu string) override.Cluster {
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: RegionClaim, Value: region}}
	c.Status.Allocatable = clusterv1.ResourceList{"cpu": corev1.MustParse(cpu)}
	return override.Cluster{Cluster: c, Placement: "all"}
}

// TestThroughTheHub builds the module and renders a replica set's template for two clusters
// with the hub's render engine and Wasm transformer, as the hub does.
func TestThroughTheHub(t *testing.T) {
	ctx := context.Background()
	m := wasmrun.Load(t, wasmrun.Build(t, "."), abi.TypeManifestTransformer, []byte(`{"image":"fluent/fluent-bit:3.2"}`))
	if !m.Deterministic() {
		t.Fatal("the module does not run as the hub runs ManifestTransformers (Deterministic)")
	}
	reg := wasm.NewRegistry()
	if err := reg.Set(ctx, m); err != nil {
		t.Fatal(err)
	}
	var spec flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec
	if err := yaml.UnmarshalStrict([]byte("replicaSets: [{name: web}]\nrules:\n- name: log-shipper\n  transform: {plugin: "+m.Name()+"}\n"), &spec); err != nil {
		t.Fatal(err)
	}
	prog, errs := override.Compile("extras", &spec, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	tmpl := &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(deployment)}}}}}
	in := override.Input{ReplicaSet: types.NamespacedName{Namespace: "web", Name: "web"}, Template: tmpl, Overrides: []*override.Program{prog},
		Transformer: &override.WasmTransformer{Registry: reg}}
	clusters := []override.Cluster{mc("cluster1", "eu-west-1", "16"), mc("cluster2", "us-east-1", "200")}
	outs := override.RenderAll(ctx, in, clusters)
	for i, want := range []struct{ cluster, region, cpu string }{{"cluster1", "eu-west-1", "40m"}, {"cluster2", "us-east-1", "200m"}} {
		o := outs[i]
		if o.Failure != nil {
			t.Fatalf("%s: %v", want.cluster, o.Failure)
		}
		var d appsv1.Deployment
		if err := json.Unmarshal(o.Result.Spec.Workload.Manifests[0].Raw, &d); err != nil {
			t.Fatal(err)
		}
		cs := d.Spec.Template.Spec.Containers
		if len(cs) != 2 || cs[0].Name != "web" || cs[1].Name != Container || cs[1].Image != "fluent/fluent-bit:3.2" ||
			cs[1].Env[0].Value != want.cluster || cs[1].Env[1].Value != want.region || cs[1].Resources.Requests.Cpu().String() != want.cpu {
			t.Errorf("%s: containers %+v", want.cluster, cs)
		}
		if len(o.Result.Trace) != 1 || o.Result.Trace[0].Rule != "log-shipper" {
			t.Errorf("%s: trace %+v", want.cluster, o.Result.Trace)
		}
	}
	// Determinism: the same inputs again give the same bytes and hashes.
	again := override.RenderAll(ctx, in, clusters)
	for i := range outs {
		if again[i].Result.Hash != outs[i].Result.Hash {
			t.Errorf("%s: hash %s then %s", outs[i].Cluster, outs[i].Result.Hash, again[i].Result.Hash)
		}
	}
	if _, err := wasmrun.Transform(ctx, m, abi.TransformRequest{Cluster: abi.TransformCluster{Name: "c"}, Manifest: abi.RawJSON(deployment)}); err != nil {
		t.Errorf("wasmrun.Transform: %v", err)
	}
}
