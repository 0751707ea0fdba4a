package override

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/hash"
)

// deployment and configMap are manifests as users write them: keys not in canonical order,
// so a test sees whether untouched manifests keep their bytes.
const (
	deployment = `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"web","labels":{"app":"web"}},` +
		`"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
		`"spec":{"initContainers":[{"name":"init","image":"busybox:1.36"}],"containers":[{"name":"web","image":"quay.io/acme/web:1.0@sha256:` +
		`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","args":["--serve"],"env":[{"name":"DEBUG","value":"1"},{"name":"MODE","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]},` +
		`{"name":"sidecar","image":"envoy:v1"}]}}}}`
	configMap = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cfg","namespace":"web"},"data":{"greeting":"hello {{ .cluster.name }}","plain":"x<y"}}`
)

// template is the replica set's template: a Deployment and a ConfigMap.
func tmplSpec() *workv1.ManifestWorkSpec {
	return &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
		{RawExtension: runtime.RawExtension{Raw: []byte(deployment)}},
		{RawExtension: runtime.RawExtension{Raw: []byte(configMap)}},
	}}}
}

// cluster is a ManagedCluster with labels, claims and capacity.
func cluster(name string, labels, claims map[string]string) Cluster {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for k, v := range claims {
		mc.Status.ClusterClaims = append(mc.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
	}
	mc.Status.Capacity = clusterv1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("16Gi")}
	mc.Status.Allocatable = clusterv1.ResourceList{"cpu": resource.MustParse("7500m")}
	mc.Status.Version.Kubernetes = "v1.36.3"
	return Cluster{Cluster: mc, ClusterSets: []string{"prod", "eu"}, Placement: "all", GroupName: "canary", GroupIndex: 0}
}

var rs = types.NamespacedName{Namespace: "web", Name: "web"}

// compile compiles the override spec given in YAML, failing the test on errors.
func compile(t *testing.T, name, specYAML string) *Program {
	t.Helper()
	var spec flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec
	if err := yaml.UnmarshalStrict([]byte(specYAML), &spec); err != nil {
		t.Fatalf("override %s: %v", name, err)
	}
	p, errs := Compile(name, &spec, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatalf("override %s: %v", name, errs.ToAggregate())
	}
	return p
}

// compileErr compiles specYAML and returns the error list as one string.
func compileErr(t *testing.T, specYAML string) string {
	t.Helper()
	var spec flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec
	if err := yaml.UnmarshalStrict([]byte(specYAML), &spec); err != nil {
		t.Fatal(err)
	}
	_, errs := Compile("bad", &spec, field.NewPath("spec"))
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

// rules is a one-override spec with the given YAML rules list.
func rules(r string) string { return "replicaSets: [{name: web}]\nrules:\n" + r }

func render(t *testing.T, c Cluster, progs ...*Program) Result {
	t.Helper()
	res, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: progs, Cluster: c})
	if f != nil {
		t.Fatalf("render on %s: %v", c.Cluster.Name, f)
	}
	return res
}

func renderFail(t *testing.T, c Cluster, progs ...*Program) *RuleFailure {
	t.Helper()
	res, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: progs, Cluster: c})
	if f == nil {
		t.Fatalf("render on %s succeeded (%s); want a rule failure", c.Cluster.Name, res.Spec.Workload.Manifests[0].Raw)
	}
	return f
}

// manifest decodes the i-th rendered manifest.
func manifest(t *testing.T, res Result, i int) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(res.Spec.Workload.Manifests[i].Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at reads a path of keys and list indices from a decoded manifest.
func at(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, _ := m.(map[string]any)
			m = mm[k]
		case int:
			l, _ := m.([]any)
			if k >= len(l) {
				return nil
			}
			m = l[k]
		}
	}
	return m
}

var eu = cluster("cluster1", map[string]string{"region": "eu"}, map[string]string{"replicas": "3"})

// TestUnoverriddenHashIsTheTemplateHash: a cluster no rule changes gets the template itself
// and today's template hash (hash.Short(hash.JSON(spec)), as hub/mwrs templateHash), so
// introducing overrides rolls nothing out. The literal pins the bytes.
func TestUnoverriddenHashIsTheTemplateHash(t *testing.T) {
	tmpl := tmplSpec()
	want := hash.Short(hash.MustJSON(tmpl))
	const golden = "7e69981a5e94e499"
	for name, progs := range map[string][]*Program{
		"no overrides": nil,
		"no rule selects the cluster": {compile(t, "us", rules(`
- name: us
  clusters: {labelSelector: {matchLabels: {region: us}}}
  replicas: {value: 5}
`))},
		"a no-op rule": {compile(t, "noop", rules(`
- name: same
  replicas: {value: 1}
`))},
		"rules that undo each other": {compile(t, "undo", rules(`
- name: set
  manifests: [{kind: ConfigMap}]
  labels: {set: {x: y}}
- name: unset
  manifests: [{kind: ConfigMap}]
  labels: {remove: [x]}
`))},
	} {
		res, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmpl, Overrides: progs, Cluster: eu})
		if f != nil {
			t.Fatalf("%s: %v", name, f)
		}
		if res.Spec != tmpl {
			t.Errorf("%s: the spec is a copy; want the template itself", name)
		}
		if res.Hash != want {
			t.Errorf("%s: hash %s, want the template hash %s", name, res.Hash, want)
		}
		if res.Hash != golden {
			t.Errorf("%s: hash %s, want golden %s: a change here re-rolls every existing work", name, res.Hash, golden)
		}
		if len(res.Trace) != 0 && name != "rules that undo each other" {
			t.Errorf("%s: trace %v, want none", name, res.Trace)
		}
	}
}

func TestRuleAndOverrideOrder(t *testing.T) {
	set := func(name string, order, n int) *Program {
		return compile(t, name, fmt.Sprintf("replicaSets: [{name: web}]\norder: %d\nrules: [{name: r, replicas: {value: %d}}]", order, n))
	}
	replicas := func(progs ...*Program) any {
		return at(manifest(t, render(t, eu, progs...), 0), "spec", "replicas")
	}
	if got := replicas(set("b", 0, 2), set("a", 0, 3)); got != float64(2) {
		t.Errorf("equal order: replicas %v, want 2 (b after a)", got)
	}
	if got := replicas(set("a", 1, 4), set("b", 0, 2)); got != float64(4) {
		t.Errorf("order 1 after order 0: replicas %v, want 4 (order beats name)", got)
	}
	if got := replicas(set("z", -5, 7), set("a", 0, 2)); got != float64(2) {
		t.Errorf("negative order first: replicas %v, want 2", got)
	}
	two := compile(t, "two", rules(`
- {name: first, replicas: {value: 5}}
- {name: second, replicas: {value: 6}}
`))
	res := render(t, eu, two)
	if got := at(manifest(t, res, 0), "spec", "replicas"); got != float64(6) {
		t.Errorf("two rules: replicas %v, want 6 (the later rule wins)", got)
	}
	web := []string{"apps/Deployment web/web"}
	if want := []Applied{{"two", "first", 1, "replicas", web}, {"two", "second", 1, "replicas", web}}; fmt.Sprint(res.Trace) != fmt.Sprint(want) {
		t.Errorf("trace %v, want %v", res.Trace, want)
	}
}

// TestDeterministic renders the same inputs 100 times, with the cluster's maps rebuilt in
// shuffled insertion order, and wants the same bytes and hash each time; the ConfigMap, which
// no rule touches, keeps its raw (non-canonical) bytes.
func TestDeterministic(t *testing.T) {
	p := compile(t, "all", rules(`
- name: image
  image: {registry: '{{ index .cluster.labels "region" }}.registry.example.com'}
- name: labels
  manifests: [{group: apps, kind: Deployment}]
  labels: {set: {cluster: '{{ .cluster.name }}', sets: '{{ index .cluster.clusterSets 0 }}', z: 'a', b: 'c'}}
- name: env
  env: {set: [{name: CPU, value: '{{ .cluster.allocatable.cpu }}'}, {name: V, value: '{{ .cluster.kubernetesVersion }}'}]}
- name: patch
  manifests: [{kind: Deployment, group: apps}]
  mergePatch: {metadata: {annotations: {claims: '{{ index .cluster.claims "a" }}{{ index .cluster.claims "b" }}'}}}
`))
	keys := []string{"region", "a", "b", "c", "d", "e", "f", "g"}
	var first Result
	for i := range 100 {
		rand.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
		labels, claims := map[string]string{}, map[string]string{}
		for _, k := range keys {
			labels[k], claims[k] = "v"+k, "c"+k
		}
		labels["region"] = "eu"
		c := cluster("cluster1", labels, claims)
		rand.Shuffle(len(c.ClusterSets), func(a, b int) { c.ClusterSets[a], c.ClusterSets[b] = c.ClusterSets[b], c.ClusterSets[a] })
		res := render(t, c, p)
		if i == 0 {
			first = res
			continue
		}
		if res.Hash != first.Hash || string(res.Spec.Workload.Manifests[0].Raw) != string(first.Spec.Workload.Manifests[0].Raw) {
			t.Fatalf("render %d: hash %s, want %s\n%s\n%s", i, res.Hash, first.Hash, res.Spec.Workload.Manifests[0].Raw, first.Spec.Workload.Manifests[0].Raw)
		}
	}
	if got := string(first.Spec.Workload.Manifests[1].Raw); got != configMap {
		t.Errorf("the untouched ConfigMap was re-encoded:\n%s", got)
	}
	if got := at(manifest(t, first, 0), "metadata", "labels", "sets"); got != "eu" {
		t.Errorf(".cluster.clusterSets is not sorted: first is %v", got)
	}
}

func TestOverriders(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		manifest    int
		path        []any
		want        any
	}{
		{"jsonPatch value", `
- name: p
  manifests: [{group: apps, kind: Deployment}]
  jsonPatch: [{op: replace, path: /spec/template/spec/containers/1/image, value: envoy:v2}]
`, 0, []any{"spec", "template", "spec", "containers", 1, "image"}, "envoy:v2"},
		{"jsonPatch Integer valueTemplate", `
- name: p
  manifests: [{group: apps, kind: Deployment}]
  jsonPatch: [{op: replace, path: /spec/replicas, valueTemplate: '{{ mul (index .cluster.claims "replicas") 2 }}', valueType: Integer}]
`, 0, []any{"spec", "replicas"}, float64(6)},
		{"jsonPatch JSON valueTemplate", `
- name: p
  manifests: [{group: apps, kind: Deployment}]
  jsonPatch: [{op: add, path: /metadata/labels/x, valueTemplate: '"{{ .cluster.name }}"', valueType: JSON}]
`, 0, []any{"metadata", "labels", "x"}, "cluster1"},
		{"jsonPatch value strings are not templates", `
- name: p
  manifests: [{group: apps, kind: Deployment}]
  jsonPatch: [{op: add, path: /metadata/labels/x, value: '{{ .cluster.name }}'}]
`, 0, []any{"metadata", "labels", "x"}, "{{ .cluster.name }}"},
		{"mergePatch with a template", `
- name: m
  manifests: [{kind: ConfigMap}]
  mergePatch: {data: {region: '{{ index .cluster.labels "region" }}', plain: null}}
`, 1, []any{"data"}, map[string]any{"region": "eu", "greeting": "hello {{ .cluster.name }}"}},
		{"image registry keeps repository, tag and digest", `
- name: i
  image: {containers: [web], registry: 'eu.example.com'}
`, 0, []any{"spec", "template", "spec", "containers", 0, "image"}, "eu.example.com/acme/web:1.0@sha256:" + strings.Repeat("a", 64)},
		{"image tag drops the digest", `
- name: i
  image: {containers: [web], tag: '2.0'}
`, 0, []any{"spec", "template", "spec", "containers", 0, "image"}, "quay.io/acme/web:2.0"},
		{"image of an initContainer", `
- name: i
  image: {containers: [init], registry: 'localhost:5000'}
`, 0, []any{"spec", "template", "spec", "initContainers", 0, "image"}, "localhost:5000/busybox:1.36"},
		{"image by path", `
- name: i
  manifests: [{kind: ConfigMap}]
  image: {path: /data/plain, repository: 'nginx', tag: '1.27'}
`, 1, []any{"data", "plain"}, "nginx:1.27"},
		{"command replace on named containers", `
- name: c
  command: {containers: [sidecar], values: [/envoy, '--cluster={{ .cluster.name }}']}
`, 0, []any{"spec", "template", "spec", "containers", 1, "command"}, []any{"/envoy", "--cluster=cluster1"}},
		{"args append", `
- name: a
  args: {containers: [web], operation: Append, values: ['--region={{ index .cluster.labels "region" }}']}
`, 0, []any{"spec", "template", "spec", "containers", 0, "args"}, []any{"--serve", "--region=eu"}},
		{"args prepend", `
- name: a
  args: {containers: [web], operation: Prepend, values: [run]}
`, 0, []any{"spec", "template", "spec", "containers", 0, "args"}, []any{"run", "--serve"}},
		{"labels on the pod template too", `
- name: l
  manifests: [{kind: Deployment, group: apps}]
  labels: {set: {cluster: '{{ .cluster.name }}'}, remove: [app]}
`, 0, []any{"spec", "template", "metadata", "labels"}, map[string]any{"cluster": "cluster1"}},
		{"annotations on the manifest", `
- name: a
  manifests: [{kind: ConfigMap, name: cfg, namespace: web}]
  annotations: {set: {example.com/group: '{{ .group.name }}/{{ .group.index }}/{{ .placement }}'}}
`, 1, []any{"metadata", "annotations"}, map[string]any{"example.com/group": "canary/0/all"}},
		{"replicas from a claim", `
- name: r
  replicas: {template: '{{ index .cluster.claims "replicas" }}'}
`, 0, []any{"spec", "replicas"}, float64(3)},
		{"replicas from capacity", `
- name: r
  replicas: {template: '{{ max 1 (div .cluster.capacity.cpu 4000) }}'}
`, 0, []any{"spec", "replicas"}, float64(2)},
		{"env set replaces valueFrom, removes, appends", `
- name: e
  env: {containers: [web], set: [{name: MODE, value: prod}, {name: REGION, value: '{{ index .cluster.labels "region" }}'}], remove: [DEBUG]}
`, 0, []any{"spec", "template", "spec", "containers", 0, "env"}, []any{
			map[string]any{"name": "MODE", "value": "prod"}, map[string]any{"name": "REGION", "value": "eu"}}},
		{"expandTemplates", `
- name: x
  manifests: [{kind: ConfigMap}]
  expandTemplates: {}
`, 1, []any{"data", "greeting"}, "hello cluster1"},
		{"without expandTemplates {{ stays", `
- name: x
  manifests: [{kind: ConfigMap}]
  labels: {set: {a: b}}
`, 1, []any{"data", "greeting"}, "hello {{ .cluster.name }}"},
		{"rule for another cluster set does nothing", `
- name: x
  clusters: {clusterSets: [us]}
  replicas: {value: 9}
`, 0, []any{"spec", "replicas"}, float64(1)},
		{"rule for the cluster's set, label, claim and group", `
- name: x
  clusters:
    clusterSets: [eu]
    labelSelector: {matchLabels: {region: eu}}
    claimSelector: {matchExpressions: [{key: replicas, operator: In, values: ["3"]}]}
    decisionGroups: [{placement: all, groupIndex: 0}]
  replicas: {value: 9}
`, 0, []any{"spec", "replicas"}, float64(9)},
		{"rule for another decision group", `
- name: x
  clusters: {decisionGroups: [{groupName: rest}]}
  replicas: {value: 9}
`, 0, []any{"spec", "replicas"}, float64(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := render(t, eu, compile(t, "o", rules(tc.rules)))
			got := at(manifest(t, res, tc.manifest), tc.path...)
			if g, w := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", tc.want); g != w {
				t.Errorf("%v = %s\nwant %s", tc.path, g, w)
			}
		})
	}
}

// TestRuleFailures: each failure names the override, the rule, the cluster and the manifest.
func TestRuleFailures(t *testing.T) {
	for _, tc := range []struct {
		name, rules, manifest string
		want                  []string
	}{
		{"replace of a missing path", `
- name: p
  manifests: [{kind: Deployment, group: apps}]
  jsonPatch: [{op: replace, path: /spec/template/spec/doesNotExist, value: 1}]
`, "apps/Deployment web/web", []string{"jsonPatch[0] replace /spec/template/spec/doesNotExist"}},
		{"remove of a missing path", `
- name: p
  jsonPatch: [{op: remove, path: /spec/nope}]
`, "apps/Deployment web/web", []string{"jsonPatch[0] remove /spec/nope"}},
		{"identity change", `
- name: p
  manifests: [{kind: Deployment, group: apps}]
  jsonPatch: [{op: replace, path: /kind, value: StatefulSet}]
`, "apps/Deployment web/web", []string{`changes the manifest's identity: kind "Deployment" → "StatefulSet"`}},
		{"rename by merge patch", `
- name: p
  manifests: [{kind: ConfigMap}]
  mergePatch: {metadata: {name: other}}
`, "ConfigMap web/cfg", []string{`metadata.name "cfg" → "other"`}},
		{"missing key", `
- name: p
  labels: {set: {r: '{{ .cluster.labels.zone }}'}}
`, "apps/Deployment web/web", []string{"labels.set[r]", `map has no entry for key "zone"`}},
		{"required", `
- name: p
  replicas: {template: '{{ required "claim size is missing" (index .cluster.claims "size") }}'}
`, "apps/Deployment web/web", []string{"claim size is missing"}},
		{"integer overflow", `
- name: p
  replicas: {template: '{{ mul 9223372036854775807 2 }}'}
`, "apps/Deployment web/web", []string{"integer overflow"}},
		{"division by zero", `
- name: p
  replicas: {template: '{{ div 1 0 }}'}
`, "apps/Deployment web/web", []string{"division by zero"}},
		{"replicas not an int32", `
- name: p
  replicas: {template: '{{ index .cluster.labels "region" }}'}
`, "apps/Deployment web/web", []string{`replicas.template gave "eu"`}},
		{"replicas on a ConfigMap", `
- name: p
  manifests: [{kind: ConfigMap}]
  replicas: {value: 1}
`, "ConfigMap web/cfg", []string{"kind ConfigMap has no spec.replicas"}},
		{"a container that is not there", `
- name: p
  image: {containers: [nope], tag: v1}
`, "apps/Deployment web/web", []string{`container "nope" not found`}},
		{"image on a kind without a pod template", `
- name: p
  manifests: [{kind: ConfigMap}]
  image: {tag: v1}
`, "ConfigMap web/cfg", []string{"has no pod template; set path"}},
		{"a rendered digest that is not one", `
- name: p
  image: {containers: [web], digest: '{{ .cluster.name }}'}
`, "apps/Deployment web/web", []string{`"cluster1" is not sha256:<64 hex>`}},
		{"a label value that is not one", `
- name: p
  labels: {set: {a: '{{ .cluster.name }} x'}}
`, "apps/Deployment web/web", []string{"is not a label value"}},
		{"replace cap", `
- name: p
  annotations: {set: {a: "{{ $s := \"xxxxxxxxxxxxxxxx\" }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s }}"}}
`, "apps/Deployment web/web", []string{"replace: result over 16384 bytes"}},
		{"output cap", `
- name: p
  annotations: {set: {a: "{{ $s := \"xxxxxxxxxxxxxxxx\" }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s = replace \"x\" \"xx\" $s }}{{ $s }}{{ $s }}{{ $s }}"}}
`, "apps/Deployment web/web", []string{"output over 16384 bytes"}},
		{"expandTemplates with a forbidden function", `
- name: p
  manifests: [{kind: ConfigMap}]
  mergePatch: {data: {x: '{{ "{{ printf \"%d\" 1 }}" }}'}}
- name: q
  manifests: [{kind: ConfigMap}]
  expandTemplates: {}
`, "ConfigMap web/cfg", []string{"expandTemplates /data/x", `function "printf" is not allowed`}},
		{"a transform without a transformer", `
- name: p
  transform: {plugin: sidecar}
`, "apps/Deployment web/web", []string{"no transformer for WasmPlugin sidecar"}},
		{"CEL without an evaluator", `
- name: p
  clusters: {celSelector: {celExpressions: ['true']}}
  replicas: {value: 1}
`, "", []string{"celSelector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := renderFail(t, eu, compile(t, "ovr", rules(tc.rules)))
			if f.Override != "ovr" || f.Cluster != "cluster1" || f.Manifest != tc.manifest {
				t.Errorf("failure %+v: want override ovr, cluster cluster1, manifest %q", f, tc.manifest)
			}
			if !strings.HasPrefix(f.Rule, "p") && !strings.HasPrefix(f.Rule, "q") {
				t.Errorf("failure names rule %q", f.Rule)
			}
			for _, w := range tc.want {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
			if !strings.Contains(f.Error(), "override ovr rule "+f.Rule+" on cluster cluster1") {
				t.Errorf("Error() = %q", f.Error())
			}
		})
	}
}

// TestTemplateRefusals: Compile refuses what the restricted grammar does not admit, naming
// the field of the rule.
func TestTemplateRefusals(t *testing.T) {
	for _, src := range []string{
		`{{ range .cluster.clusterSets }}x{{ end }}`,
		`{{ define "x" }}y{{ end }}`,
		`{{ block "x" . }}y{{ end }}`,
		`{{ template "x" }}`,
		`{{ printf "%*d" 100000000 1 }}`,
		`{{ print 1 }}`,
		`{{ println 1 }}`,
		`{{ call .f }}`,
		`{{ html "x" }}`,
		`{{ js "x" }}`,
		`{{ urlquery "x" }}`,
		`{{ slice "abc" 1 }}`,
		`{{ lower (printf "%v" 1) }}`,
		`{{ if true }}{{ printf "x" }}{{ end }}`,
		`{{ with .cluster }}{{ else }}{{ print 1 }}{{ end }}`,
		`{{ .cluster.name`,
		strings.Repeat("{{ .a }}", 300),
		"{{ .a }}" + strings.Repeat("x", MaxTemplateSource),
	} {
		msg := compileErr(t, rules(fmt.Sprintf("- name: r\n  labels: {set: {a: %q}}\n", src)))
		if !strings.Contains(msg, "spec.rules[0].labels.set[a]") || !strings.Contains(msg, "template") {
			t.Errorf("%.40q: error %q; want one naming spec.rules[0].labels.set[a]", src, msg)
		}
	}
	// Allowed: conditionals, variables, the func map and the comparison builtins.
	ok := `{{ $r := index .cluster.labels "region" | default "us" }}{{ if eq $r "eu" }}{{ upper $r }}{{ else }}{{ lower $r }}{{ end }}` +
		`{{ with .cluster.name }}-{{ . }}{{ end }}{{ add 1 (atoi "2") }}{{ len .cluster.clusterSets }}{{ toString .group.index }}`
	res := render(t, eu, compile(t, "ok", rules(fmt.Sprintf("- name: r\n  annotations: {set: {a: %q}}\n", ok))))
	if got := at(manifest(t, res, 0), "metadata", "annotations", "a"); got != "EU-cluster1320" {
		t.Errorf("allowed template gave %q", got)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"value and op", rules("- name: r\n  jsonPatch: [{op: replace, path: /a}]\n"), "spec.rules[0].jsonPatch[0]: Invalid value: \"replace\": add, replace and test take value or valueTemplate"},
		{"value on remove", rules("- name: r\n  jsonPatch: [{op: remove, path: /a, value: 1}]\n"), "remove, move and copy take neither"},
		{"bad pointer", rules("- name: r\n  jsonPatch: [{op: remove, path: /a~2}]\n"), "spec.rules[0].jsonPatch[0].path"},
		{"label key", rules("- name: r\n  labels: {set: {'a b': x}}\n"), `spec.rules[0].labels.set[a b]: Invalid value: "a b": not a label key`},
		{"two overriders", rules("- name: r\n  labels: {set: {a: b}}\n  replicas: {value: 1}\n"), "a rule sets exactly one of"},
		{"duplicate rule", rules("- {name: r, replicas: {value: 1}}\n- {name: r, replicas: {value: 2}}\n"), "spec.rules[1].name: Duplicate value"},
		{"params too large", rules(fmt.Sprintf("- name: r\n  transform: {plugin: p, params: {a: %q}}\n", strings.Repeat("x", MaxParamsBytes))), "spec.rules[0].transform.params: Too long"},
		{"literal digest", rules("- name: r\n  image: {digest: 'sha256:abc'}\n"), "spec.rules[0].image.digest"},
		{"merge patch not an object", "replicaSets: [{name: web}]\nrules: [{name: r, mergePatch: [1]}]", "spec.rules[0].mergePatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := compileErr(t, tc.spec); !strings.Contains(msg, tc.want) {
				t.Errorf("error %q; want %q", msg, tc.want)
			}
		})
	}
	// The spec cap: 257 KiB of labels.
	var b strings.Builder
	b.WriteString(rules(""))
	for i := range 40 {
		fmt.Fprintf(&b, "- name: r%d\n  annotations: {set: {a: %q}}\n", i, strings.Repeat("x", 7000))
	}
	if msg := compileErr(t, b.String()); !strings.Contains(msg, "spec: Too long") {
		t.Errorf("a 280 KiB spec: %q", msg)
	}
}

// fakeTransformer adds a container env var naming the plugin's params and the cluster, or
// returns what out says.
type fakeTransformer struct{ out string }

func (f fakeTransformer) Transform(_ context.Context, req TransformRequest) (json.RawMessage, error) {
	if f.out != "" {
		return json.RawMessage(f.out), nil
	}
	var m map[string]any
	if err := json.Unmarshal(req.Manifest, &m); err != nil {
		return nil, err
	}
	cl := req.Values["cluster"].(map[string]any)
	m["metadata"].(map[string]any)["annotations"] = map[string]any{"t": fmt.Sprintf("%s/%s/%s/%s", cl["name"], req.Override, req.Rule, req.Params)}
	return json.Marshal(m)
}

func TestTransform(t *testing.T) {
	p := compile(t, "ext", rules("- name: side\n  manifests: [{kind: ConfigMap}]\n  transform: {plugin: sidecar, params: {a: 1}}\n"))
	res, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: []*Program{p}, Cluster: eu, Transformer: fakeTransformer{}})
	if f != nil {
		t.Fatal(f)
	}
	if got := at(manifest(t, res, 1), "metadata", "annotations", "t"); got != `cluster1/ext/side/{"a":1}` {
		t.Errorf("transform gave %v", got)
	}
	_, f = Render(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: []*Program{p}, Cluster: eu,
		Transformer: fakeTransformer{out: `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"cfg","namespace":"web"}}`}})
	if f == nil || !strings.Contains(f.Message, `kind "ConfigMap" → "Secret"`) {
		t.Errorf("a transform changing the kind: %v", f)
	}
}

func TestRenderAll(t *testing.T) {
	p := compile(t, "reg", rules("- name: r\n  image: {containers: [web], registry: '{{ .cluster.labels.region }}.example.com'}\n"))
	clusters := []Cluster{eu, cluster("cluster2", map[string]string{"region": "us"}, nil), cluster("cluster3", nil, nil)}
	out := RenderAll(context.Background(), Input{ReplicaSet: rs, Template: tmplSpec(), Overrides: []*Program{p}}, clusters)
	if len(out) != 3 || out[0].Cluster != "cluster1" || out[1].Cluster != "cluster2" || out[2].Cluster != "cluster3" {
		t.Fatalf("outcomes %+v", out)
	}
	if out[0].Failure != nil || out[1].Failure != nil || out[0].Result.Hash == out[1].Result.Hash {
		t.Errorf("eu and us: %+v / %+v", out[0], out[1])
	}
	if f := out[2].Failure; f == nil || f.Cluster != "cluster3" || !strings.Contains(f.Message, `map has no entry for key "region"`) {
		t.Errorf("cluster3 without a region label: %+v", out[2].Failure)
	}
}

func TestRulesSelectingNothing(t *testing.T) {
	p := compile(t, "o", rules(`
- {name: all, replicas: {value: 1}}
- {name: cm, manifests: [{kind: ConfigMap, name: cfg}], labels: {set: {a: b}}}
- {name: core-deployment, manifests: [{kind: Deployment}], labels: {set: {a: b}}}
- {name: other-ns, manifests: [{namespace: other}], labels: {set: {a: b}}}
`))
	if got := fmt.Sprint(p.RulesSelectingNothing(tmplSpec())); got != "[core-deployment other-ns]" {
		t.Errorf("rules selecting nothing: %s, want [core-deployment other-ns] (a Deployment selector without group is the core group)", got)
	}
}
