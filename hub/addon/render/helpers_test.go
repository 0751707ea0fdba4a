package render

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

func cluster(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": "prod"}},
		Status: clusterv1.ManagedClusterStatus{
			Version:       clusterv1.ManagedClusterVersion{Kubernetes: "v1.36.3"},
			ClusterClaims: []clusterv1.ManagedClusterClaim{{Name: "region", Value: "eu-1"}},
			Capacity:      clusterv1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi")},
			Allocatable:   clusterv1.ResourceList{"cpu": resource.MustParse("7500m"), "memory": resource.MustParse("30Gi")},
		},
	}
}

// tmpl decodes an AddOnTemplate written in YAML, strictly.
func tmpl(t *testing.T, doc string) *addonv1alpha1.AddOnTemplate {
	t.Helper()
	var at addonv1alpha1.AddOnTemplate
	if err := yaml.UnmarshalStrict([]byte(doc), &at); err != nil {
		t.Fatalf("decoding the template: %v", err)
	}
	return &at
}

// manifestsTemplate wraps manifests (a YAML list, indented by 6) into a template.
func manifestsTemplate(t *testing.T, manifests string, extra string) *addonv1alpha1.AddOnTemplate {
	return tmpl(t, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: t1}\n"+
		"spec:\n  addonName: hello\n  agentSpec:\n    workload:\n      manifests:\n"+manifests+extra)
}

func adcSpec(t *testing.T, doc string) *addonv1alpha1.AddOnDeploymentConfigSpec {
	t.Helper()
	var s addonv1alpha1.AddOnDeploymentConfigSpec
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
		t.Fatalf("decoding the AddOnDeploymentConfig spec: %v", err)
	}
	return &s
}

func mustTemplate(t *testing.T, at *addonv1alpha1.AddOnTemplate, in Input) Rendered {
	t.Helper()
	r, err := Template(at, in)
	if err != nil {
		t.Fatalf("Template: %v", err)
	}
	return r
}

func decode[T any](t *testing.T, m workv1.Manifest) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(m.Raw, &v); err != nil {
		t.Fatalf("decoding %s: %v", m.Raw, err)
	}
	return v
}

func asMap(t *testing.T, m workv1.Manifest) map[string]any { return decode[map[string]any](t, m) }

func deployment(t *testing.T, m workv1.Manifest) appsv1.Deployment {
	return decode[appsv1.Deployment](t, m)
}

func envNames(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
