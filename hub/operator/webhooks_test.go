package operator

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
)

// TestWebhookObjectsCoverBothTopologies: the names retireWebhooks knows are those the
// rendered hub's processes use in each topology, and the operator's RBAC lets it read and
// delete each.
func TestWebhookObjectsCoverBothTopologies(t *testing.T) {
	const cm = "cm-test"
	configs, secrets := webhookObjects(cm)
	for _, topology := range []string{"Single", "Split"} {
		sv, err := ValuesFor(&operatorv1.ClusterManagerSpec{}, "")
		if err != nil {
			t.Fatal(err)
		}
		objs, err := install.Render(install.HubChart, install.HubChart, operatorv1.ClusterManagerDefaultNamespace,
			ComponentValues(map[string]any{"topology": topology}, sv, cm))
		if err != nil {
			t.Fatal(err)
		}
		used, usedSecrets := webhooksInUse(objs)
		want := map[string]int{"Single": 1, "Split": 3}[topology]
		if len(used) != want || len(usedSecrets) != want {
			t.Errorf("%s: webhook configurations %v, Secrets %v; want %d of each", topology, used, usedSecrets, want)
		}
		for _, n := range used {
			if !slices.Contains(configs, n) {
				t.Errorf("%s: webhook configuration %s is not among %v", topology, n, configs)
			}
		}
		for _, n := range usedSecrets {
			if !slices.Contains(secrets, n) {
				t.Errorf("%s: Secret %s is not among %v", topology, n, secrets)
			}
		}
	}

	objs, err := install.Render(install.HubChart, install.HubChart, OperatorNamespace, map[string]any{
		"render": "operator", "clusterManager": map[string]any{"name": cm}})
	if err != nil {
		t.Fatal(err)
	}
	granted := func(kind, resource string) []string {
		var out []string
		for _, o := range objs {
			if o.GetKind() != kind {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
				verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
				names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
				if slices.Contains(res, resource) && slices.Contains(verbs, "get") && slices.Contains(verbs, "delete") {
					out = append(out, names...)
				}
			}
		}
		return out
	}
	for _, res := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		if g := granted("ClusterRole", res); !sameSet(g, configs) {
			t.Errorf("the operator may get and delete %s %v, want %v", res, g, configs)
		}
	}
	if g := granted("Role", "secrets"); !sameSet(g, secrets) {
		t.Errorf("the operator may get and delete Secrets %v, want %v", g, secrets)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// TestOperatorLeaderElectsWithReplicas: the operator's Deployment runs with leader election
// when it has more than one replica, and without it (no Lease) as one.
func TestOperatorLeaderElectsWithReplicas(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		elect    bool
	}{{1, false}, {2, true}} {
		objs, err := install.Render(install.HubChart, install.HubChart, OperatorNamespace, map[string]any{
			"render": "operator", "operatorReplicas": tc.replicas})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, o := range objs {
			if o.GetKind() != "Deployment" || o.GetName() != "cluster-manager" {
				continue
			}
			found = true
			replicas, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "replicas")
			ctrs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(ctrs[0].(map[string]any), "args")
			if fmt.Sprint(replicas) != fmt.Sprint(tc.replicas) || slices.Contains(args, "--leader-elect") != tc.elect {
				t.Errorf("operatorReplicas %d: replicas %v, args %v; want --leader-elect %v", tc.replicas, replicas, args, tc.elect)
			}
		}
		if !found {
			t.Fatal("no Deployment cluster-manager rendered")
		}
	}
}
