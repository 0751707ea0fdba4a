package install_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/install"
)

const dashboardViewer = "open-cluster-management:flotilla-dashboard-viewer"

// rulesOf is a ClusterRole's rules.
func rulesOf(t *testing.T, role *unstructured.Unstructured) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range field(t, role.Object, "rules").([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// grants says whether one of rules grants verb on group/resource (named name, "" for any).
func grants(rules []map[string]any, verb, group, resource, name string) bool {
	has := func(r map[string]any, key, v string) bool {
		l, _ := r[key].([]any)
		return slices.Contains(l, any(v)) || slices.Contains(l, any("*"))
	}
	for _, r := range rules {
		names, named := r["resourceNames"].([]any)
		if has(r, "verbs", verb) && has(r, "apiGroups", group) && has(r, "resources", resource) &&
			(!named || (name != "" && slices.Contains(names, any(name)))) {
			return true
		}
	}
	return false
}

// TestRenderHubDashboard: dashboard.enabled (off by default) passes --dashboard to the
// process serving the aggregated APIs (the one Deployment with topology Single, the add-on
// manager's with Split, and so to what the operator renders from its values ConfigMap), gives
// that identity what the dashboard's watches read and the APIService it writes, and creates
// the viewer ClusterRole, get on dashboards/proxy, bound to nobody.
func TestRenderHubDashboard(t *testing.T) {
	ns := install.HubNamespace
	on := map[string]any{"dashboard": map[string]any{"enabled": true}}
	for name, values := range map[string]map[string]any{"Single": singleHub(nil), "Split": splitHub(nil)} {
		objs := render(t, install.HubChart, hubRelease, ns, values)
		for _, o := range objs {
			if o.GetKind() == "Deployment" && slices.Contains(args(t, o), "--dashboard") {
				t.Errorf("topology %s, default values: Deployment %s runs --dashboard", name, o.GetName())
			}
			if o.GetName() == dashboardViewer {
				t.Errorf("topology %s, default values: %s %s rendered", name, o.GetKind(), o.GetName())
			}
		}
	}

	// Single: the one Deployment; the hub's ClusterRole reads every kind already and gains
	// the APIServices without any add-on.
	single := render(t, install.HubChart, hubRelease, ns, singleHub(on))
	if a := args(t, find(t, single, "Deployment", "flotilla-hub")); !slices.Contains(a, "--dashboard") {
		t.Errorf("topology Single: hub args %v lack --dashboard", a)
	}
	hubRules := rulesOf(t, find(t, single, "ClusterRole", "flotilla-hub"))
	checkDashboardReads(t, "flotilla-hub", hubRules)
	if grants(hubRules, "get", "authentication.open-cluster-management.io", "managedserviceaccounts", "") {
		t.Error("topology Single, dashboard only: the hub may read ManagedServiceAccounts, an add-on's")
	}
	checkViewer(t, "topology Single", single)

	// Split: the add-on manager only.
	split := render(t, install.HubChart, hubRelease, ns, splitHub(on))
	for _, o := range split {
		if o.GetKind() != "Deployment" {
			continue
		}
		if got, want := slices.Contains(args(t, o), "--dashboard"), o.GetName() == "cluster-manager-addon-manager-controller"; got != want {
			t.Errorf("topology Split: Deployment %s runs --dashboard: %v, want %v", o.GetName(), got, want)
		}
	}
	addonRules := rulesOf(t, find(t, split, "ClusterRole", "open-cluster-management:flotilla-hub:addon-manager"))
	checkDashboardReads(t, "addon-manager", addonRules)
	// Least privilege: Leases by name only, nothing written that it did not write before.
	if grants(addonRules, "list", "coordination.k8s.io", "leases", "flotilla-hub-lock") {
		t.Error("topology Split: the add-on manager may list every Lease, not only managed-cluster-lease")
	}
	if grants(addonRules, "update", "work.open-cluster-management.io", "manifestworkreplicasets", "") {
		t.Error("topology Split: the add-on manager may update ManifestWorkReplicaSets")
	}
	if grants(rulesOf(t, find(t, split, "ClusterRole", "open-cluster-management:flotilla-hub:work-webhook")), "list", "", "events", "") {
		t.Error("topology Split: the work webhook may list Events, which only the dashboard reads")
	}
	checkViewer(t, "topology Split", split)

	// The operator passes the value to the components it renders, and may write the viewer
	// role (it applies and prunes it as the components' ClusterRoles).
	op := render(t, install.HubChart, hubRelease, "open-cluster-management", on)
	var values map[string]any
	data := field(t, find(t, op, "ConfigMap", "flotilla-hub-values").Object, "data", "values.yaml").(string)
	if err := yaml.Unmarshal([]byte(data), &values); err != nil {
		t.Fatal(err)
	}
	equalJSON(t, "values ConfigMap dashboard", values["dashboard"], map[string]any{"enabled": true})
	values["render"] = "components"
	fromOperator := render(t, install.HubChart, hubRelease, ns, values)
	if a := args(t, find(t, fromOperator, "Deployment", "cluster-manager-addon-manager-controller")); !slices.Contains(a, "--dashboard") {
		t.Errorf("the operator's render of the values ConfigMap: add-on manager args %v lack --dashboard", a)
	}
	opRules := rulesOf(t, find(t, op, "ClusterRole", "cluster-manager"))
	for _, verb := range []string{"patch", "delete", "escalate", "bind"} {
		if !grants(opRules, verb, "rbac.authorization.k8s.io", "clusterroles", dashboardViewer) {
			t.Errorf("the operator may not %s ClusterRole %s", verb, dashboardViewer)
		}
	}
}

// checkDashboardReads: the identity may list and watch every resource the dashboard watches.
func checkDashboardReads(t *testing.T, who string, rules []map[string]any) {
	t.Helper()
	for _, r := range []struct{ group, resource, name string }{
		{"cluster.open-cluster-management.io", "managedclusters", ""},
		{"cluster.open-cluster-management.io", "managedclustersets", ""},
		{"cluster.open-cluster-management.io", "placements", ""},
		{"cluster.open-cluster-management.io", "placementdecisions", ""},
		{"work.open-cluster-management.io", "manifestworks", ""},
		{"work.open-cluster-management.io", "manifestworkreplicasets", ""},
		{"flotilla.dev", "manifestworkreplicasetoverrides", ""},
		{"flotilla.dev", "wasmplugins", ""},
		{"addon.open-cluster-management.io", "managedclusteraddons", ""},
		{"addon.open-cluster-management.io", "clustermanagementaddons", ""},
		{"coordination.k8s.io", "leases", "managed-cluster-lease"},
		{"", "configmaps", ""},
		{"", "events", ""},
	} {
		for _, verb := range []string{"list", "watch"} {
			if !grants(rules, verb, r.group, r.resource, r.name) {
				t.Errorf("%s may not %s %s.%s %s, which the dashboard watches", who, verb, r.resource, r.group, r.name)
			}
		}
	}
	// A placement's explanation and the rollouts read these directly.
	for _, r := range []struct{ verb, group, resource string }{
		{"list", "cluster.open-cluster-management.io", "managedclustersetbindings"},
		{"list", "cluster.open-cluster-management.io", "addonplacementscores"},
		{"get", "", "configmaps"},
		{"get", "flotilla.dev", "wasmplugins"},
	} {
		if !grants(rules, r.verb, r.group, r.resource, "") {
			t.Errorf("%s may not %s %s.%s, which the dashboard reads", who, r.verb, r.resource, r.group)
		}
	}
	for _, verb := range []string{"create", "patch"} {
		if !grants(rules, verb, "apiregistration.k8s.io", "apiservices", "v1alpha1.dashboard.flotilla.dev") {
			t.Errorf("%s may not %s the APIService v1alpha1.dashboard.flotilla.dev", who, verb)
		}
	}
	if !grants(rules, "create", "authorization.k8s.io", "subjectaccessreviews", "") {
		t.Errorf("%s may not create SubjectAccessReviews (each viewer's access)", who)
	}
}

// checkViewer: the viewer ClusterRole grants get on dashboards/proxy and nothing else, and
// nothing binds it.
func checkViewer(t *testing.T, what string, objs []*unstructured.Unstructured) {
	t.Helper()
	viewer := find(t, objs, "ClusterRole", dashboardViewer)
	equalJSON(t, what+": "+dashboardViewer+" rules", viewer.Object["rules"], []any{map[string]any{
		"apiGroups": []any{"dashboard.flotilla.dev"}, "resources": []any{"dashboards/proxy"},
		"resourceNames": []any{"fleet"}, "verbs": []any{"get"},
	}})
	for _, o := range objs {
		if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ref == dashboardViewer {
			t.Errorf("%s: %s %s binds %s: an admin binds it to viewers", what, o.GetKind(), o.GetName(), dashboardViewer)
		}
		if strings.HasPrefix(o.GetName(), dashboardViewer) && o.GetKind() != "ClusterRole" {
			t.Errorf("%s: %s %s rendered", what, o.GetKind(), o.GetName())
		}
	}
}
