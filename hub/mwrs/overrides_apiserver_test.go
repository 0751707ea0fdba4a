package mwrs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

// testTransformer labels every manifest it is given: plugins named "counter-*" with a value
// that changes with every call (a nondeterministic plugin), the others with their name. It
// counts its calls per plugin.
type testTransformer struct {
	mu    sync.Mutex
	calls map[string]int
}

func (f *testTransformer) Transform(_ context.Context, req override.TransformRequest) (json.RawMessage, error) {
	f.mu.Lock()
	f.calls[req.Plugin]++
	n := f.calls[req.Plugin]
	f.mu.Unlock()
	var obj map[string]any
	if err := json.Unmarshal(req.Manifest, &obj); err != nil {
		return nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	value := req.Plugin
	if len(req.Plugin) > 8 && req.Plugin[:8] == "counter-" {
		value = fmt.Sprintf("call-%d", n)
	}
	md["labels"] = map[string]any{"transformed": value}
	return json.Marshal(obj)
}

func (f *testTransformer) count(plugin string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[plugin]
}

// readyPlugins is PluginStates from the WasmPlugins' status alone (no module registry in
// this test): serving when Ready=True for the plugin's generation.
type readyPlugins struct{ c client.Reader }

func (p readyPlugins) PluginState(ctx context.Context, name string) (string, bool, error) {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		return "", false, fmt.Errorf("reading WasmPlugin %s: %w", name, err)
	}
	c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
	if c == nil || c.ObservedGeneration != wp.Generation || c.Status != metav1.ConditionTrue {
		return "", false, nil
	}
	return wp.Status.Digest, true, nil
}

// overrideEnv is a hub manager running only the replica set controller, with testTransformer.
type overrideEnv struct {
	c  client.Client
	r  *Reconciler
	tr *testTransformer
}

func startOverrideEnv(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme) *overrideEnv {
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	tr := &testTransformer{calls: map[string]int{}}
	r := &Reconciler{Client: mgr.GetClient(), Transformer: tr, Plugins: readyPlugins{mgr.GetClient()},
		// Only the WasmPlugin watch brings a waiting replica set back within the tests' deadlines.
		PluginRetry: time.Hour}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return &overrideEnv{c: mgr.GetClient(), r: r, tr: tr}
}

// replicaSet makes namespace ns with a replica set "web" (one ConfigMap, rollout All) over
// placement p deciding clusters, each a ManagedCluster with its namespace.
func (e *overrideEnv) replicaSet(t *testing.T, ns string, clusters ...string) {
	ctx := t.Context()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}), "namespace "+ns)
	var decisions []clusterv1beta1.ClusterDecision
	for _, c := range clusters {
		must(e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}}), "namespace "+c)
		must(e.c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{"env": ns}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}), "ManagedCluster "+c)
		decisions = append(decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	must(e.c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}), "Placement")
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "p", clusterv1beta1.DecisionGroupIndexLabel: "0"}}}
	must(e.c.Create(ctx, pd), "PlacementDecision")
	pd.Status.Decisions = decisions
	must(e.c.Status().Update(ctx, pd), "PlacementDecision status")
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	must(yaml.Unmarshal([]byte(`
metadata: {name: web, namespace: `+ns+`}
spec:
  placementRefs: [{name: p, rolloutStrategy: {type: All}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: web, namespace: default}, data: {a: b}}
`), rs), "replica set YAML")
	must(e.c.Create(ctx, rs), "ManifestWorkReplicaSet")
}

func (e *overrideEnv) override(t *testing.T, ns, name, plugin string) {
	o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
			Rules: []flotillav1alpha1.OverrideRule{{Name: "tx", Transform: &flotillav1alpha1.TransformOverride{Plugin: plugin}}}}}
	if err := e.c.Create(t.Context(), o); err != nil {
		t.Fatalf("creating ManifestWorkReplicaSetOverride %s/%s: %v", ns, name, err)
	}
}

// plugin creates a ManifestTransformer WasmPlugin; ready sets its status Ready as the
// WasmPlugin controller does once its module serves.
func (e *overrideEnv) plugin(t *testing.T, name string, ready bool) *flotillav1alpha1.WasmPlugin {
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type: flotillav1alpha1.PluginTypeManifestTransformer, SHA256: fmt.Sprintf("%064x", 1),
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
			Namespace: "default", Name: "plugin-" + name, Key: flotillav1alpha1.SourceKeyWasmZstd}}}}
	if err := e.c.Create(t.Context(), wp); err != nil {
		t.Fatalf("creating WasmPlugin %s: %v", name, err)
	}
	if ready {
		e.setReady(t, wp)
	}
	return wp
}

func (e *overrideEnv) setReady(t *testing.T, wp *flotillav1alpha1.WasmPlugin) {
	wp.Status.Digest = wp.Spec.SHA256
	meta.SetStatusCondition(&wp.Status.Conditions, metav1.Condition{Type: flotillav1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: flotillav1alpha1.ReasonLoaded, Message: "loaded", ObservedGeneration: wp.Generation})
	if err := e.c.Status().Update(t.Context(), wp); err != nil {
		t.Fatalf("setting WasmPlugin %s Ready: %v", wp.Name, err)
	}
}

func (e *overrideEnv) work(g Gomega, ctx context.Context, cluster string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{}
	g.Expect(e.c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "web"}, w)).To(Succeed(), "the ManifestWork of cluster %s", cluster)
	return w
}

func overridesApplied(g Gomega, ctx context.Context, c client.Client, ns string) *metav1.Condition {
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, rs)).To(Succeed())
	cond := meta.FindStatusCondition(rs.Status.Conditions, ConditionOverridesApplied)
	g.Expect(cond).NotTo(BeNil(), "condition %s of replica set %s/web", ConditionOverridesApplied, ns)
	return cond
}

func transformedLabel(w *workv1.ManifestWork) string {
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &obj)
	return obj.Metadata.Labels["transformed"]
}

func testOverridesWithManager(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme) {
	e := startOverrideEnv(t, cfg, scheme)

	t.Run("a cluster whose transform plugin is loading waits, untouched, until the plugin's watch renders it", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		const ns, cl, plugin = "ov-wait", "ov-wait-c1", "ov-wait-plugin"
		e.replicaSet(t, ns, cl)
		var before *workv1.ManifestWork
		g.Eventually(func(g Gomega) { before = e.work(g, ctx, cl) }).WithTimeout(30*time.Second).Should(Succeed(), "the work of %s written from the template", cl)
		wp := e.plugin(t, plugin, false)
		e.override(t, ns, "tx", plugin)
		g.Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, e.c, ns)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(ReasonWaitingForPlugin))
			g.Expect(c.Message).To(ContainSubstring("WasmPlugin " + plugin))
		}).WithTimeout(30*time.Second).Should(Succeed(), "OverridesApplied False WaitingForPlugin naming %s", plugin)
		g.Consistently(func(g Gomega) {
			g.Expect(e.work(g, ctx, cl).ResourceVersion).To(Equal(before.ResourceVersion), "the work of %s was rewritten while its plugin loads", cl)
		}).WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "the work of %s untouched while %s loads", cl, plugin)
		g.Expect(e.tr.count(plugin)).To(BeZero(), "WasmPlugin %s was called before it served", plugin)

		// Ready: the WasmPlugin watch alone (PluginRetry is an hour) renders the cluster.
		e.setReady(t, wp)
		g.Eventually(func(g Gomega) {
			w := e.work(g, ctx, cl)
			g.Expect(transformedLabel(w)).To(Equal(plugin))
			g.Expect(w.Annotations).To(HaveKey(RenderInputsAnnotation))
			c := overridesApplied(g, ctx, e.c, ns)
			g.Expect(c.Reason).To(Equal(ReasonRendered))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the work of %s transformed by %s once it is Ready", cl, plugin)
	})

	t.Run("a reconcile with the same render inputs renders nothing: the cache serves it", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		const ns, cl, plugin = "ov-cache", "ov-cache-c1", "ov-cache-plugin"
		e.replicaSet(t, ns, cl)
		e.plugin(t, plugin, true)
		e.override(t, ns, "tx", plugin)
		g.Eventually(func(g Gomega) {
			g.Expect(transformedLabel(e.work(g, ctx, cl))).To(Equal(plugin))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the work of %s transformed by %s", cl, plugin)
		calls, hits := e.tr.count(plugin), testutil.ToFloat64(e.r.metrics.hits)
		// Nothing the render reads changes: an annotation on the replica set only brings a reconcile.
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		g.Expect(e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, rs)).To(Succeed())
		patch := client.MergeFrom(rs.DeepCopy())
		rs.Annotations = map[string]string{"poke": "1"}
		g.Expect(e.c.Patch(ctx, rs, patch)).To(Succeed())
		g.Eventually(func() float64 { return testutil.ToFloat64(e.r.metrics.hits) }).WithTimeout(30*time.Second).
			Should(BeNumerically(">", hits), "%s to count a hit after a reconcile with nothing changed", RenderCacheHitsMetric)
		g.Expect(e.tr.count(plugin)).To(Equal(calls), "WasmPlugin %s called again for the same render inputs", plugin)
	})

	t.Run("the same render inputs rendering another hash fail the cluster as not deterministic, naming the plugin", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		const ns, cl, plugin = "ov-nondet", "ov-nondet-c1", "counter-ov-nondet"
		e.replicaSet(t, ns, cl)
		e.plugin(t, plugin, true)
		failures := testutil.ToFloat64(e.r.metrics.failures.WithLabelValues(failureNondeterministic))
		e.override(t, ns, "tx", plugin)
		var first *workv1.ManifestWork
		g.Eventually(func(g Gomega) {
			first = e.work(g, ctx, cl)
			g.Expect(transformedLabel(first)).To(HavePrefix("call-"))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the work of %s transformed by %s", cl, plugin)
		// The cache would serve the first render again: forget it, as a restart does.
		e.r.cache.purge()
		rs := &workv1alpha1.ManifestWorkReplicaSet{}
		g.Expect(e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, rs)).To(Succeed())
		patch := client.MergeFrom(rs.DeepCopy())
		rs.Annotations = map[string]string{"poke": "1"}
		g.Expect(e.c.Patch(ctx, rs, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, e.c, ns)
			g.Expect(c.Reason).To(Equal(ReasonRenderFailed))
			g.Expect(c.Message).To(And(ContainSubstring("render is not deterministic (inputs "+first.Annotations[RenderInputsAnnotation]+" gave "+first.Annotations[TemplateHashAnnotation]+", now "),
				ContainSubstring("suspect WasmPlugin "+plugin)))
		}).WithTimeout(30*time.Second).Should(Succeed(), "OverridesApplied False RenderFailed: not deterministic, suspecting %s", plugin)
		g.Expect(e.work(g, ctx, cl).ResourceVersion).To(Equal(first.ResourceVersion), "the work of %s was rewritten with a nondeterministic render", cl)
		g.Expect(testutil.ToFloat64(e.r.metrics.failures.WithLabelValues(failureNondeterministic))).To(BeNumerically(">", failures),
			"%s{reason=%s}", RenderFailuresMetric, failureNondeterministic)
	})

	t.Run("a cluster's change requeues only the replica sets with a work there that some override names", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		const ns, cl = "ov-bycl", "ov-bycl-c1"
		e.replicaSet(t, ns, cl)
		plain := &workv1alpha1.ManifestWorkReplicaSet{}
		// The manager's cache may not hold the replica set just created yet.
		g.Eventually(func() error { return e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, plain) }).
			WithTimeout(10*time.Second).Should(Succeed(), "replica set %s/web in the cache", ns)
		plain = &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}, Spec: plain.Spec}
		g.Expect(e.c.Create(ctx, plain)).To(Succeed())
		o := &flotillav1alpha1.ManifestWorkReplicaSetOverride{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lbl"},
			Spec: flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
				Rules: []flotillav1alpha1.OverrideRule{{Name: "r", Labels: &flotillav1alpha1.MetadataOverride{Set: map[string]string{"a": "b"}}}}}}
		g.Expect(e.c.Create(ctx, o)).To(Succeed())
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cl}}
		g.Eventually(func(g Gomega) {
			for _, name := range []string{"web", "plain"} {
				w := &workv1.ManifestWork{}
				g.Expect(e.c.Get(ctx, client.ObjectKey{Namespace: cl, Name: name}, w)).To(Succeed(), "the work of replica set %s", name)
			}
			g.Expect(e.r.byCluster(ctx, mc)).To(ConsistOf(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}))
		}).WithTimeout(30*time.Second).Should(Succeed(), "cluster %s's change mapped to %s/web only (plain has a work there but no override)", cl, ns)
	})

	t.Run("a revision over 1 MiB is not recorded", func(t *testing.T) {
		ctx := t.Context()
		rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "huge", UID: "6b1f6a3e-0000-4000-8000-000000000001"}}
		rs.Spec.ManifestWorkTemplate.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge","namespace":"default"},"data":{"x":"` + strings.Repeat("x", maxRevisionBytes) + `"}}`)}}}
		d, err := newDesired(rs, nil)
		if err != nil {
			t.Fatal(err)
		}
		cur, _, err := e.r.recordRevision(ctx, rs, d)
		if err != nil {
			t.Fatalf("recordRevision of a revision over %d bytes: %v", maxRevisionBytes, err)
		}
		if cur != nil {
			t.Fatalf("recordRevision of a revision over %d bytes recorded ControllerRevision %s", maxRevisionBytes, cur.Name)
		}
		list := &appsv1.ControllerRevisionList{}
		if err := e.c.List(ctx, list, client.InNamespace("default"), client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs)}); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Fatalf("a revision over %d bytes was recorded: %s", maxRevisionBytes, list.Items[0].Name)
		}
	})

	t.Run("a render calling a plugin that cannot serve fails, counted as wasm", func(t *testing.T) {
		g := NewWithT(t)
		ctx := t.Context()
		const ns, cl, plugin = "ov-wasmfail", "ov-wasmfail-c1", "ov-wasmfail-missing"
		e.replicaSet(t, ns, cl)
		failures := testutil.ToFloat64(e.r.metrics.failures.WithLabelValues(failureWasm))
		e.override(t, ns, "tx", plugin) // no such WasmPlugin
		g.Eventually(func(g Gomega) {
			c := overridesApplied(g, ctx, e.c, ns)
			g.Expect(c.Reason).To(Equal(ReasonRenderFailed))
			g.Expect(c.Message).To(ContainSubstring("WasmPlugin " + plugin))
		}).WithTimeout(30*time.Second).Should(Succeed(), "OverridesApplied False RenderFailed naming %s", plugin)
		g.Expect(testutil.ToFloat64(e.r.metrics.failures.WithLabelValues(failureWasm))).To(BeNumerically(">", failures),
			"%s{reason=%s}", RenderFailuresMetric, failureWasm)
	})
}
