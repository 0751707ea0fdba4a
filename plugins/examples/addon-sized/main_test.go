package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/addon/render"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const gi = int64(1) << 30

func request(cpuMilli, memoryBytes int64, claims map[string]string) abi.AddOnRequest {
	return abi.AddOnRequest{
		AddOnName: "observability", ClusterName: "cluster1", InstallNamespace: "open-cluster-management-agent-addon",
		Variables: map[string]string{"CLUSTER_NAME": "cluster1"},
		Cluster: &abi.AddOnCluster{Name: "cluster1", Claims: claims, KubernetesVersion: "v1.36.3",
			Allocatable: map[string]int64{"cpu": cpuMilli, "memory": memoryBytes * 1000}},
	}
}

type rendered struct {
	sa  corev1.ServiceAccount
	cm  corev1.ConfigMap
	dep appsv1.Deployment
}

func parse(t *testing.T, res abi.AddOnResult) rendered {
	t.Helper()
	if len(res.Manifests) != 3 {
		t.Fatalf("%d manifests, want 3", len(res.Manifests))
	}
	var r rendered
	for i, v := range []any{&r.sa, &r.cm, &r.dep} {
		if err := json.Unmarshal(res.Manifests[i], v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestSizing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cpu, mem      int64
		replicas      int32
		cpuReq, memRq string
	}{
		{"kind cluster", 2000, 4 * gi, 1, "50m", "64Mi"},
		{"medium", 8000, 32 * gi, 2, "50m", "128Mi"},
		{"large", 64000, 256 * gi, 3, "320m", "512Mi"},
		{"huge", 1000000, 4096 * gi, 3, "500m", "512Mi"},
		{"unknown", 0, 0, 1, "50m", "64Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sdktest.RenderAddOn(template{}, sdktest.NewHost(""), request(tc.cpu, tc.mem, nil))
			if err != nil {
				t.Fatal(err)
			}
			r := parse(t, res)
			c := r.dep.Spec.Template.Spec.Containers[0]
			if *r.dep.Spec.Replicas != tc.replicas || c.Resources.Requests.Cpu().String() != tc.cpuReq || c.Resources.Requests.Memory().String() != tc.memRq {
				t.Errorf("replicas %d, requests %s %s; want %d %s %s", *r.dep.Spec.Replicas, c.Resources.Requests.Cpu(), c.Resources.Requests.Memory(),
					tc.replicas, tc.cpuReq, tc.memRq)
			}
			if r.cm.Data["REPLICAS"] != strconv.Itoa(int(tc.replicas)) {
				t.Errorf("ConfigMap %v", r.cm.Data)
			}
		})
	}
}

func TestObjects(t *testing.T) {
	res, err := sdktest.RenderAddOn(template{}, sdktest.NewHost(""), request(8000, 32*gi, map[string]string{RegionClaim: "eu-west-1"}))
	if err != nil {
		t.Fatal(err)
	}
	r := parse(t, res)
	const ns = "open-cluster-management-agent-addon"
	if r.sa.Kind != "ServiceAccount" || r.sa.Name != "observability-agent" || r.sa.Namespace != ns {
		t.Errorf("ServiceAccount %+v", r.sa.ObjectMeta)
	}
	want := map[string]string{"CLUSTER_NAME": "cluster1", "REGION": "eu-west-1", "KUBERNETES_VERSION": "v1.36.3", "REPLICAS": "2"}
	if r.cm.Name != "observability-agent-config" || r.cm.Namespace != ns || !equal(r.cm.Data, want) {
		t.Errorf("ConfigMap %s/%s %v", r.cm.Namespace, r.cm.Name, r.cm.Data)
	}
	pod := r.dep.Spec.Template.Spec
	if r.dep.Name != "observability-agent" || r.dep.Namespace != ns || pod.ServiceAccountName != "observability-agent" ||
		r.dep.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "observability-agent" ||
		r.dep.Spec.Template.Labels["app.kubernetes.io/name"] != "observability-agent" ||
		pod.Containers[0].Image != DefaultImage || pod.Containers[0].EnvFrom[0].ConfigMapRef.Name != "observability-agent-config" ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser != 65532 {
		t.Errorf("Deployment %+v", r.dep)
	}
	if len(res.ManifestConfigs) != 1 || !strings.Contains(string(res.ManifestConfigs[0]), `"path":".status.updatedReplicas"`) {
		t.Errorf("manifestConfigs %s", res.ManifestConfigs)
	}

	// OpenShift picks the user; the IMAGE variable picks the image; no region claim.
	req := request(8000, 32*gi, map[string]string{ProductClaim: "OpenShift"})
	req.Variables["IMAGE"] = "quay.io/example/agent:v2"
	res, err = sdktest.RenderAddOn(template{}, sdktest.NewHost(""), req)
	if err != nil {
		t.Fatal(err)
	}
	r = parse(t, res)
	if sc := r.dep.Spec.Template.Spec.SecurityContext; sc.RunAsUser != nil || !*sc.RunAsNonRoot {
		t.Errorf("OpenShift securityContext %+v", sc)
	}
	if r.dep.Spec.Template.Spec.Containers[0].Image != "quay.io/example/agent:v2" || r.cm.Data["REGION"] != "unknown" {
		t.Errorf("image %s, region %s", r.dep.Spec.Template.Spec.Containers[0].Image, r.cm.Data["REGION"])
	}

	// Capacity stands in for allocatable; a host sending no cluster gets the smallest size.
	req = request(0, 0, nil)
	req.Cluster.Allocatable, req.Cluster.Capacity = nil, map[string]int64{"cpu": 20000}
	if res, err = sdktest.RenderAddOn(template{}, sdktest.NewHost(""), req); err != nil || *parse(t, res).dep.Spec.Replicas != 3 {
		t.Errorf("capacity: %v", err)
	}
	req.Cluster = nil
	if res, err = sdktest.RenderAddOn(template{}, sdktest.NewHost(""), req); err != nil || *parse(t, res).dep.Spec.Replicas != 1 {
		t.Errorf("no cluster: %v", err)
	}
	req.InstallNamespace = ""
	if _, err := sdktest.RenderAddOn(template{}, sdktest.NewHost(""), req); err == nil || !strings.Contains(err.Error(), "installNamespace: must be set") {
		t.Errorf("no namespace: %v", err)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBuiltModule runs the .wasm through the hub's host: render.Wasm with a real
// registry, the AddOnDeploymentConfig applied by the host, then the ManifestWork.
func TestBuiltModule(t *testing.T) {
	ctx := context.Background()
	m := wasmrun.Load(t, wasmrun.Build(t, "."), abi.TypeAddOnTemplate, nil)
	res, err := wasmrun.RenderAddOn(ctx, m, request(8000, 32*gi, map[string]string{RegionClaim: "eu-west-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if *parse(t, res).dep.Spec.Replicas != 2 {
		t.Errorf("module output %s", res.Manifests[2])
	}

	reg := wasm.NewRegistry()
	if err := reg.Set(ctx, m); err != nil {
		t.Fatal(err)
	}
	cluster := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster1"},
		Status: clusterv1.ManagedClusterStatus{
			ClusterClaims: []clusterv1.ManagedClusterClaim{{Name: RegionClaim, Value: "us-east-1"}},
			Allocatable:   clusterv1.ResourceList{"cpu": resource.MustParse("64"), "memory": resource.MustParse("256Gi")},
		},
	}
	in := render.Input{AddOnName: "observability", Cluster: cluster, InstallNamespace: "agents",
		DeploymentConfig: &addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: "agents",
			NodePlacement: &addonv1alpha1.NodePlacement{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""}}}}
	out, err := render.Wasm(ctx, reg, m.Name(), in)
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := json.Unmarshal(out.Manifests[2].Raw, &dep); err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 || dep.Namespace != "agents" || dep.Spec.Template.Spec.NodeSelector["node-role.kubernetes.io/infra"] != "" ||
		len(dep.Spec.Template.Spec.NodeSelector) != 1 {
		t.Errorf("Deployment %s", out.Manifests[2].Raw)
	}
	works, err := render.Works("observability", "cluster1", out, 0)
	if err != nil || len(works) != 1 || works[0].Name != "addon-observability-deploy-0" || len(works[0].Spec.ManifestConfigs) != 1 ||
		len(works[0].Spec.ManifestConfigs[0].FeedbackRules) != 2 {
		t.Errorf("works %+v (%v)", works, err)
	}
}
