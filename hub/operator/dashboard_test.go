package operator

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
)

// TestDashboardUnderTheOperator: dashboard.enabled in the values ConfigMap reaches the
// components the operator renders: the add-on manager (which serves the aggregated APIs)
// runs --dashboard and the viewer ClusterRole is rendered; with the add-on manager switched
// off by the ClusterManager (AddonManagement Disable) nothing serves it, as documented.
func TestDashboardUnderTheOperator(t *testing.T) {
	cmValues := map[string]any{"topology": "Split", "dashboard": map[string]any{"enabled": true}}
	for _, tc := range []struct {
		name   string
		spec   operatorv1.ClusterManagerSpec
		served bool
	}{
		{"default spec", operatorv1.ClusterManagerSpec{}, true},
		{"AddonManagement off", operatorv1.ClusterManagerSpec{AddOnManagerConfiguration: &operatorv1.AddOnManagerConfiguration{
			FeatureGates: gates(operatorv1.FeatureGateModeTypeDisable, "AddonManagement")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv, err := ValuesFor(&tc.spec, "")
			if err != nil {
				t.Fatal(err)
			}
			objs, err := install.Render(install.HubChart, "flotilla-hub", install.HubNamespace, ComponentValues(cmValues, sv, "cluster-manager"))
			if err != nil {
				t.Fatal(err)
			}
			var serving []string
			viewer := false
			for _, o := range objs {
				switch o.GetKind() {
				case "Deployment":
					containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					if slices.Contains(containers[0].(map[string]any)["args"].([]any), any("--dashboard")) {
						serving = append(serving, o.GetName())
					}
				case "ClusterRole":
					viewer = viewer || o.GetName() == "open-cluster-management:flotilla-dashboard-viewer"
				}
			}
			want := []string(nil)
			if tc.served {
				want = []string{"cluster-manager-addon-manager-controller"}
			}
			if !slices.Equal(serving, want) {
				t.Errorf("Deployments running --dashboard %v, want %v", serving, want)
			}
			if !viewer {
				t.Error("no ClusterRole open-cluster-management:flotilla-dashboard-viewer rendered")
			}
		})
	}
}
