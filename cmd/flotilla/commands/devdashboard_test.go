package commands

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	hubop "github.com/flotilla-dev/flotilla/hub/operator"
)

// flotilla dev --hub-dashboard reaches the hub operator as the chart value dashboard.enabled
// (the values ConfigMap it renders the add-on manager from); without it the value stays off.
func TestDevHubDashboardValue(t *testing.T) {
	for _, on := range []bool{false, true} {
		values, err := devHubValues([]string{"cluster-proxy"}, topologySplit, on)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := renderHubInstall(values)
		if err != nil {
			t.Fatalf("rendering the hub install (dashboard %v): %v", on, err)
		}
		found := false
		for _, o := range objs {
			if o.GetKind() != "ConfigMap" || o.GetName() != hubop.ValuesConfigMap {
				continue
			}
			found = true
			data, _, _ := unstructured.NestedString(o.Object, "data", hubop.ValuesKey)
			var v struct {
				Dashboard struct {
					Enabled bool `json:"enabled"`
				} `json:"dashboard"`
			}
			if err := yaml.Unmarshal([]byte(data), &v); err != nil {
				t.Fatalf("ConfigMap %s: %s: %v", hubop.ValuesConfigMap, hubop.ValuesKey, err)
			}
			if v.Dashboard.Enabled != on {
				t.Errorf("--hub-dashboard=%v: dashboard.enabled = %v in %s", on, v.Dashboard.Enabled, hubop.ValuesConfigMap)
			}
		}
		if !found {
			t.Fatalf("no ConfigMap %s among the %d rendered objects", hubop.ValuesConfigMap, len(objs))
		}
	}
}
