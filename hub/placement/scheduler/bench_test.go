package scheduler

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmbench"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// passFleet is 5,000 clusters in one bound set, 300 other placements' decisions spread over
// them (so Balance and Steady have work), and a placement selecting 10 with the four built-ins
// and a third-party prioritizer (the affinity plugin as configured for bench-wasm).
func passFleet(thirdParty clusterv1beta1.ScoreCoordinate) (*Snapshot, *clusterv1beta1.Placement) {
	fleet := wasmbench.Fleet(5000)
	in := SnapshotInput{Sets: []*clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}},
		Bindings:  []*clusterv1beta2.ManagedClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}},
		Decisions: map[string][]string{}}
	for i := range fleet {
		in.Clusters = append(in.Clusters, &fleet[i])
	}
	for p := range 300 {
		var cs []string
		for j := range 10 {
			cs = append(cs, fleet[(p*37+j*501)%len(fleet)].Name)
		}
		in.Decisions[fmt.Sprintf("bench/other-%d", p)] = cs
	}
	in.Decisions["bench/pass"] = []string{fleet[7].Name, fleet[70].Name}
	ten := int32(10)
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "pass"},
		Spec: clusterv1beta1.PlacementSpec{NumberOfClusters: &ten, PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeExact}}}
	for _, b := range native.Names() {
		p.Spec.PrioritizerPolicy.Configurations = append(p.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{
			ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: b}, Weight: 1})
	}
	p.Spec.PrioritizerPolicy.Configurations = append(p.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{ScoreCoordinate: &thirdParty, Weight: 1})
	return NewSnapshot(in), p
}

// wasmScheduler loads the shipped prioritizer-builtin (four WasmPlugins) and the affinity
// plugin as third party "affinity".
func wasmScheduler(tb testing.TB) *Scheduler {
	tb.Helper()
	ctx := context.Background()
	e, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close(ctx) })
	reg := wasm.NewRegistry()
	load := func(name, plugin string, config []byte) {
		d, err := dist.Get(plugin)
		if err != nil {
			tb.Fatal(err)
		}
		mod, err := d.Wasm()
		if err != nil {
			tb.Fatal(err)
		}
		m, err := e.Load(ctx, wasm.ModuleSpec{Name: name, Type: abi.TypePrioritizer, Wasm: mod, Config: config})
		if err != nil {
			tb.Fatal(err)
		}
		if err := reg.Set(ctx, m); err != nil {
			tb.Fatal(err)
		}
	}
	plugins := map[string]string{}
	for _, b := range native.Names() {
		plugins[b] = "placement-" + b
		load(plugins[b], "prioritizer-builtin", native.Config(b))
	}
	load("affinity", "prioritizer-affinity", []byte(wasmbench.BenchConfig))
	return New(reg, func(b string) (string, bool) { n, ok := plugins[b]; return n, ok })
}

// nativeScheduler scores with the same arithmetic compiled natively.
func nativeScheduler(tb testing.TB) *Scheduler {
	tb.Helper()
	sch := &Scheduler{Native: map[string]Prioritizer{}}
	for _, b := range native.Names() {
		sc, err := native.New(b)
		if err != nil {
			tb.Fatal(err)
		}
		sch.Native[b] = PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
			out := make([]int64, len(req.Clusters))
			return out, sc.Score(&clusterSource{req: req}, out)
		})
	}
	// wasmbench.Native reads a slice of values: the candidates are the whole fleet in name
	// order, so it is copied once here rather than in every pass.
	var values []clusterv1.ManagedCluster
	sch.Native["Affinity"] = PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
		if len(values) != len(req.Clusters) || values[0].Name != req.Clusters[0].Name {
			values = make([]clusterv1.ManagedCluster, len(req.Clusters))
			for i, c := range req.Clusters {
				values[i] = *c
			}
		}
		out, cpu := make([]int64, len(values)), make([]int64, len(values))
		wasmbench.Native(values, out, cpu)
		return out, nil
	})
	return sch
}

// TestPassWasmMatchesNative: the two passes the benchmark compares decide the same.
func TestPassWasmMatchesNative(t *testing.T) {
	ctx := context.Background()
	snap, wp := passFleet(clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypePlugin, Plugin: &clusterv1beta1.PluginScore{Name: "affinity"}})
	_, np := passFleet(clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: "Affinity"})
	w, err := wasmScheduler(t).Decide(ctx, snap, wp)
	if err != nil || w.Misconfigured != "" || w.Failed != nil {
		t.Fatalf("wasm: %v %q %v", err, w.Misconfigured, w.Failed)
	}
	n, err := nativeScheduler(t).Decide(ctx, snap, np)
	if err != nil || n.Misconfigured != "" || n.Failed != nil {
		t.Fatalf("native: %v %q %v", err, n.Misconfigured, n.Failed)
	}
	if fmt.Sprint(w.Groups) != fmt.Sprint(n.Groups) || fmt.Sprint(w.Scored) != fmt.Sprint(n.Scored) {
		t.Fatalf("wasm and native disagree:\nwasm   %v\nnative %v", w.Groups, n.Groups)
	}
}

// BenchmarkSchedulePass5000 is one scheduling pass over 5,000 clusters with the four built-ins
// and a third-party prioritizer, as Wasm and as native Go (make bench-placement compares).
func BenchmarkSchedulePass5000(b *testing.B) {
	ctx := context.Background()
	b.Run("wasm", func(b *testing.B) {
		snap, p := passFleet(clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypePlugin, Plugin: &clusterv1beta1.PluginScore{Name: "affinity"}})
		sch := wasmScheduler(b)
		if _, err := sch.Decide(ctx, snap, p); err != nil { // instances warm
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if res, err := sch.Decide(ctx, snap, p); err != nil || res.Selected != 10 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
	b.Run("native", func(b *testing.B) {
		snap, p := passFleet(clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: "Affinity"})
		sch := nativeScheduler(b)
		b.ResetTimer()
		for range b.N {
			if res, err := sch.Decide(ctx, snap, p); err != nil || res.Selected != 10 {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}
