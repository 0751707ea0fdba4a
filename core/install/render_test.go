package install_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
)

// A hub and a klusterlet release as `flotilla init` and `flotilla join` make them.
const (
	hubRelease          = "flotilla-hub"
	klusterletRelease   = "klusterlet"
	bootstrapKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: https://hub.example:6443
contexts:
- name: bootstrap
  context: {cluster: hub, user: bootstrap}
current-context: bootstrap
users:
- name: bootstrap
  user: {token: not-a-real-token}
`
)

// nonDefaultHub and nonDefaultKlusterlet change a value of every kind: the tests check each
// lands where it should, and Lint that the charts stay clean with them.
func nonDefaultHub() map[string]any {
	return map[string]any{
		"replicas":         3,
		"image":            map[string]any{"registry": "registry.example/team/", "repository": "flotilla-dev", "tag": "v9.9.9", "pullPolicy": "Always"},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "250m", "memory": "256Mi"},
			"limits":   map[string]any{"cpu": "2", "memory": "1Gi"},
		},
		"nodeSelector":   map[string]any{"node-role.kubernetes.io/control-plane": ""},
		"tolerations":    []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity":       map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 1, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "flotilla-hub"}}}}}}},
		"podAnnotations": map[string]any{"example.com/team": "fleet"},
		"metrics":        map[string]any{"port": 9090},
		"health":         map[string]any{"port": 9091},
		"webhook":        map[string]any{"port": 10443},
		"clusterManager": map[string]any{
			"name": "hub-config",
			"spec": map[string]any{"workConfiguration": map[string]any{"featureGates": []any{map[string]any{"feature": "ManifestWorkReplicaSet", "mode": "Enable"}}}},
		},
		"flags": map[string]any{
			"kube-api-qps":                 50,
			"kube-api-burst":               100,
			"autoapprove-cluster-patterns": []any{"dev-*", "test-*"},
			"policy-eval-timeout":          "2s",
			"pprof-bind-address":           "127.0.0.1:6060",
			"feature-gates":                map[string]any{"ManagedClusterAutoApproval": true, "DefaultClusterSet": false},
		},
	}
}

func nonDefaultKlusterlet() map[string]any {
	return map[string]any{
		"render":                 "components",
		"clusterName":            "cluster1",
		"bootstrapHubKubeconfig": bootstrapKubeconfig,
		"klusterlet": map[string]any{
			"name": "klusterlet-hub2",
			"spec": map[string]any{
				"hubApiServerHostAlias": map[string]any{"ip": "10.0.0.7", "hostname": "hub.example"},
				"workConfiguration":     map[string]any{"featureGates": []any{map[string]any{"feature": "RawFeedbackJsonString", "mode": "Enable"}}},
			},
		},
		"rbac":         map[string]any{"workClusterRole": "flotilla-work"},
		"replicas":     2,
		"image":        map[string]any{"registry": "", "repository": "localhost/flotilla", "tag": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		"nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "agents", "effect": "NoExecute"}},
		"resources":    map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}},
		"flags": map[string]any{
			"status-sync-interval": "10s",
			"disable-work-agent":   true,
			"feature-gates":        map[string]any{"RawFeedbackJsonString": true, "AddonManagement": false},
			"agent-name":           "agent-a",
		},
	}
}

// singleHub and splitHub are values for the hub chart's components render (the hub itself,
// no operator) in topology Single or Split, over values: the chart's default render is the
// operator's.
func singleHub(values map[string]any) map[string]any {
	return install.MergeValues(values, map[string]any{"render": "components", "topology": "Single"})
}

func splitHub(values map[string]any) map[string]any {
	return install.MergeValues(values, map[string]any{"render": "components", "topology": "Split"})
}

func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name, chart string
		values      map[string]any
	}{
		{"hub defaults (operator)", install.HubChart, nil},
		{"hub operator non-default values", install.HubChart, nonDefaultHub()},
		{"hub operator without ClusterManager", install.HubChart, map[string]any{"clusterManager": map[string]any{"create": false}}},
		{"hub components Single", install.HubChart, singleHub(nil)},
		{"hub components Single non-default values", install.HubChart, singleHub(nonDefaultHub())},
		{"hub components Split", install.HubChart, splitHub(nil)},
		{"hub components Split non-default values", install.HubChart, splitHub(nonDefaultHub())},
		// Helm's linter renders in lint mode, where the chart's required clusterName only warns
		// in the log; defaults are linted as `helm lint` would.
		{"klusterlet defaults", install.KlusterletChart, nil},
		{"klusterlet with cluster name", install.KlusterletChart, map[string]any{"clusterName": "cluster1"}},
		{"klusterlet components", install.KlusterletChart, map[string]any{"render": "components", "clusterName": "cluster1"}},
		{"klusterlet non-default values", install.KlusterletChart, nonDefaultKlusterlet()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := install.Lint(tc.chart, tc.values); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("findings are errors", func(t *testing.T) {
		err := install.Lint(install.HubChart, map[string]any{"replicas": "three"})
		if err == nil || !strings.Contains(err.Error(), "/replicas") {
			t.Fatalf("got %v, want a lint error naming /replicas", err)
		}
	})
}

func render(t *testing.T, chart, release, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := install.Render(chart, release, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the one rendered object of kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if found != nil {
				t.Fatalf("two %s %s rendered", kind, name)
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s %s rendered; got %s", kind, name, summary(objs))
	}
	return found
}

func has(objs []*unstructured.Unstructured, kind string) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

func summary(objs []*unstructured.Unstructured) string {
	s := make([]string, 0, len(objs))
	for _, o := range objs {
		s = append(s, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(s, " ")
}

// container is the Deployment's only container.
func container(t *testing.T, deploy *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", deploy.GetName(), len(cs))
	}
	return cs[0].(map[string]any)
}

func args(t *testing.T, deploy *unstructured.Unstructured) []string {
	t.Helper()
	a, _, _ := unstructured.NestedStringSlice(container(t, deploy), "args")
	return a
}

func field(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !ok {
		t.Fatalf("no %s in %v (%v)", strings.Join(path, "."), obj, err)
	}
	return v
}

// equalJSON compares as YAML text, which prints maps sorted.
func equalJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got: %s\nwant: %s", what, g, w)
	}
}

// The components render in topology Single with every other value at its default.
func TestRenderHubDefaults(t *testing.T) {
	ns := install.HubNamespace
	objs := render(t, install.HubChart, hubRelease, ns, singleHub(nil))

	// The order: the release Namespace, every CRD of core/crds, then Helm's install order.
	bases, err := filepath.Glob("../crds/bases/*.yaml")
	if err != nil || len(bases) == 0 {
		t.Fatalf("core/crds/bases: %v (%d files)", err, len(bases))
	}
	var kinds []string
	for _, o := range objs {
		if k := o.GetKind(); len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	// No ClusterManager: without the operator nothing would follow it.
	wantKinds := []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("kinds in order %v, want %v", kinds, wantKinds)
	}
	if objs[0].GetName() != ns {
		t.Errorf("first object is Namespace %s, want %s", objs[0].GetName(), ns)
	}
	crds := 0
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	if crds != len(bases) {
		t.Errorf("%d CRDs rendered, core/crds/bases has %d", crds, len(bases))
	}

	// Namespaced objects are in the release namespace, cluster-scoped ones in none.
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Service", "Deployment":
			if o.GetNamespace() != ns {
				t.Errorf("%s %s in namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
			}
		default:
			if o.GetNamespace() != "" {
				t.Errorf("cluster-scoped %s %s has namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
	}

	deploy := find(t, objs, "Deployment", "flotilla-hub")
	wantLabels := map[string]string{
		"app.kubernetes.io/name":       "flotilla-hub",
		"app.kubernetes.io/instance":   hubRelease,
		"app.kubernetes.io/version":    "0.1.0",
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/component":  "hub",
		"helm.sh/chart":                "flotilla-hub-0.1.0",
	}
	for _, o := range objs[1:] {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		for k, v := range wantLabels {
			if o.GetLabels()[k] != v {
				t.Errorf("%s %s label %s=%q, want %q", o.GetKind(), o.GetName(), k, o.GetLabels()[k], v)
			}
		}
	}
	wantArgs := []string{
		"hub",
		"--webhook-bind-address=:9443",
		"--webhook-service=open-cluster-management-hub/flotilla-hub-webhook:443",
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
		// values' flags, sorted, empty ones left out
		"--gateway-secret-namespace=open-cluster-management-credentials",
		"--kube-api-burst=400",
		"--kube-api-qps=200",
		"--leader-elect-lease-duration=2m17s",
		"--leader-elect-name=flotilla-hub-lock",
		"--leader-elect-namespace=open-cluster-management-hub",
		"--leader-elect-renew-deadline=1m47s",
		"--leader-elect-retry-period=26s",
		"--placement-debug-bind-address=0",
		"--policy-eval-timeout=3s",
		"--policy-namespace=open-cluster-management-hub",
		"--v=0",
		"--work-max-size=512000",
	}
	equalJSON(t, "hub args", args(t, deploy), wantArgs)

	c := container(t, deploy)
	equalJSON(t, "image", field(t, c, "image"), "ghcr.io/flotilla-dev/flotilla:0.1.0")
	equalJSON(t, "imagePullPolicy", field(t, c, "imagePullPolicy"), "IfNotPresent")
	equalJSON(t, "ports", field(t, c, "ports"), []any{
		map[string]any{"name": "webhook", "containerPort": 9443, "protocol": "TCP"},
		map[string]any{"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
		map[string]any{"name": "health", "containerPort": 8081, "protocol": "TCP"},
	})
	equalJSON(t, "liveness", field(t, c, "livenessProbe", "httpGet"), map[string]any{"path": "/healthz", "port": "health"})
	equalJSON(t, "readiness", field(t, c, "readinessProbe", "httpGet"), map[string]any{"path": "/readyz", "port": "health"})
	equalJSON(t, "resources", field(t, c, "resources"), map[string]any{
		"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
		"limits":   map[string]any{"memory": "512Mi"},
	})
	equalJSON(t, "securityContext", field(t, c, "securityContext"), map[string]any{
		"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
		"capabilities": map[string]any{"drop": []any{"ALL"}},
	})
	checkDownwardEnv(t, c, "flotilla-hub")
	pod := field(t, deploy.Object, "spec", "template").(map[string]any)
	equalJSON(t, "pod annotations", field(t, pod, "metadata", "annotations"), map[string]any{
		"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics",
	})
	equalJSON(t, "pod securityContext", field(t, pod, "spec", "securityContext"), map[string]any{
		"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
	})
	equalJSON(t, "serviceAccountName", field(t, pod, "spec", "serviceAccountName"), "flotilla-hub")
	equalJSON(t, "replicas", field(t, deploy.Object, "spec", "replicas"), 1)
	for _, absent := range []string{"nodeSelector", "tolerations", "affinity", "imagePullSecrets"} {
		if _, ok := pod["spec"].(map[string]any)[absent]; ok {
			t.Errorf("pod spec has %s with default values", absent)
		}
	}
	selector := field(t, deploy.Object, "spec", "selector", "matchLabels").(map[string]any)
	for k, v := range selector {
		if field(t, pod, "metadata", "labels", k) != v {
			t.Errorf("pod template lacks selector label %s=%v", k, v)
		}
	}

	webhook := find(t, objs, "Service", "flotilla-hub-webhook")
	equalJSON(t, "webhook Service ports", field(t, webhook.Object, "spec", "ports"), []any{
		map[string]any{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"},
	})
	equalJSON(t, "webhook Service selector", field(t, webhook.Object, "spec", "selector"), selector)
	metrics := find(t, objs, "Service", "flotilla-hub-metrics")
	equalJSON(t, "metrics Service ports", field(t, metrics.Object, "spec", "ports"), []any{
		map[string]any{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"},
	})

	find(t, objs, "ServiceAccount", "flotilla-hub")
	crb := find(t, objs, "ClusterRoleBinding", "flotilla-hub")
	equalJSON(t, "ClusterRoleBinding", map[string]any{"roleRef": crb.Object["roleRef"], "subjects": crb.Object["subjects"]}, map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "flotilla-hub"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "flotilla-hub", "namespace": ns}},
	})
	checkHubRules(t, find(t, objs, "ClusterRole", "flotilla-hub"))
}

// checkDownwardEnv checks POD_NAMESPACE and POD_NAME come from the downward API and
// FLOTILLA_DEPLOYMENT_NAME names the Deployment.
func checkDownwardEnv(t *testing.T, c map[string]any, deployment string) {
	t.Helper()
	equalJSON(t, "env", field(t, c, "env"), []any{
		map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
		map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
		map[string]any{"name": "FLOTILLA_DEPLOYMENT_NAME", "value": deployment},
	})
}

// checkHubRules checks the hub's ClusterRole grants what the hub does that an API server
// checks: escalate and bind to hand out roles, CSR approval and signing, token requests.
func checkHubRules(t *testing.T, role *unstructured.Unstructured) {
	t.Helper()
	type grant struct{ group, resource, verb string }
	granted := map[grant]bool{}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		str := func(k string) []string {
			var out []string
			for _, v := range rule[k].([]any) {
				out = append(out, v.(string))
			}
			return out
		}
		for _, g := range str("apiGroups") {
			for _, res := range str("resources") {
				for _, v := range str("verbs") {
					granted[grant{g, res, v}] = true
				}
			}
		}
	}
	for _, want := range []grant{
		{"rbac.authorization.k8s.io", "clusterroles", "escalate"},
		{"rbac.authorization.k8s.io", "clusterroles", "bind"},
		{"rbac.authorization.k8s.io", "roles", "escalate"},
		{"rbac.authorization.k8s.io", "roles", "bind"},
		{"certificates.k8s.io", "certificatesigningrequests/approval", "update"},
		{"certificates.k8s.io", "certificatesigningrequests/status", "update"},
		{"certificates.k8s.io", "signers", "approve"},
		{"certificates.k8s.io", "signers", "sign"},
		{"", "serviceaccounts/token", "create"},
		{"authentication.k8s.io", "tokenreviews", "create"},
		{"authorization.k8s.io", "subjectaccessreviews", "create"},
		{"apiextensions.k8s.io", "customresourcedefinitions", "patch"},
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"},
		{"coordination.k8s.io", "leases", "update"},
		{"apps", "controllerrevisions", "create"},
		{"register.open-cluster-management.io", "*", "*"},
		{"operator.open-cluster-management.io", "*", "*"},
		{"flotilla.dev", "*", "*"},
	} {
		if !granted[want] {
			t.Errorf("ClusterRole flotilla-hub does not grant %s on %s/%s", want.verb, want.group, want.resource)
		}
	}
}

func TestRenderHubValues(t *testing.T) {
	ns := "flotilla-system"
	objs := render(t, install.HubChart, "hub", ns, singleHub(nonDefaultHub()))
	deploy := find(t, objs, "Deployment", "flotilla-hub")
	a := args(t, deploy)
	for _, want := range []string{
		"--leader-elect", // replicas 3
		"--webhook-bind-address=:10443",
		"--webhook-service=flotilla-system/flotilla-hub-webhook:443",
		"--metrics-bind-address=:9090",
		"--health-probe-bind-address=:9091",
		"--kube-api-qps=50",
		"--kube-api-burst=100",
		"--autoapprove-cluster-patterns=dev-*,test-*",
		"--policy-eval-timeout=2s",
		"--pprof-bind-address=127.0.0.1:6060",
		"--feature-gates=DefaultClusterSet=false,ManagedClusterAutoApproval=true",
	} {
		if !slices.Contains(a, want) {
			t.Errorf("args lack %s: %v", want, a)
		}
	}
	for _, arg := range a {
		if strings.HasPrefix(arg, "--kube-api-qps=200") || strings.HasPrefix(arg, "--autoapprove-users") {
			t.Errorf("args have %s", arg)
		}
	}
	equalJSON(t, "replicas", field(t, deploy.Object, "spec", "replicas"), 3)
	c := container(t, deploy)
	equalJSON(t, "image", field(t, c, "image"), "registry.example/team/flotilla-dev:v9.9.9")
	equalJSON(t, "imagePullPolicy", field(t, c, "imagePullPolicy"), "Always")
	equalJSON(t, "resources", field(t, c, "resources"), nonDefaultHub()["resources"])
	equalJSON(t, "webhook port", field(t, c, "ports"), []any{
		map[string]any{"name": "webhook", "containerPort": 10443, "protocol": "TCP"},
		map[string]any{"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
		map[string]any{"name": "health", "containerPort": 9091, "protocol": "TCP"},
	})
	pod := field(t, deploy.Object, "spec", "template").(map[string]any)
	for _, k := range []string{"nodeSelector", "tolerations", "affinity", "imagePullSecrets"} {
		equalJSON(t, k, field(t, pod, "spec", k), nonDefaultHub()[k])
	}
	equalJSON(t, "pod annotations", field(t, pod, "metadata", "annotations"), map[string]any{
		"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "prometheus.io/path": "/metrics",
		"example.com/team": "fleet",
	})
	equalJSON(t, "metrics Service port", field(t, find(t, objs, "Service", "flotilla-hub-metrics").Object, "spec", "ports"), []any{
		map[string]any{"name": "metrics", "port": 9090, "targetPort": "metrics", "protocol": "TCP"},
	})
	if has(objs, "ClusterManager") {
		t.Errorf("the components render created a ClusterManager, which nothing would follow")
	}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && ns != "flotilla-system" {
			t.Errorf("%s %s in namespace %s", o.GetKind(), o.GetName(), ns)
		}
	}

	t.Run("leader election", func(t *testing.T) {
		for _, tc := range []struct {
			replicas int
			enabled  any
			want     bool
		}{
			{1, nil, false}, {2, nil, true}, {3, false, false}, {1, true, true},
		} {
			vals := singleHub(map[string]any{"replicas": tc.replicas, "leaderElection": map[string]any{"enabled": tc.enabled}})
			got := slices.Contains(args(t, find(t, render(t, install.HubChart, "hub", ns, vals), "Deployment", "flotilla-hub")), "--leader-elect")
			if got != tc.want {
				t.Errorf("replicas %d, leaderElection.enabled %v: --leader-elect %t, want %t", tc.replicas, tc.enabled, got, tc.want)
			}
		}
	})
	t.Run("empty registry", func(t *testing.T) {
		objs := render(t, install.HubChart, "hub", ns, singleHub(map[string]any{"image": map[string]any{"registry": "", "repository": "flotilla", "tag": "dev"}}))
		equalJSON(t, "image", field(t, container(t, find(t, objs, "Deployment", "flotilla-hub")), "image"), "flotilla:dev")
	})
}

func TestRenderKlusterlet(t *testing.T) {
	ns := install.AgentNamespace
	objs := render(t, install.KlusterletChart, klusterletRelease, ns, map[string]any{"render": "components", "clusterName": "cluster1"})
	var kinds []string
	for _, o := range objs {
		if k := o.GetKind(); len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	// The second Namespace is the built-in managed-serviceaccount agent's.
	wantKinds := []string{"Namespace", "CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("kinds in order %v, want %v", kinds, wantKinds)
	}
	var crds []string
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	equalJSON(t, "CRDs", sorted(crds), sorted(environment.ManagedClusterCRDs))
	if has(objs, "Secret") {
		t.Errorf("a bootstrap Secret without bootstrapHubKubeconfig")
	}

	deploy := find(t, objs, "Deployment", "klusterlet-agent")
	equalJSON(t, "namespace", deploy.GetNamespace(), ns)
	equalJSON(t, "klusterlet args", args(t, deploy), []string{
		"klusterlet",
		"--agent-namespace=open-cluster-management-agent",
		"--work-service-account=klusterlet-work-sa",
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
		"--appliedmanifestwork-eviction-grace-period=1h0m0s",
		"--csr-expiration-seconds=0",
		"--disable-work-agent=false",
		"--hub-kubeconfig-secret=hub-kubeconfig-secret",
		"--leader-elect-lease-duration=2m17s",
		"--leader-elect-name=klusterlet-agent-lock",
		"--leader-elect-renew-deadline=1m47s",
		"--leader-elect-retry-period=26s",
		"--lease-duration-seconds=60",
		"--max-custom-cluster-claims=20",
		"--max-feedback-watch=500",
		"--max-retry-interval=10s",
		"--status-sync-interval=30s",
		"--status-sync-period=1m0s",
		"--v=0",
	})
	c := container(t, deploy)
	equalJSON(t, "image", field(t, c, "image"), "ghcr.io/flotilla-dev/flotilla:0.1.0")
	equalJSON(t, "ports", field(t, c, "ports"), []any{
		map[string]any{"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
		map[string]any{"name": "health", "containerPort": 8081, "protocol": "TCP"},
	})
	equalJSON(t, "liveness", field(t, c, "livenessProbe", "httpGet"), map[string]any{"path": "/healthz", "port": "health"})
	equalJSON(t, "readiness", field(t, c, "readinessProbe", "httpGet"), map[string]any{"path": "/readyz", "port": "health"})
	checkDownwardEnv(t, c, "klusterlet-agent")
	pod := field(t, deploy.Object, "spec", "template").(map[string]any)
	equalJSON(t, "serviceAccountName", field(t, pod, "spec", "serviceAccountName"), "klusterlet-agent")
	equalJSON(t, "pod annotations", field(t, pod, "metadata", "annotations"), map[string]any{
		"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics",
	})
	equalJSON(t, "component label", deploy.GetLabels()["app.kubernetes.io/component"], "klusterlet")

	find(t, objs, "ServiceAccount", "klusterlet-agent")
	find(t, objs, "ServiceAccount", "klusterlet-work-sa")
	// OCM's roles and bindings: the agent's narrow ones, the work agent's admin, execution and
	// aggregate; nothing binds cluster-admin.
	agent := map[string]any{"kind": "ServiceAccount", "name": "klusterlet-agent", "namespace": ns}
	workSA := map[string]any{"kind": "ServiceAccount", "name": "klusterlet-work-sa", "namespace": ns}
	bindings := map[string]struct {
		kind, role string
		subject    map[string]any
	}{
		"ClusterRoleBinding open-cluster-management:klusterlet-registration:agent":                 {"ClusterRole", "open-cluster-management:klusterlet-registration:agent", agent},
		"ClusterRoleBinding open-cluster-management:klusterlet-registration:addon-management":      {"ClusterRole", "open-cluster-management:klusterlet-registration:addon-management", agent},
		"RoleBinding open-cluster-management:klusterlet-registration:agent":                        {"Role", "open-cluster-management:klusterlet-registration:agent", agent},
		"ClusterRoleBinding open-cluster-management:klusterlet-work:agent":                         {"ClusterRole", "open-cluster-management:klusterlet-work:agent", workSA},
		"ClusterRoleBinding open-cluster-management:klusterlet-work:aggregate":                     {"ClusterRole", "open-cluster-management:klusterlet-work:aggregate", workSA},
		"ClusterRoleBinding open-cluster-management:klusterlet-work:execution-admin":               {"ClusterRole", "admin", workSA},
		"RoleBinding open-cluster-management:klusterlet-managed-serviceaccount:agent":              {"Role", "open-cluster-management:klusterlet-managed-serviceaccount:agent", agent},
		"ClusterRoleBinding open-cluster-management:klusterlet-managed-serviceaccount:tokenreview": {"ClusterRole", "open-cluster-management:klusterlet-managed-serviceaccount:tokenreview", agent},
		"ClusterRoleBinding open-cluster-management:klusterlet-cluster-proxy:services":             {"ClusterRole", "open-cluster-management:klusterlet-cluster-proxy:services", agent},
	}
	seen := 0
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		seen++
		want, ok := bindings[o.GetKind()+" "+o.GetName()]
		if !ok {
			t.Errorf("unexpected %s %s", o.GetKind(), o.GetName())
			continue
		}
		equalJSON(t, o.GetName(), map[string]any{"roleRef": o.Object["roleRef"], "subjects": o.Object["subjects"]}, map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": want.kind, "name": want.role},
			"subjects": []any{want.subject},
		})
	}
	if seen != len(bindings) {
		t.Errorf("%d bindings, want %d", seen, len(bindings))
	}
	// The agent may request tokens of the work agent's ServiceAccount only.
	role := find(t, objs, "Role", "open-cluster-management:klusterlet-registration:agent")
	equalJSON(t, "Role namespace", role.GetNamespace(), ns)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if !slices.ContainsFunc(rules, func(r any) bool {
		b, _ := json.Marshal(r)
		return string(b) == `{"apiGroups":[""],"resourceNames":["klusterlet-work-sa"],"resources":["serviceaccounts/token"],"verbs":["create"]}`
	}) {
		t.Errorf("Role rules %v lack create on serviceaccounts/token klusterlet-work-sa", rules)
	}
	// The aggregate is filled in by kube-controller-manager from the labelled ClusterRoles,
	// this chart's execution role among them; the chart owns none of its rules.
	agg := find(t, objs, "ClusterRole", "open-cluster-management:klusterlet-work:aggregate")
	equalJSON(t, "aggregationRule", agg.Object["aggregationRule"], map[string]any{"clusterRoleSelectors": []any{
		map[string]any{"matchLabels": map[string]any{"open-cluster-management.io/aggregate-to-work": "true"}}}})
	if _, ok := agg.Object["rules"]; ok {
		t.Errorf("the aggregate ClusterRole sets rules: %v", agg.Object["rules"])
	}
	exec := find(t, objs, "ClusterRole", "open-cluster-management:klusterlet-work:execution")
	equalJSON(t, "execution label", exec.GetLabels()["open-cluster-management.io/aggregate-to-work"], "true")
	// Without the operator nothing would act on a Klusterlet or the values ConfigMap.
	for _, o := range objs {
		if o.GetKind() == "Klusterlet" || o.GetKind() == "ConfigMap" {
			t.Errorf("render components renders %s %s", o.GetKind(), o.GetName())
		}
	}
}

// TestRenderKlusterletDefaultIsOperator: a plain helm install (no render value) installs OCM's
// way: the klusterlet operator, the Klusterlet, the bootstrap Secret and the values ConfigMap
// holding the values the Klusterlet does not carry; no agent (the operator renders those).
func TestRenderKlusterletDefaultIsOperator(t *testing.T) {
	ns := install.AgentNamespace
	objs := render(t, install.KlusterletChart, klusterletRelease, ns, map[string]any{"clusterName": "cluster1",
		"bootstrapHubKubeconfig": bootstrapKubeconfig, "replicas": 2, "flags": map[string]any{"v": 4}})
	find(t, objs, "Deployment", "klusterlet")
	find(t, objs, "Secret", "bootstrap-hub-kubeconfig")
	k := find(t, objs, "Klusterlet", "klusterlet")
	equalJSON(t, "Klusterlet", map[string]any{"apiVersion": k.GetAPIVersion(), "namespace": k.GetNamespace(), "spec": k.Object["spec"]}, map[string]any{
		"apiVersion": "operator.open-cluster-management.io/v1", "namespace": "",
		"spec": map[string]any{"clusterName": "cluster1", "namespace": ns, "deployOption": map[string]any{"mode": "Singleton"}},
	})
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() != "klusterlet" {
			t.Errorf("the default render renders Deployment %s: the operator renders the agents", o.GetName())
		}
	}
	cm := find(t, objs, "ConfigMap", "flotilla-klusterlet-values")
	equalJSON(t, "ConfigMap namespace", cm.GetNamespace(), ns)
	var values map[string]any
	if err := yaml.Unmarshal([]byte(field(t, cm.Object, "data", "values.yaml").(string)), &values); err != nil {
		t.Fatal(err)
	}
	equalJSON(t, "replicas", values["replicas"], 2)
	equalJSON(t, "flags.v", field(t, values, "flags", "v"), 4)
	for _, owned := range []string{"render", "klusterlet", "clusterName", "images", "specFlags", "bootstrapHubKubeconfig"} {
		if _, ok := values[owned]; ok {
			t.Errorf("the values ConfigMap holds %s, which the Klusterlet (or the bootstrap Secret) carries", owned)
		}
	}
}

func TestRenderKlusterletValues(t *testing.T) {
	ns := "open-cluster-management-agent-hub2"
	objs := render(t, install.KlusterletChart, "hub2", ns, nonDefaultKlusterlet())
	deploy := find(t, objs, "Deployment", "klusterlet-hub2-agent")
	a := args(t, deploy)
	for _, want := range []string{
		"--agent-namespace=" + ns,
		"--leader-elect", // replicas 2
		"--leader-elect-namespace=" + ns,
		"--status-sync-interval=10s",
		"--disable-work-agent=true",
		"--feature-gates=AddonManagement=false,RawFeedbackJsonString=true",
		"--agent-name=agent-a",
	} {
		if !slices.Contains(a, want) {
			t.Errorf("args lack %s: %v", want, a)
		}
	}
	c := container(t, deploy)
	equalJSON(t, "image", field(t, c, "image"), "localhost/flotilla@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	equalJSON(t, "resources", field(t, c, "resources"), map[string]any{
		// values' requests replace the default's, limits stay (Helm merges maps)
		"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
		"limits":   map[string]any{"memory": "512Mi"},
	})
	pod := field(t, deploy.Object, "spec", "template").(map[string]any)
	for _, k := range []string{"nodeSelector", "tolerations"} {
		equalJSON(t, k, field(t, pod, "spec", k), nonDefaultKlusterlet()[k])
	}
	equalJSON(t, "serviceAccountName", field(t, pod, "spec", "serviceAccountName"), "klusterlet-hub2-agent")
	find(t, objs, "ServiceAccount", "klusterlet-hub2-agent")
	find(t, objs, "ServiceAccount", "klusterlet-hub2-work-sa")
	if !slices.Contains(a, "--work-service-account=klusterlet-hub2-work-sa") {
		t.Errorf("args lack --work-service-account=klusterlet-hub2-work-sa: %v", a)
	}
	crb := find(t, objs, "ClusterRoleBinding", "open-cluster-management:klusterlet-hub2-work:execution-admin")
	equalJSON(t, "roleRef", field(t, crb.Object, "roleRef", "name"), "flotilla-work")
	equalJSON(t, "subject", field(t, crb.Object, "subjects"), []any{map[string]any{"kind": "ServiceAccount", "name": "klusterlet-hub2-work-sa", "namespace": ns}})
	// Every cluster-scoped object carries the klusterlet's name: two klusterlets share a cluster.
	for _, o := range objs {
		if o.GetNamespace() == "" && o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "Namespace" && !strings.Contains(o.GetName(), "klusterlet-hub2") {
			t.Errorf("%s %s does not carry the klusterlet's name", o.GetKind(), o.GetName())
		}
	}
	// render operator renders the Klusterlet (render components none).
	withOperator := nonDefaultKlusterlet()
	withOperator["render"] = "operator"
	k := find(t, render(t, install.KlusterletChart, "hub2", ns, withOperator), "Klusterlet", "klusterlet-hub2")
	equalJSON(t, "Klusterlet spec", k.Object["spec"], map[string]any{
		"clusterName":           "cluster1",
		"namespace":             ns,
		"deployOption":          map[string]any{"mode": "Singleton"},
		"hubApiServerHostAlias": map[string]any{"ip": "10.0.0.7", "hostname": "hub.example"},
		"workConfiguration":     map[string]any{"featureGates": []any{map[string]any{"feature": "RawFeedbackJsonString", "mode": "Enable"}}},
	})
	secret := find(t, objs, "Secret", "bootstrap-hub-kubeconfig")
	equalJSON(t, "Secret namespace", secret.GetNamespace(), ns)
	data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
	if len(data) != 1 || data["kubeconfig"] == "" {
		t.Fatalf("Secret data %v, want key kubeconfig only", data)
	}
	decoded, err := base64.StdEncoding.DecodeString(data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	equalJSON(t, "bootstrap kubeconfig", string(decoded), bootstrapKubeconfig)
}

func TestValuesAreValidated(t *testing.T) {
	for _, tc := range []struct {
		name, chart string
		values      map[string]any
		want        []string // all in the error
	}{
		{"wrong type", install.HubChart, map[string]any{"replicas": "three"}, []string{"/replicas", "want integer"}},
		{"wrong flag type", install.HubChart, map[string]any{"flags": map[string]any{"kube-api-qps": "fast"}}, []string{"/flags/kube-api-qps", "want number"}},
		{"unknown flag", install.HubChart, map[string]any{"flags": map[string]any{"kube-api-qpz": 50}}, []string{"/flags", "'kube-api-qpz' not allowed"}},
		{"chart-owned flag", install.HubChart, map[string]any{"flags": map[string]any{"leader-elect": true}}, []string{"/flags", "'leader-elect' not allowed"}},
		{"unknown feature gate", install.HubChart, map[string]any{"flags": map[string]any{"feature-gates": map[string]any{"ClusterProfile": true}}}, []string{"/flags/feature-gates", "'ClusterProfile' not allowed"}},
		{"bad duration", install.HubChart, map[string]any{"flags": map[string]any{"policy-eval-timeout": "3 seconds"}}, []string{"/flags/policy-eval-timeout"}},
		{"unknown top-level key", install.HubChart, map[string]any{"replica": 2}, []string{"'replica' not allowed"}},
		{"klusterlet unknown flag", install.KlusterletChart, map[string]any{"clusterName": "c1", "flags": map[string]any{"cluster-namespace": "x"}}, []string{"/flags", "'cluster-namespace' not allowed"}},
		{"klusterlet bad cluster name", install.KlusterletChart, map[string]any{"clusterName": "Cluster_1"}, []string{"/clusterName"}},
		{"klusterlet bad spec field", install.KlusterletChart, map[string]any{"clusterName": "c1", "klusterlet": map[string]any{"spec": map[string]any{"clusterName": "other"}}}, []string{"/klusterlet/spec", "'clusterName' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := install.HubNamespace
			if tc.chart == install.KlusterletChart {
				ns = install.AgentNamespace
			}
			_, err := install.Render(tc.chart, "r", ns, tc.values)
			if err == nil {
				t.Fatalf("rendered with %v", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestKlusterletNeedsClusterNameAndAgentNamespace(t *testing.T) {
	_, err := install.Render(install.KlusterletChart, klusterletRelease, install.AgentNamespace, nil)
	if err == nil || !strings.Contains(err.Error(), "clusterName is required") {
		t.Errorf("without clusterName: got %v, want an error saying clusterName is required", err)
	}
	_, err = install.Render(install.KlusterletChart, klusterletRelease, "default", map[string]any{"clusterName": "c1"})
	if err == nil || !strings.Contains(err.Error(), `"default"`) || !strings.Contains(err.Error(), "open-cluster-management-") {
		t.Errorf("in namespace default: got %v, want an error naming the namespace and the required prefix", err)
	}
}

func TestTwoKlusterletsShareNoClusterScopedName(t *testing.T) {
	a := render(t, install.KlusterletChart, "hub-a", "open-cluster-management-agent", map[string]any{"render": "components", "clusterName": "c1"})
	b := render(t, install.KlusterletChart, "hub-b", "open-cluster-management-agent-b", map[string]any{"render": "components", "clusterName": "c1", "klusterlet": map[string]any{"name": "klusterlet-b"},
		"builtinAddons": map[string]any{"createNamespace": false}})
	// Cluster-scoped objects other than the CRDs, which both releases install alike, keyed by
	// kind and name; namespaced ones must differ in namespace.
	names := func(objs []*unstructured.Unstructured) map[string]bool {
		m := map[string]bool{}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				continue
			}
			m[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = true
		}
		return m
	}
	na, nb := names(a), names(b)
	if len(na) < 5 || len(nb) < 5 {
		t.Fatalf("too few objects: %v, %v", na, nb)
	}
	for k := range na {
		if nb[k] {
			t.Errorf("both klusterlets render %s", k)
		}
	}
	if t.Failed() {
		t.Logf("a: %v\nb: %v", slices.Sorted(maps.Keys(na)), slices.Sorted(maps.Keys(nb)))
	}
}

func TestWriteYAML(t *testing.T) {
	objs := render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, map[string]any{"clusterName": "c1"})
	var buf bytes.Buffer
	if err := install.WriteYAML(&buf, objs); err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(buf.String(), "---\n")
	if docs[0] != "" || len(docs)-1 != len(objs) {
		t.Fatalf("%d documents for %d objects", len(docs)-1, len(objs))
	}
	for i, d := range docs[1:] {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		equalJSON(t, fmt.Sprintf("document %d", i), m, objs[i].Object)
	}
}

func TestRenderNeedsReleaseAndNamespace(t *testing.T) {
	if _, err := install.Render(install.HubChart, "Not_Valid", install.HubNamespace, nil); err == nil || !strings.Contains(err.Error(), `"Not_Valid"`) {
		t.Errorf("invalid release name: got %v, want an error naming it", err)
	}
	if _, err := install.Render(install.HubChart, hubRelease, "", nil); err == nil {
		t.Error("rendered without a namespace")
	}
}

func TestLoadUnknownChart(t *testing.T) {
	if _, err := install.Load("flotilla-operator"); err == nil || !strings.Contains(err.Error(), install.HubChart) {
		t.Errorf("got %v, want an error listing the charts", err)
	}
}

// TestChartCRDsAreCurrent fails when a chart's crds/ differs from core/crds/bases: the copies
// are made by `make generate`.
func TestChartCRDsAreCurrent(t *testing.T) {
	bases, err := filepath.Glob("../crds/bases/*.yaml")
	if err != nil || len(bases) == 0 {
		t.Fatalf("core/crds/bases: %v (%d files)", err, len(bases))
	}
	hubWant := map[string][]byte{}
	klusterletWant := map[string][]byte{}
	for _, p := range bases {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		hubWant[filepath.Base(p)] = data
		if slices.Contains(environment.ManagedClusterCRDs, crd.Metadata.Name) {
			klusterletWant[filepath.Base(p)] = data
		}
	}
	if len(klusterletWant) != len(environment.ManagedClusterCRDs) {
		t.Fatalf("core/crds/bases lacks some of %v", environment.ManagedClusterCRDs)
	}
	for chart, want := range map[string]map[string][]byte{install.HubChart: hubWant, install.KlusterletChart: klusterletWant} {
		dir := filepath.Join("..", "..", "charts", chart, "crds")
		got, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got {
			if _, ok := want[filepath.Base(p)]; !ok {
				t.Errorf("charts/%s/crds/%s is not a CRD of core/crds/bases the chart needs: run make generate", chart, filepath.Base(p))
			}
		}
		for name, data := range want {
			have, err := os.ReadFile(filepath.Join(dir, name))
			switch {
			case os.IsNotExist(err):
				t.Errorf("charts/%s/crds/%s is missing: run make generate", chart, name)
			case err != nil:
				t.Error(err)
			case !bytes.Equal(have, data):
				t.Errorf("charts/%s/crds/%s differs from core/crds/bases/%s: run make generate", chart, name, name)
			}
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestKlusterletIdentities(t *testing.T) {
	// An agent namespace outside open-cluster-management-*, as the end-to-end suites use.
	objs, err := install.KlusterletIdentities("k2", "agent-k2")
	if err != nil {
		t.Fatal(err)
	}
	if objs[0].GetKind() != "Namespace" || objs[0].GetName() != "agent-k2" {
		t.Fatalf("first object %s %s, want Namespace agent-k2", objs[0].GetKind(), objs[0].GetName())
	}
	kinds := map[string]int{}
	for _, o := range objs[1:] {
		kinds[o.GetKind()]++
		switch {
		case (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.Contains(o.GetName(), "managed-serviceaccount"):
			// The managed-serviceaccount agent's rights stay in its own namespace.
			equalJSON(t, o.GetKind()+" "+o.GetName()+" namespace", o.GetNamespace(), "open-cluster-management-managed-serviceaccount")
		case o.GetKind() == "ServiceAccount" || o.GetKind() == "Role" || o.GetKind() == "RoleBinding":
			equalJSON(t, o.GetKind()+" "+o.GetName()+" namespace", o.GetNamespace(), "agent-k2")
		default:
			equalJSON(t, o.GetKind()+" "+o.GetName()+" namespace", o.GetNamespace(), "")
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			equalJSON(t, o.GetName()+" subject namespace", s.(map[string]any)["namespace"], "agent-k2")
		}
	}
	equalJSON(t, "kinds", kinds, map[string]int{"ServiceAccount": 2, "ClusterRole": 7, "ClusterRoleBinding": 7, "Namespace": 1, "Role": 2, "RoleBinding": 2})
	find(t, objs, "ServiceAccount", install.KlusterletAgentServiceAccount("k2"))
	find(t, objs, "ServiceAccount", install.KlusterletWorkServiceAccount("k2"))
}

// TestRenderHubAddons: addons.* become --addons (and the tunnel server count the replicas),
// --addons-install-all and the cluster-proxy frontend on its Service port, the hub's RBAC for
// them and the unbound proxy-all ClusterRole; cluster-gateway alone, and installAll without
// an add-on, fail.
func TestRenderHubAddons(t *testing.T) {
	ns := install.HubNamespace
	none := render(t, install.HubChart, hubRelease, ns, singleHub(nil))
	for _, a := range args(t, find(t, none, "Deployment", "flotilla-hub")) {
		if strings.HasPrefix(a, "--addons") || strings.HasPrefix(a, "--cluster-proxy-") {
			t.Errorf("default hub args have %s", a)
		}
	}
	for _, o := range none {
		if o.GetKind() == "Service" && o.GetName() == "flotilla-hub-cluster-proxy" {
			t.Errorf("default hub chart has the Service %s without cluster-proxy", o.GetName())
		}
	}
	on := map[string]any{"enabled": true}
	objs := render(t, install.HubChart, hubRelease, ns, singleHub(map[string]any{"replicas": 2,
		"addons": map[string]any{"installAll": true, "clusterProxy": on, "managedServiceAccount": on, "clusterGateway": on}}))
	deploy := find(t, objs, "Deployment", "flotilla-hub")
	got := args(t, deploy)
	for _, want := range []string{"--addons=cluster-proxy,managed-serviceaccount,cluster-gateway", "--cluster-proxy-server-count=2",
		"--addons-install-all", "--cluster-proxy-bind-address=:8090"} {
		if !slices.Contains(got, want) {
			t.Errorf("hub args %v lack %s", got, want)
		}
	}
	// The frontend: container port proxy-server behind the Service's port 8090, upstream's.
	ports, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(ports), "map[containerPort:8090 name:proxy-server protocol:TCP]") {
		t.Errorf("hub container lacks port proxy-server 8090: %v", ports)
	}
	svc := find(t, objs, "Service", "flotilla-hub-cluster-proxy")
	equalJSON(t, "Service flotilla-hub-cluster-proxy namespace", svc.GetNamespace(), ns)
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	equalJSON(t, "Service flotilla-hub-cluster-proxy ports", svcPorts, []any{map[string]any{"name": "proxy-server", "port": 8090, "targetPort": "proxy-server", "protocol": "TCP"}})
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	labels := deploy.GetLabels()
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("Service flotilla-hub-cluster-proxy selects %s=%s, which the hub Pods lack (%v)", k, v, labels)
		}
	}
	// Another port, or 0 (off: no flag, no Service), and only with cluster-proxy.
	other := render(t, install.HubChart, hubRelease, ns, singleHub(map[string]any{"addons": map[string]any{
		"clusterProxy": map[string]any{"enabled": true, "frontendPort": 18090}}}))
	if a := args(t, find(t, other, "Deployment", "flotilla-hub")); !slices.Contains(a, "--cluster-proxy-bind-address=:18090") || slices.Contains(a, "--addons-install-all") {
		t.Errorf("frontendPort 18090 without installAll: hub args %v", a)
	}
	for _, values := range []map[string]any{
		{"addons": map[string]any{"clusterProxy": map[string]any{"enabled": true, "frontendPort": 0}}},
		{"addons": map[string]any{"managedServiceAccount": on}},
	} {
		objs := render(t, install.HubChart, hubRelease, ns, singleHub(values))
		for _, a := range args(t, find(t, objs, "Deployment", "flotilla-hub")) {
			if strings.HasPrefix(a, "--cluster-proxy-bind-address") {
				t.Errorf("values %v: hub args have %s", values, a)
			}
		}
		for _, o := range objs {
			if o.GetKind() == "Service" && o.GetName() == "flotilla-hub-cluster-proxy" {
				t.Errorf("values %v: Service %s rendered with the frontend off", values, o.GetName())
			}
		}
	}
	// Every render refuses what no hub could run, the operator's (the default) at install
	// rather than when it renders the components.
	for render, base := range map[string]map[string]any{"operator": nil, "components Single": singleHub(nil), "components Split": splitHub(nil)} {
		_, err := install.Render(install.HubChart, hubRelease, ns, install.MergeValues(base, map[string]any{"addons": map[string]any{"installAll": true}}))
		if err == nil || !strings.Contains(err.Error(), "addons.installAll needs an enabled add-on") {
			t.Errorf("render %s, installAll without add-ons: %v, want the chart to refuse it", render, err)
		}
		_, err = install.Render(install.HubChart, hubRelease, ns, install.MergeValues(base, map[string]any{"addons": map[string]any{"clusterGateway": on}}))
		if err == nil || !strings.Contains(err.Error(), "addons.clusterGateway.enabled needs addons.clusterProxy.enabled") {
			t.Errorf("render %s, cluster-gateway alone: %v, want the chart to refuse it", render, err)
		}
	}
	rules, _, _ := unstructured.NestedSlice(find(t, objs, "ClusterRole", "flotilla-hub").Object, "rules")
	if !strings.Contains(fmt.Sprint(rules), "apiservices") || !strings.Contains(fmt.Sprint(rules), "authentication.open-cluster-management.io") {
		t.Errorf("hub ClusterRole rules %v lack APIServices or ManagedServiceAccounts", rules)
	}
	find(t, objs, "ClusterRole", "open-cluster-management:cluster-gateway:proxy-all")
	for _, o := range objs {
		if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ref == "open-cluster-management:cluster-gateway:proxy-all" {
			t.Errorf("%s %s binds proxy-all: it must be bound by an admin", o.GetKind(), o.GetName())
		}
	}
}

// TestKlusterletIdentitiesKeepOtherNamespaces: the identities of a klusterlet in another agent
// namespace move there, but the built-in managed-serviceaccount agent's Role stays in its own
// namespace, which comes with them.
func TestKlusterletIdentitiesKeepOtherNamespaces(t *testing.T) {
	objs, err := install.KlusterletIdentities("klusterlet-b", "agent-b")
	if err != nil {
		t.Fatal(err)
	}
	const msaNS = "open-cluster-management-managed-serviceaccount"
	role := find(t, objs, "Role", "open-cluster-management:klusterlet-b-managed-serviceaccount:agent")
	if role.GetNamespace() != msaNS {
		t.Errorf("Role %s in namespace %q, want %s", role.GetName(), role.GetNamespace(), msaNS)
	}
	find(t, objs, "Namespace", msaNS)
	if r := find(t, objs, "Role", "open-cluster-management:klusterlet-b-registration:agent"); r.GetNamespace() != "agent-b" {
		t.Errorf("the agent's Role in namespace %q, want agent-b", r.GetNamespace())
	}
}

// withoutCRDs drops the chart's CRDs (crds/, the same in every render) from objs.
func withoutCRDs(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			out = append(out, o)
		}
	}
	return out
}

// TestSingleTopologyRendersTodaysObjects: render components with topology Single is,
// byte for byte, what the chart rendered before the operator and Split renders existed
// (testdata/*.golden.yaml, written from commit c893925's chart; FLOTILLA_UPDATE_GOLDEN=1
// rewrites them), less the hub's --cluster-manager-name and the ClusterManager, which only
// the operator follows.
func TestSingleTopologyRendersTodaysObjects(t *testing.T) {
	for _, tc := range []struct {
		golden string
		values map[string]any
	}{
		{"hub-single-default.golden.yaml", singleHub(nil)},
		{"hub-single-nondefault.golden.yaml", singleHub(nonDefaultHub())},
		{"hub-single-explicit.golden.yaml", map[string]any{"render": "components", "topology": "Single"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := install.WriteYAML(&buf, withoutCRDs(render(t, install.HubChart, hubRelease, install.HubNamespace, tc.values))); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if os.Getenv("FLOTILLA_UPDATE_GOLDEN") == "1" {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("render differs from %s:\n%s", path, buf.String())
			}
		})
	}
}

// splitDeployments are the Deployments of topology Split with the default ClusterManager
// name, as OCM's cluster-manager names them, and their ServiceAccounts.
var splitDeployments = map[string]string{
	"cluster-manager-registration-controller":  "registration-controller-sa",
	"cluster-manager-registration-webhook":     "registration-webhook-sa",
	"cluster-manager-work-webhook":             "work-webhook-sa",
	"cluster-manager-work-controller":          "work-controller-sa",
	"cluster-manager-placement-controller":     "placement-controller-sa",
	"cluster-manager-addon-manager-controller": "addon-manager-controller-sa",
}

func deploymentsOf(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestSplitTopology(t *testing.T) {
	ns := install.HubNamespace
	objs := render(t, install.HubChart, hubRelease, ns, splitHub(nil))
	if got, want := deploymentsOf(objs), slices.Sorted(maps.Keys(splitDeployments)); !slices.Equal(got, want) {
		t.Fatalf("Deployments %v, want %v", got, want)
	}
	if has(objs, "ClusterManager") {
		t.Errorf("topology Split rendered a ClusterManager (the operator owns it)")
	}
	// The components' cluster-wide RBAC is templates/components/rbac.yaml's, named so the
	// operator's ClusterRole may bind and escalate them.
	for _, o := range objs {
		if k := o.GetKind(); (k == "ClusterRole" || k == "ClusterRoleBinding") && !strings.HasPrefix(o.GetName(), "open-cluster-management:flotilla-hub:") {
			t.Errorf("topology Split rendered %s %s, not a component's", k, o.GetName())
		}
	}
	for name, sa := range splitDeployments {
		d := find(t, objs, "Deployment", name)
		c := strings.TrimPrefix(strings.TrimPrefix(name, "cluster-manager-"), "")
		if c == "addon-manager-controller" {
			c = "addon-manager"
		}
		equalJSON(t, name+" serviceAccountName", field(t, d.Object, "spec", "template", "spec", "serviceAccountName"), sa)
		equalJSON(t, name+" selector", field(t, d.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/component"), c)
		a := args(t, d)
		for _, want := range []string{"hub", "--components=" + c} {
			if !slices.Contains(a, want) {
				t.Errorf("%s args %v lack %s", name, a, want)
			}
		}
		if slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--cluster-manager-name") }) {
			t.Errorf("%s args %v pass the deprecated --cluster-manager-name", name, a)
		}
		webhook := map[string]string{"registration-webhook": name, "work-webhook": name, "addon-manager": "cluster-manager-addon-webhook"}[c]
		controller := c != "registration-webhook" && c != "work-webhook"
		if got := slices.Contains(a, "--leader-elect-name="+name+"-lock") && slices.Contains(a, "--leader-elect"); got != controller {
			t.Errorf("%s: leader election %v, want %v (args %v)", name, got, controller, a)
		}
		if slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--leader-elect-name=flotilla-hub") }) {
			t.Errorf("%s runs with the single hub's Lease: %v", name, a)
		}
		wantWebhook := []string{}
		if webhook != "" {
			wantWebhook = []string{"--webhook-configuration-name=" + webhook, "--webhook-secret-name=" + webhook + "-serving-cert",
				"--webhook-service=" + ns + "/" + webhook + ":443"}
			svc := find(t, objs, "Service", webhook)
			equalJSON(t, webhook+" selector", field(t, svc.Object, "spec", "selector", "app.kubernetes.io/component"), c)
		}
		var gotWebhook []string
		for _, s := range a {
			if strings.HasPrefix(s, "--webhook-configuration-name") || strings.HasPrefix(s, "--webhook-secret-name") || strings.HasPrefix(s, "--webhook-service") {
				gotWebhook = append(gotWebhook, s)
			}
		}
		if !slices.Equal(gotWebhook, wantWebhook) {
			t.Errorf("%s webhook args %v, want %v", name, gotWebhook, wantWebhook)
		}
	}

	t.Run("per-component values", func(t *testing.T) {
		objs := render(t, install.HubChart, hubRelease, ns, map[string]any{
			"render":         "components",
			"topology":       "Split",
			"clusterManager": map[string]any{"name": "hub-a"},
			"nodeSelector":   map[string]any{"role": "infra"},
			"tolerations":    []any{map[string]any{"key": "infra", "operator": "Exists"}},
			"flags":          map[string]any{"feature-gates": map[string]any{"DefaultClusterSet": false, "ManifestWorkReplicaSet": true}},
			"components": map[string]any{
				"placement-controller": map[string]any{"replicas": 3, "image": "example.com/flotilla:p"},
				"work-controller":      map[string]any{"featureGates": map[string]any{"ManifestWorkReplicaSet": false}},
				"work-webhook":         map[string]any{"bind": map[string]any{"port": 9444, "healthProbePort": 8001, "metricsPort": 8002, "hostNetwork": true}},
				"addon-manager":        map[string]any{"enabled": false},
			},
		})
		if got := deploymentsOf(objs); len(got) != 5 || slices.Contains(got, "hub-a-addon-manager-controller") || !slices.Contains(got, "hub-a-placement-controller") {
			t.Errorf("Deployments %v, want five named hub-a-*, no add-on manager", got)
		}
		if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetName() == "hub-a-addon-webhook" }) {
			t.Error("the add-on manager's Service is rendered with the add-on manager off")
		}
		for _, d := range deploymentsOf(objs) {
			pod := field(t, find(t, objs, "Deployment", d).Object, "spec", "template", "spec").(map[string]any)
			equalJSON(t, d+" nodeSelector", pod["nodeSelector"], map[string]any{"role": "infra"})
			equalJSON(t, d+" tolerations", pod["tolerations"], []any{map[string]any{"key": "infra", "operator": "Exists"}})
		}
		p := find(t, objs, "Deployment", "hub-a-placement-controller")
		equalJSON(t, "placement replicas", field(t, p.Object, "spec", "replicas"), 3)
		equalJSON(t, "placement image", field(t, container(t, p), "image"), "example.com/flotilla:p")
		if !slices.Contains(args(t, find(t, objs, "Deployment", "hub-a-work-controller")), "--feature-gates=DefaultClusterSet=false,ManifestWorkReplicaSet=false") {
			t.Errorf("work-controller gates: %v", args(t, find(t, objs, "Deployment", "hub-a-work-controller")))
		}
		if !slices.Contains(args(t, find(t, objs, "Deployment", "hub-a-registration-controller")), "--feature-gates=DefaultClusterSet=false,ManifestWorkReplicaSet=true") {
			t.Errorf("registration-controller gates: %v", args(t, find(t, objs, "Deployment", "hub-a-registration-controller")))
		}
		w := find(t, objs, "Deployment", "hub-a-work-webhook")
		wa := args(t, w)
		for _, want := range []string{"--webhook-bind-address=:9444", "--health-probe-bind-address=:8001", "--metrics-bind-address=:8002"} {
			if !slices.Contains(wa, want) {
				t.Errorf("work-webhook args %v lack %s", wa, want)
			}
		}
		equalJSON(t, "work-webhook hostNetwork", field(t, w.Object, "spec", "template", "spec", "hostNetwork"), true)
		equalJSON(t, "work-webhook dnsPolicy", field(t, w.Object, "spec", "template", "spec", "dnsPolicy"), "ClusterFirstWithHostNet")
		equalJSON(t, "work-webhook webhook port", field(t, container(t, w), "ports").([]any)[0], map[string]any{"name": "webhook", "containerPort": 9444, "protocol": "TCP"})
		if _, ok := field(t, find(t, objs, "Deployment", "hub-a-registration-webhook").Object, "spec", "template", "spec").(map[string]any)["hostNetwork"]; ok {
			t.Error("registration-webhook got the work webhook's hostNetwork")
		}
	})

	t.Run("resourceRequirement", func(t *testing.T) {
		for _, tc := range []struct {
			rr   map[string]any
			want any
		}{
			{map[string]any{"type": "Default"}, map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "512Mi"}}},
			{map[string]any{"type": "BestEffort"}, nil},
			{map[string]any{"type": "ResourceRequirement", "resourceRequirements": map[string]any{"requests": map[string]any{"cpu": "1"}}}, map[string]any{"requests": map[string]any{"cpu": "1"}}},
		} {
			for _, topology := range []string{"Split", "Single"} {
				objs := render(t, install.HubChart, hubRelease, ns, map[string]any{"render": "components", "topology": topology, "resourceRequirement": tc.rr})
				for _, d := range deploymentsOf(objs) {
					equalJSON(t, fmt.Sprintf("%s %s resources with %v", topology, d, tc.rr), container(t, find(t, objs, "Deployment", d))["resources"], tc.want)
				}
			}
		}
	})

	t.Run("Single takes the components' gates and image", func(t *testing.T) {
		objs := render(t, install.HubChart, hubRelease, ns, singleHub(map[string]any{"components": map[string]any{
			"registration-controller": map[string]any{"image": "example.com/flotilla:r", "featureGates": map[string]any{"ManagedClusterAutoApproval": true}},
			"addon-manager":           map[string]any{"featureGates": map[string]any{"AddonManagement": false}},
		}}))
		d := find(t, objs, "Deployment", "flotilla-hub")
		equalJSON(t, "image", field(t, container(t, d), "image"), "example.com/flotilla:r")
		if !slices.Contains(args(t, d), "--feature-gates=AddonManagement=false,ManagedClusterAutoApproval=true") {
			t.Errorf("args %v", args(t, d))
		}
	})
}

func TestOperatorRender(t *testing.T) {
	const ns = "open-cluster-management"
	objs := withoutCRDs(render(t, install.HubChart, hubRelease, ns, map[string]any{
		"render":       "operator",
		"topology":     "Split",
		"nodeSelector": map[string]any{"role": "infra"},
		"components":   map[string]any{"placement-controller": map[string]any{"replicas": 2}},
		"clusterManager": map[string]any{"spec": map[string]any{
			"workConfiguration": map[string]any{"featureGates": []any{map[string]any{"feature": "ManifestWorkReplicaSet", "mode": "Enable"}}}}},
	}))
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(got)
	want := []string{
		"ClusterManager /cluster-manager",
		"ClusterRole /cluster-manager",
		"ClusterRoleBinding /cluster-manager",
		"ConfigMap open-cluster-management/flotilla-hub-values",
		"Deployment open-cluster-management/cluster-manager",
		"Namespace /open-cluster-management",
		"Namespace /open-cluster-management-hub",
		"Role open-cluster-management-hub/cluster-manager",
		"Role open-cluster-management/cluster-manager",
		"RoleBinding open-cluster-management-hub/cluster-manager",
		"RoleBinding open-cluster-management/cluster-manager",
		"ServiceAccount open-cluster-management/cluster-manager",
	}
	if !slices.Equal(got, want) {
		t.Errorf("render operator:\n got %q\nwant %q", got, want)
	}
	d := find(t, objs, "Deployment", "cluster-manager")
	c := container(t, d)
	equalJSON(t, "container name (clusteradm looks it up)", c["name"], "registration-operator")
	equalJSON(t, "args", c["args"], []any{"operator", "hub", "--cluster-manager-name=cluster-manager"})
	image := c["image"].(string)
	if !slices.ContainsFunc(c["env"].([]any), func(e any) bool {
		m := e.(map[string]any)
		return m["name"] == "FLOTILLA_IMAGE" && m["value"] == image
	}) {
		t.Errorf("env %v lacks FLOTILLA_IMAGE=%s", c["env"], image)
	}
	equalJSON(t, "operator serviceAccountName", field(t, d.Object, "spec", "template", "spec", "serviceAccountName"), "cluster-manager")

	cm := find(t, objs, "ClusterManager", "cluster-manager")
	equalJSON(t, "ClusterManager spec", cm.Object["spec"], map[string]any{
		"nodePlacement":     map[string]any{"nodeSelector": map[string]any{"role": "infra"}},
		"workConfiguration": map[string]any{"featureGates": []any{map[string]any{"feature": "ManifestWorkReplicaSet", "mode": "Enable"}}},
	})

	var values map[string]any
	data := field(t, find(t, objs, "ConfigMap", "flotilla-hub-values").Object, "data", "values.yaml").(string)
	if err := yaml.Unmarshal([]byte(data), &values); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"render", "clusterManager", "nodeSelector", "tolerations", "resourceRequirement"} {
		if _, ok := values[k]; ok {
			t.Errorf("values ConfigMap carries %s", k)
		}
	}
	equalJSON(t, "ConfigMap topology", values["topology"], "Split")
	equalJSON(t, "ConfigMap placement replicas", field(t, values, "components", "placement-controller", "replicas"), 2)
	// What the operator renders from the ConfigMap is a valid components render.
	values["render"] = "components"
	render(t, install.HubChart, hubRelease, install.HubNamespace, values)

	// The operator may bind and change only the components' ClusterRoles.
	for _, r := range field(t, find(t, objs, "ClusterRole", "cluster-manager").Object, "rules").([]any) {
		rule := r.(map[string]any)
		for _, v := range rule["verbs"].([]any) {
			if (v == "escalate" || v == "bind" || v == "delete") && rule["resourceNames"] == nil {
				t.Errorf("ClusterRole cluster-manager grants %s without resourceNames: %v", v, rule)
			}
		}
	}
}

// TestDefaultRendersTheOperator: `helm install` with no values installs the hub operator, its
// RBAC, the ClusterManager it follows and its values ConfigMap, and no hub component (the
// operator deploys them, topology Split); the components render creates no ClusterManager,
// which nothing would follow without the operator.
func TestDefaultRendersTheOperator(t *testing.T) {
	const ns = "open-cluster-management"
	objs := withoutCRDs(render(t, install.HubChart, hubRelease, ns, nil))
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(got)
	want := []string{
		"ClusterManager /cluster-manager",
		"ClusterRole /cluster-manager",
		"ClusterRoleBinding /cluster-manager",
		"ConfigMap open-cluster-management/flotilla-hub-values",
		"Deployment open-cluster-management/cluster-manager",
		"Namespace /open-cluster-management",
		"Namespace /open-cluster-management-hub",
		"Role open-cluster-management-hub/cluster-manager",
		"Role open-cluster-management/cluster-manager",
		"RoleBinding open-cluster-management-hub/cluster-manager",
		"RoleBinding open-cluster-management/cluster-manager",
		"ServiceAccount open-cluster-management/cluster-manager",
	}
	if !slices.Equal(got, want) {
		t.Errorf("render with no values:\n got %q\nwant %q", got, want)
	}
	equalJSON(t, "operator args", container(t, find(t, objs, "Deployment", "cluster-manager"))["args"],
		[]any{"operator", "hub", "--cluster-manager-name=cluster-manager"})
	var values map[string]any
	data := field(t, find(t, objs, "ConfigMap", "flotilla-hub-values").Object, "data", "values.yaml").(string)
	if err := yaml.Unmarshal([]byte(data), &values); err != nil {
		t.Fatal(err)
	}
	equalJSON(t, "ConfigMap topology (what the operator deploys)", values["topology"], "Split")

	// clusterManager.create false leaves the ClusterManager to the user.
	if has(render(t, install.HubChart, hubRelease, ns, map[string]any{"clusterManager": map[string]any{"create": false}}), "ClusterManager") {
		t.Errorf("render operator with clusterManager.create false rendered a ClusterManager")
	}
	for topology, v := range map[string]map[string]any{"Single": singleHub(nil), "Split": splitHub(nil)} {
		v = install.MergeValues(v, map[string]any{"clusterManager": map[string]any{"create": true}})
		if has(render(t, install.HubChart, hubRelease, install.HubNamespace, v), "ClusterManager") {
			t.Errorf("render components, topology %s, rendered a ClusterManager, which nothing follows without the operator", topology)
		}
	}
}

func TestLintRenders(t *testing.T) {
	for _, values := range []map[string]any{
		{"render": "components", "topology": "Split"},
		{"render": "components", "topology": "Single"},
		{"render": "operator", "topology": "Split"},
		{"render": "operator", "topology": "Single"},
	} {
		if err := install.Lint(install.HubChart, values); err != nil {
			t.Errorf("%v: %v", values, err)
		}
	}
}

// TestSplitRBACFollowsEnabledComponents: a component switched off (AddonManagement off in the
// ClusterManager) gets neither Deployment nor identity, so the operator prunes both.
func TestSplitRBACFollowsEnabledComponents(t *testing.T) {
	objs := render(t, install.HubChart, hubRelease, install.HubNamespace, map[string]any{"render": "components", "topology": "Split",
		"components": map[string]any{"addon-manager": map[string]any{"enabled": false}}})
	for _, o := range objs {
		if strings.Contains(o.GetName(), "addon-manager") {
			t.Errorf("the disabled add-on manager still has %s %s", o.GetKind(), o.GetName())
		}
	}
	if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "ServiceAccount" && o.GetName() == "placement-controller-sa"
	}) {
		t.Error("the placement controller's ServiceAccount is missing")
	}
}
