package dashboard

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
)

// explainFleet is a fleet for placement app/web (env=prod, numberOfClusters 1) that selects
// c5 now: c1 and c5 are feasible, c2 does not match, c3 has a NoSelect taint, c4 is in no set
// bound to app. withPlugins adds the hub's BuiltIn prioritizer WasmPlugins (the real module of
// plugins/dist, as hub/plugininstall installs it, with the status.digest the hub would write);
// skipModule leaves that plugin's source ConfigMap out.
func explainFleet(t *testing.T, scheme *runtime.Scheme, withPlugins bool, skipModule string) client.Client {
	t.Helper()
	cluster := func(name string, labels map[string]string, taints ...clusterv1.Taint) *clusterv1.ManagedCluster {
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: clusterv1.ManagedClusterSpec{Taints: taints}}
	}
	in := func(env string) map[string]string {
		return map[string]string{clusterv1beta2.ClusterSetLabel: "prod", "env": env}
	}
	p := &clusterv1beta1.Placement{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: web, namespace: app}
spec:
  numberOfClusters: 1
  predicates: [{requiredClusterSelector: {labelSelector: {matchLabels: {env: prod}}}}]
`), p); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{p,
		cluster("c1", in("prod")), cluster("c2", in("dev")),
		cluster("c3", in("prod"), clusterv1.Taint{Key: "maint", Effect: clusterv1.TaintEffectNoSelect}),
		cluster("c4", map[string]string{"env": "prod"}), cluster("c5", in("prod")),
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "prod"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "prod"}},
		rolloutDecision("app", "web", "0", "", "c5"),
	}
	if withPlugins {
		mod, err := dist.Get(plugininstall.BuiltinPrioritizersModule)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := mod.Wasm()
		if err != nil {
			t.Fatal(err)
		}
		cm := wasmplugin.ConfigMapName(mod.Name)
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: cm},
			BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: mod.Compressed}})
		for _, b := range native.Names() {
			name, _ := plugininstall.BuiltinPrioritizerPlugin(b)
			src := cm
			if name == skipModule {
				src = "missing"
			}
			wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1alpha1.WasmPluginSpec{
				Type: flotillav1alpha1.PluginTypePrioritizer, SHA256: mod.SHA256,
				Source:       flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: "flotilla-system", Name: src, Key: flotillav1alpha1.SourceKeyWasmZstd}},
				PluginConfig: &apiextensionsv1.JSON{Raw: native.Config(b)}}}
			wp.Status.Digest = wasm.Digest(raw)
			objs = append(objs, wp)
		}
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&flotillav1alpha1.WasmPlugin{}).Build()
}

func explainWhy(e Explanation) map[string]string {
	out := map[string]string{}
	for _, n := range e.NotChosen {
		out[n.Cluster] = n.Why
	}
	return out
}

func TestExplain(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	scheme := rolloutScheme(t)

	t.Run("the built-in prioritizers run from their WasmPlugins", func(t *testing.T) {
		e, err := Explain(ctx, explainFleet(t, scheme, true, ""), "app", "web", now)
		if err != nil {
			t.Fatal(err)
		}
		if e.Error != "" {
			t.Fatalf("error %q, want none", e.Error)
		}
		want := []ExplainFilter{{Name: "Predicate", Clusters: []string{"c1", "c3", "c5"}}, {Name: "Predicate,TaintToleration", Clusters: []string{"c1", "c5"}}}
		if !slices.EqualFunc(e.Filters, want, func(a, b ExplainFilter) bool { return a.Name == b.Name && slices.Equal(a.Clusters, b.Clusters) }) {
			t.Errorf("filters %+v, want %+v", e.Filters, want)
		}
		// Balance: no other placement selects c1 or c5 (100 each); Steady: c5 is selected now.
		prios := map[string]ExplainPrioritizer{}
		for _, p := range e.Prioritizers {
			prios[p.Name] = p
		}
		if b := prios["Balance"]; b.Weight != 1 || b.Error != "" || !maps.Equal(b.Scores, map[string]int64{"c1": 100, "c5": 100}) {
			t.Errorf("Balance %+v, want weight 1, c1 and c5 100", b)
		}
		if s := prios["Steady"]; s.Weight != 1 || s.Error != "" || !maps.Equal(s.Scores, map[string]int64{"c1": 0, "c5": 100}) {
			t.Errorf("Steady %+v, want weight 1, c1 0, c5 100", s)
		}
		if !maps.Equal(e.Scores, map[string]int64{"c1": 100, "c5": 200}) {
			t.Errorf("scores %v, want c1 100, c5 200", e.Scores)
		}
		why := explainWhy(e)
		if _, ok := why["c5"]; ok || len(why) != 4 {
			t.Errorf("not chosen %v, want c1-c4 and not c5 (selected)", why)
		}
		for cl, frag := range map[string]string{
			"c1": "score 100 below the cut 200 (numberOfClusters 1 selected)",
			"c2": "no predicate matches it",
			"c3": "taint not tolerated: maint:NoSelect",
			"c4": "not in a ManagedClusterSet bound to namespace app",
		} {
			if !strings.Contains(why[cl], frag) {
				t.Errorf("%s: why %q, want it to say %q", cl, why[cl], frag)
			}
		}
	})

	t.Run("a plugin the hub serves but that cannot run here is skipped with why", func(t *testing.T) {
		steady, _ := plugininstall.BuiltinPrioritizerPlugin(native.Steady)
		e, err := Explain(ctx, explainFleet(t, scheme, true, steady), "app", "web", now)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Filters) != 2 {
			t.Errorf("filters %+v, want both stages explained", e.Filters)
		}
		var s *ExplainPrioritizer
		for i := range e.Prioritizers {
			if e.Prioritizers[i].Name == "Steady" {
				s = &e.Prioritizers[i]
			}
		}
		if s == nil || !strings.Contains(s.Error, "not run for this view") || !strings.Contains(s.Error, "ConfigMap flotilla-system/missing not found") || len(s.Scores) != 0 {
			t.Fatalf("Steady %+v, want no scores and why it did not run (its ConfigMap)", s)
		}
		if why := explainWhy(e)["c1"]; !strings.Contains(why, "scores partial") {
			t.Errorf("c1: why %q, want it to say the scores are partial", why)
		}
	})

	t.Run("no prioritizer plugin: misconfigured as on the hub", func(t *testing.T) {
		e, err := Explain(ctx, explainFleet(t, scheme, false, ""), "app", "web", now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(e.Error, "Balance") || !strings.Contains(e.Error, "not Ready") || len(e.Filters) != 0 {
			t.Errorf("error %q filters %+v, want the placement misconfigured: Balance's plugin not Ready", e.Error, e.Filters)
		}
	})

	t.Run("missing placement is NotFound", func(t *testing.T) {
		_, err := Explain(ctx, explainFleet(t, scheme, false, ""), "app", "nope", now)
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "Placement app/nope") {
			t.Errorf("error %v, want a NotFound naming Placement app/nope", err)
		}
	})

	t.Run("no binding: every cluster says so", func(t *testing.T) {
		c := explainFleet(t, scheme, true, "")
		if err := c.Delete(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "prod"}}); err != nil {
			t.Fatal(err)
		}
		e, err := Explain(ctx, c, "app", "web", now)
		if err != nil {
			t.Fatal(err)
		}
		why := explainWhy(e)
		if len(why) != 5 || !strings.Contains(why["c1"], "not in a ManagedClusterSet bound to namespace app") || !strings.Contains(why["c1"], "No valid ManagedClusterSetBindings") {
			t.Errorf("not chosen %v, want all five clusters, not in a bound set (No valid ManagedClusterSetBindings)", why)
		}
	})

	t.Run("JSON keys are design-26's", func(t *testing.T) {
		e, err := Explain(ctx, explainFleet(t, scheme, true, ""), "app", "web", now)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		assertKeys(t, "explain", m, "filters", "prioritizers", "scores", "notChosen", "error")
		assertKeys(t, "filter", m["filters"].([]any)[0].(map[string]any), "name", "clusters")
		assertKeys(t, "prioritizer", m["prioritizers"].([]any)[0].(map[string]any), "name", "weight", "scores", "error")
		assertKeys(t, "notChosen", m["notChosen"].([]any)[0].(map[string]any), "cluster", "why")
	})
}

// notCachedReader answers like a cache built with ReaderFailOnMissingInformer for every kind
// but ManagedClusters.
type notCachedReader struct{ client.Reader }

func (r notCachedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*clusterv1.ManagedClusterList); ok {
		return r.Reader.List(ctx, list, opts...)
	}
	return &cache.ErrResourceNotCached{}
}

func TestExplainReader(t *testing.T) {
	ctx := t.Context()
	scheme := rolloutScheme(t)
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "from-cache"}}).Build()
	direct := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "from-api"}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "prod"}}).Build()
	r := ExplainReader(notCachedReader{cached}, direct)
	mcs := &clusterv1.ManagedClusterList{}
	if err := r.List(ctx, mcs); err != nil || len(mcs.Items) != 1 || mcs.Items[0].Name != "from-cache" {
		t.Errorf("ManagedClusters %v (%v), want the cached one only", mcs.Items, err)
	}
	bs := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.List(ctx, bs, client.InNamespace("app")); err != nil || len(bs.Items) != 1 {
		t.Errorf("bindings %v (%v), want app/prod read directly (not cached)", bs.Items, err)
	}
	if err := r.Get(ctx, client.ObjectKey{Name: "from-cache"}, &clusterv1.ManagedCluster{}); err != nil {
		t.Errorf("Get from the cache: %v", err)
	}
}
