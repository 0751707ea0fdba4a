package operator

import (
	"strings"
	"testing"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

func TestAgentValuesKlusterletWins(t *testing.T) {
	k := &operatorv1.Klusterlet{}
	k.Name = "klusterlet"
	k.Spec.ClusterName = "c1"
	k.Spec.NodePlacement.NodeSelector = map[string]string{"from": "klusterlet"}
	cm := map[string]any{
		"flags":                  map[string]any{"v": 4},
		"replicas":               2,
		"nodeSelector":           map[string]any{"other": "values"},
		"bootstrapHubKubeconfig": "token inside",
		"render":                 "operator",
	}
	got, ignored, err := agentValues(cm, ValuesFor(k, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got["replicas"] != 2 || got["flags"].(map[string]any)["v"] != 4 {
		t.Errorf("replicas and flags.v of the ConfigMap should reach the agents: %v", got)
	}
	if ns := got["nodeSelector"].(map[string]any); len(ns) != 1 || ns["from"] != "klusterlet" {
		t.Errorf("nodeSelector should be the Klusterlet's only, got %v", ns)
	}
	if _, ok := got["bootstrapHubKubeconfig"]; ok {
		t.Error("bootstrapHubKubeconfig of the ConfigMap should be dropped")
	}
	if got["render"] != "components" {
		t.Errorf("render = %v, want components", got["render"])
	}
	if strings.Join(ignored, ",") != "bootstrapHubKubeconfig,nodeSelector" {
		t.Errorf("ignored = %v, want bootstrapHubKubeconfig and nodeSelector (render equals the chart's default)", ignored)
	}
}

// TestAgentValuesRefusesWhatDecidesPrivilege: the values ConfigMap tunes how the agents run;
// what they may do (rbac), what they run (image) and how (securityContext) it may not change,
// but its copies of the chart's defaults (render: operator writes every value) pass.
func TestAgentValuesRefusesWhatDecidesPrivilege(t *testing.T) {
	k := &operatorv1.Klusterlet{}
	k.Name = "klusterlet"
	k.Spec.ClusterName = "c1"
	if _, _, err := agentValues(map[string]any{"rbac": chartDefault("rbac"), "image": chartDefault("image"), "flags": map[string]any{"v": 2}}, ValuesFor(k, "")); err != nil {
		t.Errorf("the chart's defaults and flags should pass: %v", err)
	}
	_, _, err := agentValues(map[string]any{
		"rbac":            map[string]any{"workClusterRole": "cluster-admin"},
		"securityContext": map[string]any{"privileged": true},
		"replicas":        2,
	}, ValuesFor(k, ""))
	if err == nil || !strings.Contains(err.Error(), "rbac, securityContext may not be set there") || !strings.Contains(err.Error(), ValuesConfigMap) {
		t.Errorf("err = %v, want rbac and securityContext refused, naming the ConfigMap", err)
	}
}

func TestParseValuesNamesTheConfigMap(t *testing.T) {
	for _, data := range []string{"replicas: [", strings.Repeat("#", maxValuesBytes+1)} {
		_, err := parseValues("ns1", data)
		if err == nil || !strings.Contains(err.Error(), "ConfigMap ns1/"+ValuesConfigMap+": "+ValuesKey) {
			t.Errorf("parseValues(%.20q): error %v should name ConfigMap ns1/%s and key %s", data, err, ValuesConfigMap, ValuesKey)
		}
	}
	if v, err := parseValues("ns1", "# nothing\n"); err != nil || v == nil {
		t.Errorf("a ConfigMap with comments only: %v, %v; want empty values", v, err)
	}
}
