package install_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/install"
)

// singletonGolden are renders of the klusterlet chart (render components, mode Singleton)
// recorded before the chart learnt its other modes and the operator render (regenerate only
// on purpose: FLOTILLA_UPDATE_GOLDEN=1).
var singletonGolden = []struct {
	file   string
	values func() map[string]any
}{
	{"klusterlet-singleton-defaults.yaml", func() map[string]any { return map[string]any{"render": "components", "clusterName": "cluster1"} }},
	{"klusterlet-singleton-values.yaml", nonDefaultKlusterlet},
}

// TestKlusterletSingletonRenderUnchanged: the default mode (Singleton, render components)
// renders exactly the objects it rendered before the other modes existed, object for object
// and in the same order (the CRDs aside).
func TestKlusterletSingletonRenderUnchanged(t *testing.T) {
	for _, g := range singletonGolden {
		t.Run(g.file, func(t *testing.T) {
			// The CRDs are TestChartCRDsAreCurrent's.
			var objs []*unstructured.Unstructured
			for _, o := range render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, g.values()) {
				if o.GetKind() != "CustomResourceDefinition" {
					objs = append(objs, o)
				}
			}
			path := filepath.Join("testdata", g.file)
			if os.Getenv("FLOTILLA_UPDATE_GOLDEN") == "1" {
				var buf bytes.Buffer
				if err := install.WriteYAML(&buf, objs); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []*unstructured.Unstructured
			for _, doc := range bytes.Split(data, []byte("\n---\n")) {
				var m map[string]any
				if err := yaml.Unmarshal(doc, &m); err != nil {
					t.Fatal(err)
				}
				if m != nil {
					want = append(want, &unstructured.Unstructured{Object: m})
				}
			}
			if len(objs) != len(want) {
				t.Errorf("%d objects, want %d:\n%s", len(objs), len(want), summary(objs))
			}
			for i := range min(len(objs), len(want)) {
				got, w := objs[i], want[i]
				if describeObj(got) != describeObj(w) {
					t.Errorf("object %d is %s, want %s", i, describeObj(got), describeObj(w))
					continue
				}
				gj, _ := yaml.Marshal(got.Object)
				var gm map[string]any
				_ = yaml.Unmarshal(gj, &gm)
				if !reflect.DeepEqual(gm, w.Object) {
					wj, _ := yaml.Marshal(w.Object)
					t.Errorf("%s differs:\n got: %s\nwant: %s", describeObj(got), gj, wj)
				}
			}
		})
	}
}

func describeObj(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// TestRenderKlusterletOperator: render operator gives OCM's klusterlet operator as clusteradm
// looks it up (Deployment klusterlet, container klusterlet, in open-cluster-management), its
// RBAC, the Klusterlet from the values and the bootstrap Secret in the agent namespace, and
// no agent: the operator renders those.
func TestRenderKlusterletOperator(t *testing.T) {
	values := map[string]any{"render": "operator", "clusterName": "cluster1", "bootstrapHubKubeconfig": bootstrapKubeconfig,
		"klusterlet": map[string]any{"spec": map[string]any{"deployOption": map[string]any{"mode": "Default"},
			"registrationConfiguration": map[string]any{"clusterLabels": map[string]any{"env": "prod"}}}}}
	objs := render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, values)
	find(t, objs, "Namespace", "open-cluster-management")
	sa := find(t, objs, "ServiceAccount", "klusterlet")
	equalJSON(t, "ServiceAccount namespace", sa.GetNamespace(), "open-cluster-management")
	crb := find(t, objs, "ClusterRoleBinding", "klusterlet")
	equalJSON(t, "operator binding", crb.Object["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": "klusterlet", "namespace": "open-cluster-management"}})
	equalJSON(t, "operator binding role", crb.Object["roleRef"], map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "klusterlet"})
	find(t, objs, "ClusterRole", "klusterlet")

	deploy := find(t, objs, "Deployment", "klusterlet")
	equalJSON(t, "operator Deployment namespace", deploy.GetNamespace(), "open-cluster-management")
	c := container(t, deploy)
	equalJSON(t, "container name", c["name"], "klusterlet")
	equalJSON(t, "operator args", args(t, deploy), []string{"operator", "klusterlet", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"})
	equalJSON(t, "operator serviceAccountName", field(t, deploy.Object, "spec", "template", "spec", "serviceAccountName"), "klusterlet")
	var image any
	for _, e := range c["env"].([]any) {
		if e.(map[string]any)["name"] == "FLOTILLA_IMAGE" {
			image = e.(map[string]any)["value"]
		}
	}
	equalJSON(t, "FLOTILLA_IMAGE", image, c["image"])

	k := find(t, objs, "Klusterlet", "klusterlet")
	equalJSON(t, "Klusterlet spec", k.Object["spec"], map[string]any{
		"clusterName": "cluster1", "namespace": install.AgentNamespace, "deployOption": map[string]any{"mode": "Default"},
		"registrationConfiguration": map[string]any{"clusterLabels": map[string]any{"env": "prod"}}})
	secret := find(t, objs, "Secret", "bootstrap-hub-kubeconfig")
	equalJSON(t, "bootstrap Secret namespace", secret.GetNamespace(), install.AgentNamespace)

	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() != "klusterlet" {
			t.Errorf("render operator renders agent Deployment %s", o.GetName())
		}
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "ServiceAccount") && o.GetName() != "klusterlet" {
			t.Errorf("render operator renders %s %s, an agent's", o.GetKind(), o.GetName())
		}
	}
}

// TestRenderKlusterletOperatorHosted: a Hosted Klusterlet's operator render puts the bootstrap
// Secret in the agent namespace, the Klusterlet's name, and spec.namespace is the klusterlet
// namespace on the managed cluster.
func TestRenderKlusterletOperatorHosted(t *testing.T) {
	values := map[string]any{"render": "operator", "clusterName": "cluster1", "bootstrapHubKubeconfig": bootstrapKubeconfig,
		"klusterlet": map[string]any{"name": "klusterlet-cluster1", "managedNamespace": "open-cluster-management-klusterlet-cluster1",
			"spec": map[string]any{"deployOption": map[string]any{"mode": "SingletonHosted"}}}}
	objs := render(t, install.KlusterletChart, klusterletRelease, "klusterlet-cluster1", values)
	equalJSON(t, "bootstrap Secret namespace", find(t, objs, "Secret", "bootstrap-hub-kubeconfig").GetNamespace(), "klusterlet-cluster1")
	// The values ConfigMap is the hosting cluster's, in the agent namespace the operator reads.
	cm := find(t, objs, "ConfigMap", "flotilla-klusterlet-values")
	equalJSON(t, "values ConfigMap", []string{cm.GetNamespace(), cm.GetLabels()["flotilla.dev/target"]}, []string{"klusterlet-cluster1", "management"})
	k := find(t, objs, "Klusterlet", "klusterlet-cluster1")
	equalJSON(t, "Klusterlet spec", k.Object["spec"], map[string]any{
		"clusterName": "cluster1", "namespace": "open-cluster-management-klusterlet-cluster1", "deployOption": map[string]any{"mode": "SingletonHosted"}})

	// Another namespace than the Klusterlet's name is refused, naming both.
	_, err := install.Render(install.KlusterletChart, klusterletRelease, install.AgentNamespace, values)
	if err == nil || !strings.Contains(err.Error(), `render into namespace "klusterlet-cluster1", not "open-cluster-management-agent"`) {
		t.Errorf("rendering a SingletonHosted klusterlet into %s: %v", install.AgentNamespace, err)
	}
}

// TestRenderKlusterletDefaultMode: the Default mode's two Deployments, each with its own
// selector, ServiceAccount, Lease and Role, the registration identity renamed to OCM's
// <name>-registration-sa everywhere the agent's was bound.
func TestRenderKlusterletDefaultMode(t *testing.T) {
	values := map[string]any{"render": "components", "clusterName": "cluster1", "klusterlet": map[string]any{"spec": map[string]any{"deployOption": map[string]any{"mode": "Default"}}}}
	objs := render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, values)
	reg := find(t, objs, "Deployment", "klusterlet-registration-agent")
	work := find(t, objs, "Deployment", "klusterlet-work-agent")
	equalJSON(t, "registration selector", field(t, reg.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/component"), "registration-agent")
	equalJSON(t, "work selector", field(t, work.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/component"), "work-agent")
	checkDownwardEnv(t, container(t, reg), "klusterlet-registration-agent")
	checkDownwardEnv(t, container(t, work), "klusterlet-work-agent")
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == "klusterlet-agent" {
			t.Error("the Default mode renders klusterlet-agent too")
		}
		if o.GetKind() == "ServiceAccount" && o.GetName() == "klusterlet-agent" {
			t.Error("the Default mode renders the Singleton's ServiceAccount klusterlet-agent")
		}
		for _, s := range subjects(o) {
			if s["name"] == "klusterlet-agent" {
				t.Errorf("%s %s binds klusterlet-agent", o.GetKind(), o.GetName())
			}
		}
	}
	plugins := find(t, objs, "ClusterRoleBinding", "open-cluster-management:klusterlet-work:plugins")
	equalJSON(t, "plugin loader's subjects", plugins.Object["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": "klusterlet-work-sa", "namespace": install.AgentNamespace}})
	rb := find(t, objs, "RoleBinding", "open-cluster-management:klusterlet-work:agent")
	equalJSON(t, "work Role subjects", rb.Object["subjects"], []any{map[string]any{"kind": "ServiceAccount", "name": "klusterlet-work-sa", "namespace": install.AgentNamespace}})
	role := find(t, objs, "Role", "open-cluster-management:klusterlet-work:agent")
	b, _ := json.Marshal(role.Object["rules"])
	if !strings.Contains(string(b), `"resourceNames":["klusterlet-work-sa"],"resources":["serviceaccounts/token"]`) {
		t.Errorf("work agent's Role lacks the tokens of its ServiceAccount: %s", b)
	}
	// Two Klusterlet-less components renders: the operator owns the Klusterlet.
	values["klusterlet"].(map[string]any)["create"] = false
	for _, o := range render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, values) {
		if o.GetKind() == "Klusterlet" {
			t.Error("klusterlet.create false renders the Klusterlet")
		}
	}
}

func subjects(o *unstructured.Unstructured) []map[string]any {
	list, _ := o.Object["subjects"].([]any)
	var out []map[string]any
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestLintKlusterletModes: Helm's linter is clean on every mode and on the operator render.
func TestLintKlusterletModes(t *testing.T) {
	for _, mode := range []string{"Singleton", "Default", "SingletonHosted", "Hosted"} {
		for _, r := range []string{"components", "operator"} {
			// Lint renders into open-cluster-management-agent, which the Hosted modes
			// require to be the Klusterlet's name.
			v := map[string]any{"render": r, "clusterName": "cluster1", "bootstrapHubKubeconfig": bootstrapKubeconfig,
				"klusterlet": map[string]any{"name": install.AgentNamespace, "spec": map[string]any{"deployOption": map[string]any{"mode": mode}}}}
			if err := install.Lint(install.KlusterletChart, v); err != nil {
				t.Errorf("%s, render %s: %v", mode, r, err)
			}
		}
	}
}
