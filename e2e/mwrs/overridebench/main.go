// Command overridebench measures per-cluster overrides of a ManifestWorkReplicaSet (make
// bench-overrides). N simulated ManagedClusters (default 1,000; plain objects with their
// namespaces) in one bound set, each with a region label (4 regions) and a replicas claim; a
// template of a Deployment, a Service and a ConfigMap; one ManifestWorkReplicaSetOverride of 5
// rules: the image registry by region, the replicas from the claim, a label with the
// cluster's name, an env entry through a JSON patch value template, and the
// plugins/examples/transform-sidecar Wasm module as a ManifestTransformer WasmPlugin.
//
//   - render_ms_p50: the median of 7 in-process override.RenderAll runs over the N clusters
//     (the hub's render code and Wasm host, no cache);
//   - rollout_s: the hub as its own process, a placement of every cluster, a fake work agent
//     in this process reporting each work Applied and Available for its generation; the
//     replica set (All) and the override created and rolled out; then the image rule's tag
//     changes: the time until every cluster's work was reported at a new hash and the replica
//     set is PlacementRolledOut=True Complete again.
//
// It also prints the hub's render duration p50 and render cache hit ratio on stderr when the
// hub exports them. Its last line is
//
//	overrides-<N> render_ms_p50=<…> rollout_s=<…>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const (
	setName  = "bench"
	ns       = "bench-overrides"
	rsName   = "web"
	ovName   = "shape"
	plugin   = "bench-transform-sidecar"
	claim    = "replicas.bench.flotilla.dev"
	renders  = 7
	firstTag = "1.0"
	nextTag  = "1.1"
)

// regions are the clusters' region labels, round robin.
var regions = []string{"eu-west", "us-east", "ap-south", "sa-east"}

// template is the replica set's work: a Deployment, a Service and a ConfigMap.
const template = `
workload:
  manifests:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: bench-app}
    spec:
      replicas: 1
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers:
          - name: web
            image: registry.example/web:1.0
            env: [{name: MODE, value: bench}]
            ports: [{containerPort: 8080}]
  - apiVersion: v1
    kind: Service
    metadata: {name: web, namespace: bench-app}
    spec:
      selector: {app: web}
      ports: [{port: 80, targetPort: 8080}]
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: web, namespace: bench-app}
    data: {greeting: hello}
`

// rules are the override's 5 rules; %s is the image tag.
const rules = `
replicaSets: [{name: ` + rsName + `}]
rules:
- name: registry
  manifests: [{group: apps, kind: Deployment}]
  image: {containers: [web], registry: '{{ index .cluster.labels "region" }}.registry.example', tag: "%s"}
- name: replicas
  manifests: [{group: apps, kind: Deployment}]
  replicas: {template: '{{ index .cluster.claims "` + claim + `" }}'}
- name: cluster-label
  labels: {set: {bench.flotilla.dev/cluster: '{{ .cluster.name }}'}}
- name: region-env
  manifests: [{group: apps, kind: Deployment}]
  jsonPatch:
  - op: add
    path: /spec/template/spec/containers/0/env/-
    valueTemplate: '{"name": "REGION", "value": "{{ index .cluster.labels "region" }}"}'
    valueType: JSON
- name: sidecar
  manifests: [{group: apps, kind: Deployment}]
  transform: {plugin: ` + plugin + `}
`

func main() {
	clusters := flag.Int("clusters", 1000, "simulated ManagedClusters")
	pluginDir := flag.String("plugin", defaultPluginDir(), "the transform-sidecar plugin's source directory")
	benchenv.Main("bench-overrides", 20*time.Minute, func(ctx context.Context, binary string, verbose bool) (string, error) {
		return run(ctx, binary, *pluginDir, *clusters, verbose)
	})
}

// defaultPluginDir is plugins/examples/transform-sidecar of the source tree this was built from.
func defaultPluginDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "plugins", "examples", "transform-sidecar")
}

func run(ctx context.Context, binary, pluginDir string, n int, verbose bool) (string, error) {
	fmt.Fprintln(os.Stderr, "building", pluginDir)
	module, err := build(pluginDir)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "rendering %d clusters in-process, %d times\n", n, renders)
	p50, err := renderP50(ctx, module, n, renders)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "render of %d clusters: p50 %.1f ms\n", n, p50)
	took, err := rollout(ctx, binary, module, n, verbose)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("overrides-%d render_ms_p50=%.1f rollout_s=%.2f", n, p50, took.Seconds()), nil
}

// buildTB turns wasmrun.Build's test failures into an error.
type buildTB struct{ dir string }

type buildFailure struct{ msg string }

func (buildTB) Helper()                           {}
func (buildTB) Fatal(args ...any)                 { panic(buildFailure{fmt.Sprint(args...)}) }
func (buildTB) Fatalf(format string, args ...any) { panic(buildFailure{fmt.Sprintf(format, args...)}) }
func (t buildTB) TempDir() string                 { return t.dir }

// build compiles the plugin in dir for wasip1 as `make plugins` does.
func build(dir string) (module []byte, err error) {
	tmp, err := os.MkdirTemp("", "overridebench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(buildFailure)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
	}()
	return wasmrun.Build(buildTB{tmp}, dir), nil
}

// spec is the override's spec with the registry rule's tag.
func spec(tag string) (*flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec, error) {
	s := &flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{}
	if err := yaml.UnmarshalStrict([]byte(fmt.Sprintf(rules, tag)), s); err != nil {
		return nil, fmt.Errorf("the override's rules: %w", err)
	}
	return s, nil
}

func workTemplate() (*workv1.ManifestWorkSpec, error) {
	t := &workv1.ManifestWorkSpec{}
	if err := yaml.UnmarshalStrict([]byte(template), t); err != nil {
		return nil, fmt.Errorf("the template: %w", err)
	}
	return t, nil
}

// labels are cluster i's labels besides its set's.
func labels(i int) map[string]string { return map[string]string{"region": regions[i%len(regions)]} }

// status adds cluster i's claims and allocatable CPU (for the sidecar's size) to its status.
func status(i int, st *clusterv1.ManagedClusterStatus) {
	st.ClusterClaims = append(st.ClusterClaims, clusterv1.ManagedClusterClaim{Name: claim, Value: strconv.Itoa(2 + i%5)})
	cpu := resource.MustParse(strconv.Itoa(4 + 4*(i%8)))
	st.Allocatable = clusterv1.ResourceList{clusterv1.ResourceCPU: cpu}
	st.Capacity = clusterv1.ResourceList{clusterv1.ResourceCPU: cpu}
}

// renderP50 is the median in milliseconds of runs override.RenderAll calls over n clusters
// with the override and the module in a Wasm registry of this process, as the hub renders.
func renderP50(ctx context.Context, module []byte, n, runs int) (float64, error) {
	tmpl, err := workTemplate()
	if err != nil {
		return 0, err
	}
	s, err := spec(firstTag)
	if err != nil {
		return 0, err
	}
	prog, errs := override.Compile(ovName, s, field.NewPath("spec"))
	if len(errs) > 0 {
		return 0, fmt.Errorf("compiling the override: %w", errs.ToAggregate())
	}
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		return 0, err
	}
	defer func() { _ = engine.Close(ctx) }()
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: plugin, Type: abi.TypeManifestTransformer, Wasm: module,
		Deterministic: abi.Deterministic(abi.TypeManifestTransformer)})
	if err != nil {
		return 0, fmt.Errorf("loading the plugin: %w", err)
	}
	reg := wasm.NewRegistry()
	if err := reg.Set(ctx, m); err != nil {
		return 0, err
	}
	clusters := make([]override.Cluster, n)
	for i := range n {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: benchenv.ClusterName(i), Labels: labels(i)}}
		status(i, &mc.Status)
		clusters[i] = override.Cluster{Cluster: mc, ClusterSets: []string{setName}, Placement: "all"}
	}
	in := override.Input{ReplicaSet: types.NamespacedName{Namespace: ns, Name: rsName}, Template: tmpl,
		Overrides: []*override.Program{prog}, Transformer: &override.WasmTransformer{Registry: reg}}
	times := make([]time.Duration, runs)
	for r := range runs {
		start := time.Now()
		outs := override.RenderAll(ctx, in, clusters)
		times[r] = time.Since(start)
		for _, o := range outs {
			if o.Failure != nil {
				return 0, fmt.Errorf("rendering cluster %s: %w", o.Cluster, o.Failure)
			}
			if len(o.Result.Trace) != 5 {
				return 0, fmt.Errorf("rendering cluster %s: %d rules changed it, want 5: %+v", o.Cluster, len(o.Result.Trace), o.Result.Trace)
			}
		}
	}
	slices.Sort(times)
	return float64(times[runs/2].Microseconds()) / 1000, nil
}

// tracker is what the fake agent reported: each cluster's work's hash.
type tracker struct {
	mu     sync.Mutex
	hashes map[string]string
}

func (t *tracker) set(cluster, hash string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hashes[cluster] = hash
}

func (t *tracker) snapshot() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.hashes))
	for k, v := range t.hashes {
		out[k] = v
	}
	return out
}

// moved counts the clusters whose reported hash differs from before's.
func (t *tracker) moved(before map[string]string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	moved := 0
	for c, h := range t.hashes {
		if h != before[c] {
			moved++
		}
	}
	return moved
}

// rollout times the image tag change's rollout to n clusters through the hub as its own process.
func rollout(ctx context.Context, binary string, module []byte, n int, verbose bool) (took time.Duration, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{})
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	c := cp.Client
	hub, err := benchenv.StartHub(ctx, binary, cp, benchenv.Log(verbose), benchenv.HubOptions{FeatureGates: "DefaultClusterSet=false", Metrics: true})
	if err != nil {
		return 0, err
	}
	defer hub.Stop()

	fmt.Fprintf(os.Stderr, "creating %d clusters in %d regions\n", n, len(regions))
	if err := (benchenv.Clusters{Set: setName, Labels: labels, Status: status}).Create(ctx, c, n); err != nil {
		return 0, err
	}
	if err := benchenv.SelectAll(ctx, c, setName, ns, "all", n); err != nil {
		return 0, err
	}
	reported := &tracker{hashes: map[string]string{}}
	actx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	if err := benchenv.FakeWorkAgent(actx, cp, availableNow, func(ctx context.Context, w *workv1.ManifestWork) {
		w = w.DeepCopy()
		benchenv.SetWorkAvailable(w)
		if c.Status().Update(ctx, w) == nil { // a conflict means a newer version is queued
			reported.set(w.Namespace, w.Annotations[mwrs.TemplateHashAnnotation])
		}
	}); err != nil {
		return 0, err
	}
	if err := installPlugin(ctx, c, module); err != nil {
		return 0, err
	}

	fmt.Fprintln(os.Stderr, "creating the ManifestWorkReplicaSet and its override")
	tmpl, err := workTemplate()
	if err != nil {
		return 0, err
	}
	s, err := spec(firstTag)
	if err != nil {
		return 0, err
	}
	ov := &flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ovName}, Spec: *s}
	if err := c.Create(ctx, ov); err != nil {
		return 0, fmt.Errorf("creating the override: %w", err)
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rsName},
		Spec: workv1alpha1.ManifestWorkReplicaSetSpec{PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "all"}}, ManifestWorkTemplate: *tmpl}}
	if err := c.Create(ctx, rs); err != nil {
		return 0, fmt.Errorf("creating the replica set: %w", err)
	}
	start := time.Now()
	if err := rolledOut(ctx, c, n, time.Time{}, nil, nil); err != nil {
		return 0, fmt.Errorf("the first rollout: %w", err)
	}
	fmt.Fprintf(os.Stderr, "first rollout to %d clusters in %.2f s\n", n, time.Since(start).Seconds())
	before := reported.snapshot()

	fmt.Fprintf(os.Stderr, "changing the registry rule's tag to %s\n", nextTag)
	if err := c.Get(ctx, client.ObjectKeyFromObject(ov), ov); err != nil {
		return 0, err
	}
	ov.Spec.Rules[0].Image.Tag = nextTag
	start = time.Now()
	if err := c.Update(ctx, ov); err != nil {
		return 0, fmt.Errorf("changing the override: %w", err)
	}
	if err := rolledOut(ctx, c, n, start, reported, before); err != nil {
		return 0, fmt.Errorf("the tag change's rollout: %w", err)
	}
	took = time.Since(start)
	fmt.Fprintf(os.Stderr, "tag change rolled out to %d clusters in %.2f s\n", n, took.Seconds())
	hubFigures(ctx, hub)
	return took, nil
}

// availableNow says whether w was reported Available for its generation.
func availableNow(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// installPlugin installs the module as ManifestTransformer WasmPlugin plugin (a ConfigMap
// source) and waits until the hub serves it.
func installPlugin(ctx context.Context, c client.Client, module []byte) error {
	fmt.Fprintln(os.Stderr, "installing WasmPlugin", plugin)
	zst, err := wasm.Compress(module)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.DefaultNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "plugin-" + plugin},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}}
	if err := c.Create(ctx, cm); err != nil {
		return err
	}
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: plugin}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type: flotillav1alpha1.PluginTypeManifestTransformer, SHA256: wasm.Digest(module),
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
			Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}}}}
	if err := c.Create(ctx, wp); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &flotillav1alpha1.WasmPlugin{}
		err := c.Get(ctx, client.ObjectKeyFromObject(wp), got)
		return err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, flotillav1alpha1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("WasmPlugin %s not Ready: %w", plugin, err)
	}
	return nil
}

// rolledOut waits until the replica set is PlacementRolledOut=True Complete (since since),
// every one of the n works is updated and available, and, with reported, the agent reported
// every cluster's work at a hash other than before's.
func rolledOut(ctx context.Context, c client.Client, n int, since time.Time, reported *tracker, before map[string]string) error {
	last := "no status yet"
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if reported != nil {
			if m := reported.moved(before); m < n {
				last = fmt.Sprintf("%d of %d works reported at their new hash", m, n)
				return false, nil
			}
		}
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rsName}, rs); err != nil {
			last = err.Error()
			return false, nil
		}
		cond := meta.FindStatusCondition(rs.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
		if o := meta.FindStatusCondition(rs.Status.Conditions, mwrs.ConditionOverridesApplied); o != nil && o.Status != metav1.ConditionTrue {
			last = fmt.Sprintf("OverridesApplied %s %s: %s", o.Status, o.Reason, o.Message)
			return false, nil
		}
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != workv1alpha1.ReasonComplete ||
			cond.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
			last = fmt.Sprintf("PlacementRolledOut %+v, summary %+v", cond, rs.Status.Summary)
			return false, nil
		}
		s := rs.Status.Summary
		if s.Updated != n || s.Available != n {
			last = fmt.Sprintf("summary %+v", s)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d clusters rolled out (last seen: %s): %w", n, last, err)
	}
	return nil
}

// hubFigures prints the hub's render duration p50 and render cache hit ratio, "n/a" when the
// hub does not export them.
func hubFigures(ctx context.Context, hub *benchenv.Hub) {
	samples, err := hub.Samples(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	p50 := "n/a"
	if v, count, ok := benchenv.HistogramQuantile(samples, "flotilla_mwrs_render_duration_seconds", 0.5, nil); ok {
		p50 = fmt.Sprintf("%.1f ms (%.0f renders)", v*1000, count)
	}
	ratio := "n/a"
	hits, okH := benchenv.Sum(samples, "flotilla_mwrs_render_cache_hits_total")
	misses, okM := benchenv.Sum(samples, "flotilla_mwrs_render_cache_misses_total")
	if okH && okM && hits+misses > 0 {
		ratio = fmt.Sprintf("%.3f (%.0f hits, %.0f misses)", hits/(hits+misses), hits, misses)
	}
	fmt.Fprintf(os.Stderr, "hub: flotilla_mwrs_render_duration_seconds p50 %s; render cache hit ratio %s\n", p50, ratio)
}
