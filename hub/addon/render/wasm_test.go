package render

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const pluginDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent","namespace":"agents"},` +
	`"spec":{"replicas":"2","template":{"spec":{"containers":[{"name":"agent","image":"quay.io/open-cluster-management/agent:v1"}]}}}}`

func wasmInput(t *testing.T) Input {
	return Input{
		AddOnName: "sized", Cluster: cluster("cluster1"), InstallNamespace: "agents",
		DeploymentConfig: adcSpec(t, `customizedVariables: [{name: LEVEL, value: debug}, {name: CLUSTER_NAME, value: evil}]
nodePlacement: {nodeSelector: {role: infra}}
registries: [{source: quay.io/open-cluster-management, mirror: mirror.io/ocm}]`),
		Configs: []Config{{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs", Namespace: "cluster1", Name: "adc",
			Object: json.RawMessage(`{"spec":{}}`)}, {Group: "example.io", Resource: "sizings", Namespace: "cluster1", Name: "small",
			Object: json.RawMessage(`{ "spec": { "factor": 2 } }`)}},
		Registration: true,
	}
}

func TestWasmRequestAndDecoration(t *testing.T) {
	var sent abi.AddOnRequest
	answer := `{"manifests":[` + pluginDeployment + `],"manifestConfigs":[{"resourceIdentifier":{"group":"apps","resource":"deployments","namespace":"agents","name":"agent"},` +
		`"feedbackRules":[{"type":"JSONPaths","jsonPaths":[{"name":"gen","path":".status.observedGeneration"}]}]}]}`
	r, err := renderWasm(wasmInput(t), "sizer", func(in []byte) ([]byte, error) {
		if err := sent.DecodeJSON(in); err != nil {
			t.Fatal(err)
		}
		return []byte(answer), nil
	})
	if err != nil {
		t.Fatal(err)
	}

	wantVars := map[string]string{"LEVEL": "debug", "CLUSTER_NAME": "cluster1", "INSTALL_NAMESPACE": "agents", "HUB_KUBECONFIG": HubKubeconfigPath}
	if sent.AddOnName != "sized" || sent.ClusterName != "cluster1" || sent.InstallNamespace != "agents" || !reflect.DeepEqual(sent.Variables, wantVars) ||
		sent.HubKubeconfigSecret != "sized-hub-kubeconfig" {
		t.Errorf("request %+v", sent)
	}
	wantCluster := &abi.AddOnCluster{Name: "cluster1", Labels: map[string]string{"env": "prod"}, Claims: map[string]string{"region": "eu-1"},
		KubernetesVersion: "v1.36.3", Capacity: map[string]int64{"cpu": 8000, "memory": 32 << 30 * 1000},
		Allocatable: map[string]int64{"cpu": 7500, "memory": 30 << 30 * 1000}}
	if !reflect.DeepEqual(sent.Cluster, wantCluster) {
		t.Errorf("cluster %+v", sent.Cluster)
	}
	if c := sent.Configs; len(c) != 1 || c[0].Group != "example.io" || c[0].Resource != "sizings" || c[0].Namespace != "cluster1" ||
		c[0].Name != "small" || string(c[0].Object) != `{"spec":{"factor":2}}` {
		t.Errorf("configs %+v", sent.Configs)
	}
	var adc addonv1alpha1.AddOnDeploymentConfigSpec
	if err := json.Unmarshal(sent.Config, &adc); err != nil || adc.NodePlacement.NodeSelector["role"] != "infra" {
		t.Errorf("config %s (%v)", sent.Config, err)
	}

	// The host decorated the plugin's Deployment as it would a template's.
	d := deployment(t, r.Manifests[0])
	pod := d.Spec.Template.Spec
	if *d.Spec.Replicas != 2 || pod.NodeSelector["role"] != "infra" || pod.Containers[0].Image != "mirror.io/ocm/agent:v1" ||
		len(pod.Volumes) != 1 || pod.Volumes[0].Secret.SecretName != "sized-hub-kubeconfig" {
		t.Errorf("deployment %s", r.Manifests[0].Raw)
	}
	if got := envNames(pod.Containers[0]); !reflect.DeepEqual(got, []string{"HUB_KUBECONFIG=/managed/hub-kubeconfig/kubeconfig", "CLUSTER_NAME=cluster1", "INSTALL_NAMESPACE=agents"}) {
		t.Errorf("env %v", got)
	}
	if r.InstallNamespace != "agents" || len(r.ManifestConfigs) != 1 || r.ManifestConfigs[0].FeedbackRules[0].JsonPaths[0].Name != "gen" {
		t.Errorf("rendered %+v", r)
	}

	// Without a deployment config, registration or cluster details.
	in := Input{AddOnName: "a", Cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c2"}}, InstallNamespace: "ns"}
	_, err = renderWasm(in, "p", func(b []byte) ([]byte, error) {
		if err := sent.DecodeJSON(b); err != nil {
			t.Fatal(err)
		}
		return []byte(`{"manifests":[]}`), nil
	})
	if err != nil || sent.Config != nil || sent.HubKubeconfigSecret != "" || !reflect.DeepEqual(sent.Cluster, &abi.AddOnCluster{Name: "c2"}) ||
		!reflect.DeepEqual(sent.Variables, map[string]string{"CLUSTER_NAME": "c2", "INSTALL_NAMESPACE": "ns"}) {
		t.Errorf("bare request %+v (%v)", sent, err)
	}
}

func TestWasmInvalidOutput(t *testing.T) {
	for _, tc := range []struct {
		name, out, msg string
	}{
		{"not JSON", "\x00garbage", "addon result: expected a JSON object"},
		{"trailing data", `{"manifests":[]} x`, "addon result: invalid JSON"},
		{"manifest not an object", `{"manifests":[1]}`, "manifests[0]: expected a JSON object"},
		{"no kind", `{"manifests":[{"apiVersion":"v1","metadata":{"name":"a"}}]}`, "manifests[0].kind: must be set"},
		{"no name", `{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"agents"}}]}`, "manifests[0].metadata.name: must be set"},
		{"bad namespace", `{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"Agents!"}}]}`, `manifests[0].metadata.namespace: "Agents!" is not a valid namespace name`},
		{"namespaced without namespace", `{"manifests":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}]}`, `manifests[0]: Deployment "a" has no metadata.namespace`},
		{"cluster-scoped with namespace", `{"manifests":[{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"a","namespace":"agents"}}]}`,
			`manifests[0]: ClusterRole "a" is cluster-scoped but has metadata.namespace "agents"`},
		{"duplicate", `{"manifests":[` + pluginDeployment + `,{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"x"}},` + pluginDeployment + `]}`,
			"manifests[2]: Deployment agents/agent is also manifests[0]"},
		{"manifestConfig without name", `{"manifests":[],"manifestConfigs":[{"resourceIdentifier":{"resource":"deployments"}}]}`, "manifestConfigs[0].resourceIdentifier.name: must be set"},
		{"manifestConfig unknown field", `{"manifests":[],"manifestConfigs":[{"resourceIdentifier":{"resource":"deployments","name":"a"},"feedbackRule":[]}]}`,
			`manifestConfigs[0]: json: unknown field "feedbackRule"`},
		{"manifestConfig bad rule", `{"manifests":[],"manifestConfigs":[{"resourceIdentifier":{"resource":"deployments","name":"a"},"feedbackRules":[{"type":"Everything"}]}]}`,
			`manifestConfigs[0]: feedbackRules[0].type: "Everything" is not WellKnownStatus or JSONPaths`},
		{"manifestConfig bad scrape type", `{"manifests":[],"manifestConfigs":[{"resourceIdentifier":{"resource":"deployments","name":"a"},"feedbackScrapeType":"Push"}]}`,
			`manifestConfigs[0]: feedbackScrapeType: "Push" is not Poll or Watch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderWasm(wasmInput(t), "sizer", func([]byte) ([]byte, error) { return []byte(tc.out), nil })
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), `wasm plugin "sizer": export render_addon: InvalidOutput: `) ||
				wasm.CallErrorKindOf(err) != wasm.KindInvalidOutput || !strings.HasPrefix(err.Error(), "rendering add-on sized for cluster cluster1: ") {
				t.Errorf("error %v, want an InvalidOutput containing %q", err, tc.msg)
			}
		})
	}
	// Errors of the call itself are wrapped, keeping their kind.
	callErr := &wasm.CallError{Plugin: "sizer", Export: abi.ExportRenderAddOn, Kind: wasm.KindTimeout, Message: "deadline"}
	_, err := renderWasm(wasmInput(t), "sizer", func([]byte) ([]byte, error) { return nil, callErr })
	if !errors.Is(err, callErr) || err.Error() != `rendering add-on sized for cluster cluster1: wasm plugin "sizer": export render_addon: Timeout: deadline` {
		t.Errorf("call error %v", err)
	}
	if _, err := renderWasm(Input{AddOnName: "a"}, "p", nil); err == nil {
		t.Error("no cluster accepted")
	}
}

// The test guest (testdata/guest) built for wasip1 and called through a real registry.
func TestWasmPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module")
	}
	ctx := context.Background()
	module := wasmrun.Build(t, "testdata/guest")
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = engine.Close(ctx) })
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: "guest", Type: abi.TypeAddOnTemplate, Wasm: module, Limits: wasm.Limits{CallTimeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	reg := wasm.NewRegistry()
	if err := reg.Set(ctx, m); err != nil {
		t.Fatal(err)
	}

	in := wasmInput(t)
	r, err := Wasm(ctx, reg, "guest", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifests) != 2 || len(r.ManifestConfigs) != 1 || r.ManifestConfigs[0].ResourceIdentifier != id("", "configmaps", "agents", "sized-request") {
		t.Fatalf("rendered %+v", r)
	}
	var echoed abi.AddOnRequest
	if err := echoed.DecodeJSON([]byte(decode[corev1.ConfigMap](t, r.Manifests[0]).Data["request"])); err != nil {
		t.Fatal(err)
	}
	if echoed.Cluster == nil || echoed.Cluster.Allocatable["cpu"] != 7500 || echoed.Cluster.Claims["region"] != "eu-1" ||
		echoed.Variables["LEVEL"] != "debug" || len(echoed.Configs) != 1 {
		t.Errorf("the plugin saw %+v", echoed)
	}
	if d := deployment(t, r.Manifests[1]); d.Spec.Template.Spec.NodeSelector["role"] != "infra" || d.Spec.Template.Spec.Containers[0].Image != "mirror.io/ocm/agent:v1" {
		t.Errorf("not decorated: %s", r.Manifests[1].Raw)
	}
	works, err := Works("sized", "cluster1", r, 0)
	if err != nil || len(works) != 1 || len(works[0].Spec.ManifestConfigs) != 2 {
		t.Errorf("works %v %v", works, err)
	}

	for _, tc := range []struct {
		mode string
		kind wasm.CallErrorKind
		msg  string
	}{
		{"error", wasm.KindGuestError, "refusing cluster cluster1"},
		{"panic", wasm.KindGuestError, "plugin panicked"},
		{"loop", wasm.KindTimeout, ""},
		{"no-namespace", wasm.KindInvalidOutput, `manifests[1]: Deployment "sized-agent" has no metadata.namespace`},
	} {
		in := wasmInput(t)
		in.DeploymentConfig.CustomizedVariables = append(in.DeploymentConfig.CustomizedVariables, addonv1alpha1.CustomizedVariable{Name: "MODE", Value: tc.mode})
		_, err := Wasm(ctx, reg, "guest", in)
		if wasm.CallErrorKindOf(err) != tc.kind || !strings.Contains(err.Error(), `wasm plugin "guest"`) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("mode %s: %v, want %s containing %q", tc.mode, err, tc.kind, tc.msg)
		}
	}
	// It still works after failed calls.
	if _, err := Wasm(ctx, reg, "guest", wasmInput(t)); err != nil {
		t.Errorf("after failures: %v", err)
	}
	if _, err := Wasm(ctx, reg, "absent", wasmInput(t)); !errors.Is(err, wasm.ErrNotLoaded) || !strings.Contains(err.Error(), `wasm plugin "absent"`) {
		t.Errorf("absent plugin: %v", err)
	}
	if _, err := Wasm(ctx, nil, "guest", wasmInput(t)); err == nil {
		t.Error("nil registry accepted")
	}
}
