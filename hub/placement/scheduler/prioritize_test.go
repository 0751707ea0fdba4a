package scheduler

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// prioritizerFleet: c1 is selected by two other placements, c2 by one, and c3 by this
// placement only. Balance: c1 -100, c2 0, c3 100. Steady: c3 100.
func prioritizerFleet() SnapshotInput {
	past, future := t0.Add(-time.Second), t0.Add(time.Hour)
	in := globalFleet(mc("c1"), mc("c2"), mc("c3"))
	in.Decisions = map[string][]string{
		"ns/other1": {"c1", "c2"},
		"ns/other2": {"c1"},
		testKey:     {"c3"},
	}
	in.Scores = []*clusterv1alpha1.AddOnPlacementScore{
		addonScore("c1", "default", &future, "cpu", 80, "mem", 10),
		addonScore("c2", "default", &past, "cpu", 50, "mem", 20), // expired: 0
		addonScore("c3", "other", nil, "cpu", 90),                // another resource: 0
	}
	return in
}

type prio struct {
	name   string
	weight int32
	scores map[string]int64
}

func TestPrioritizers(t *testing.T) {
	balance := map[string]int64{"c1": -100, "c2": 0, "c3": 100}
	steady := map[string]int64{"c1": 0, "c2": 0, "c3": 100}
	cpu := map[string]int64{"c1": 80, "c2": 0, "c3": 0}
	cases := []struct {
		name   string
		p      *clusterv1beta1.Placement
		prios  []prio
		scores map[string]int64
		want   expect
	}{
		{name: "Additive default: Balance and Steady at 1", p: placement(numberOf(1)),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", 1, steady}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 200},
			want:   scheduled("c3")},
		{name: "empty mode is Additive", p: placement(numberOf(2), mode("")),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", 1, steady}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 200},
			want:   scheduled("c2", "c3")},
		{name: "Additive with a default reweighted", p: placement(numberOf(1), mode(clusterv1beta1.PrioritizerPolicyModeAdditive), prioritizer(builtIn("Balance"), 3)),
			prios:  []prio{{"Balance", 3, balance}, {"Steady", 1, steady}},
			scores: map[string]int64{"c1": -300, "c2": 0, "c3": 400},
			want:   scheduled("c3")},
		{name: "Additive with a default disabled", p: placement(numberOf(1), prioritizer(builtIn("Steady"), 0)),
			prios:  []prio{{"Balance", 1, balance}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 100},
			want:   scheduled("c3")},
		{name: "negative weight selects the last", p: placement(numberOf(1), prioritizer(builtIn("Steady"), -2)),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", -2, steady}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": -100},
			want:   scheduled("c2")},
		{name: "type defaults to BuiltIn", p: placement(numberOf(1), prioritizer(&clusterv1beta1.ScoreCoordinate{BuiltIn: "Balance"}, 2)),
			prios:  []prio{{"Balance", 2, balance}, {"Steady", 1, steady}},
			scores: map[string]int64{"c1": -200, "c2": 0, "c3": 300},
			want:   scheduled("c3")},
		{name: "the last configuration of a coordinate wins", p: placement(numberOf(1), prioritizer(builtIn("Steady"), 2), prioritizer(builtIn("Steady"), 5)),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", 5, steady}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 600},
			want:   scheduled("c3")},
		{name: "Exact without configurations scores nothing", p: placement(numberOf(1), mode(clusterv1beta1.PrioritizerPolicyModeExact)),
			scores: map[string]int64{"c1": 0, "c2": 0, "c3": 0},
			want:   scheduled("c3")}, // the tie keeps what is selected now
		{name: "Exact counts only what is configured", p: placement(numberOf(1), mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Balance"), 1)),
			prios:  []prio{{"Balance", 1, balance}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 100},
			want:   scheduled("c3")},
		{name: "Exact: Steady weight 3 and an AddOn score (the seeds' example)", p: placement(numberOf(2), mode(clusterv1beta1.PrioritizerPolicyModeExact),
			prioritizer(builtIn("Steady"), 3), prioritizer(addOn("default", "cpu"), 1)),
			prios:  []prio{{"Steady", 3, steady}, {"AddOn/default/cpu", 1, cpu}},
			scores: map[string]int64{"c1": 80, "c2": 0, "c3": 300},
			want:   scheduled("c1", "c3")},
		{name: "AddOn score: missing and expired count 0", p: placement(numberOf(1), mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(addOn("default", "cpu"), 1)),
			prios:  []prio{{"AddOn/default/cpu", 1, cpu}},
			scores: cpu,
			want:   scheduled("c1")},
		{name: "AddOn score added to the defaults", p: placement(numberOf(2), prioritizer(addOn("default", "cpu"), 2)),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", 1, steady}, {"AddOn/default/cpu", 2, cpu}},
			scores: map[string]int64{"c1": 60, "c2": 0, "c3": 200},
			want:   scheduled("c1", "c3")},
		{name: "AddOn score name not in the resource", p: placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(addOn("default", "gpu"), 1)),
			prios:  []prio{{"AddOn/default/gpu", 1, map[string]int64{"c1": 0, "c2": 0, "c3": 0}}},
			scores: map[string]int64{"c1": 0, "c2": 0, "c3": 0},
			want:   scheduled("c1", "c2", "c3")},
		{name: "an unknown built-in at weight 0 is disabled, not checked", p: placement(numberOf(1), prioritizer(builtIn("Foo"), 0)),
			prios:  []prio{{"Balance", 1, balance}, {"Steady", 1, steady}},
			scores: map[string]int64{"c1": -100, "c2": 0, "c3": 200},
			want:   scheduled("c3")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, newTestScheduler(nil), prioritizerFleet(), tc.p)
			tc.want.check(t, res)
			var got []prio
			for _, pr := range res.Prioritizers {
				got = append(got, prio{pr.Name, pr.Weight, pr.Scores})
			}
			if !reflect.DeepEqual(got, tc.prios) {
				t.Errorf("Prioritizers = %+v\nwant %+v", got, tc.prios)
			}
			if !reflect.DeepEqual(res.Scores, tc.scores) {
				t.Errorf("Scores = %v, want %v", res.Scores, tc.scores)
			}
			for _, g := range res.Groups {
				for _, d := range g.Clusters {
					if d.Score != tc.scores[d.ClusterName] {
						t.Errorf("decision %s score = %d, want %d", d.ClusterName, d.Score, tc.scores[d.ClusterName])
					}
				}
			}
		})
	}
}

func TestPrioritizersMisconfigured(t *testing.T) {
	unavailable := wasm.NewRegistry()
	if err := unavailable.MarkUnavailable(context.Background(), wasm.Unavailable{Name: "broken", Type: abi.TypePrioritizer,
		FailurePolicy: wasm.FailurePolicyFail, Reason: wasm.ReasonInvalidModule, Message: "bad binary"}); err != nil {
		t.Fatal(err)
	}
	resourceCPU := func(b string) (string, bool) {
		return "resource-cpu", b == clusterv1beta1.PrioritizerResourceAllocatableCPU
	}
	cases := []struct {
		name string
		sch  *Scheduler
		p    *clusterv1beta1.Placement
		want string
	}{
		{name: "unknown built-in", p: placement(prioritizer(builtIn("Foo"), 1)),
			want: `spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn: "Foo" is not a built-in prioritizer`},
		{name: "unknown built-in in Exact mode", p: placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Steady"), 1), prioritizer(builtIn("steady"), 1)),
			want: `configurations[1].scoreCoordinate.builtIn: "steady"`},
		{name: "empty built-in", p: placement(prioritizer(&clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn}, 1)),
			want: `builtIn: "" is not a built-in prioritizer`},
		{name: "a built-in no WasmPlugin serves", p: placement(prioritizer(builtIn(clusterv1beta1.PrioritizerResourceAllocatableCPU), 1)),
			want: `"ResourceAllocatableCPU" is not a built-in prioritizer`},
		{name: "a Wasm built-in without a registry", sch: &Scheduler{Native: newTestScheduler(nil).Native, BuiltIns: resourceCPU},
			p:    placement(prioritizer(builtIn(clusterv1beta1.PrioritizerResourceAllocatableCPU), 1)),
			want: "the built-in prioritizer ResourceAllocatableCPU (WasmPlugin resource-cpu) is not available: the hub runs no Wasm plugins"},
		{name: "a Wasm built-in not loaded", sch: &Scheduler{Native: newTestScheduler(nil).Native, BuiltIns: resourceCPU, Registry: wasm.NewRegistry()},
			p:    placement(prioritizer(builtIn(clusterv1beta1.PrioritizerResourceAllocatableCPU), 1)),
			want: "the built-in prioritizer ResourceAllocatableCPU (WasmPlugin resource-cpu) is not Ready: no WasmPlugin of type Prioritizer serves it"},
		{name: "default prioritizers not served", sch: &Scheduler{},
			p:    placement(),
			want: `spec.prioritizerPolicy (default).scoreCoordinate.builtIn: "Balance" is not a built-in prioritizer`},
		{name: "plugin without a registry", p: placement(prioritizer(plugin("my-scorer"), 1)),
			want: "the prioritizer plugin my-scorer is not available: the hub runs no Wasm plugins"},
		{name: "plugin not loaded", sch: &Scheduler{Native: newTestScheduler(nil).Native, Registry: wasm.NewRegistry()},
			p:    placement(prioritizer(plugin("my-scorer"), 1)),
			want: "the prioritizer plugin my-scorer is not Ready: no WasmPlugin of type Prioritizer serves it"},
		{name: "plugin unavailable, failure policy Fail", sch: &Scheduler{Native: newTestScheduler(nil).Native, Registry: unavailable},
			p:    placement(prioritizer(plugin("broken"), 1)),
			want: "the prioritizer plugin broken is not Ready: InvalidModule: bad binary"},
		{name: "plugin without a name", p: placement(prioritizer(&clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypePlugin}, 1)),
			want: "configurations[0].scoreCoordinate.plugin.name is required with type Plugin"},
		{name: "AddOn without addOn", p: placement(prioritizer(&clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn}, 1)),
			want: "configurations[0].scoreCoordinate.addOn: resourceName and scoreName are required"},
		{name: "AddOn without a score name", p: placement(prioritizer(addOn("default", ""), 1)),
			want: "scoreCoordinate.addOn: resourceName and scoreName are required"},
		{name: "unknown type", p: placement(prioritizer(&clusterv1beta1.ScoreCoordinate{Type: "Bogus"}, 1)),
			want: `configurations[0].scoreCoordinate.type "Bogus" is not BuiltIn, AddOn or Plugin`},
		{name: "weight above 10", p: placement(prioritizer(builtIn("Steady"), 11)),
			want: "configurations[0].weight 11 is not in [-10, 10]"},
		{name: "weight below -10", p: placement(prioritizer(builtIn("Steady"), -11)),
			want: "weight -11 is not in [-10, 10]"},
		{name: "no scoreCoordinate", p: placement(prioritizer(nil, 1)),
			want: "configurations[0].scoreCoordinate is required"},
		{name: "unknown mode", p: placement(mode("Bogus")),
			want: `spec.prioritizerPolicy.mode "Bogus" is not Additive or Exact`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sch := tc.sch
			if sch == nil {
				sch = newTestScheduler(nil)
			}
			res := schedule(t, sch, prioritizerFleet(), tc.p)
			expect{misconfigured: tc.want}.check(t, res)
		})
	}
}

// An unavailable plugin whose failure policy is Ignore is skipped, as the registry's
// contract asks of its users.
func TestUnavailablePluginIgnored(t *testing.T) {
	reg := wasm.NewRegistry()
	if err := reg.MarkUnavailable(context.Background(), wasm.Unavailable{Name: "optional", Type: abi.TypePrioritizer,
		FailurePolicy: wasm.FailurePolicyIgnore, Reason: wasm.ReasonSourceNotFound, Message: "ConfigMap scorers not found"}); err != nil {
		t.Fatal(err)
	}
	sch := &Scheduler{Native: newTestScheduler(nil).Native, Registry: reg}
	res := schedule(t, sch, prioritizerFleet(), placement(numberOf(1), prioritizer(plugin("optional"), 5)))
	scheduled("c3").check(t, res)
	if len(res.Ignored) != 1 || !strings.Contains(res.Ignored[0], "Plugin/optional") || !strings.Contains(res.Ignored[0], "SourceNotFound") {
		t.Errorf("Ignored = %q", res.Ignored)
	}
	last := res.Prioritizers[len(res.Prioritizers)-1]
	if last.Name != "Plugin/optional" || last.Weight != 5 || last.Error == "" || last.Scores != nil {
		t.Errorf("Prioritizers = %+v, want the skipped plugin recorded with its error", res.Prioritizers)
	}
}

func TestPrioritizerFailures(t *testing.T) {
	boom := PrioritizerFunc(func(context.Context, *ScoreRequest) ([]int64, error) { return nil, errors.New("boom") })
	short := PrioritizerFunc(func(context.Context, *ScoreRequest) ([]int64, error) { return []int64{1}, nil })
	cases := []struct {
		name   string
		native map[string]Prioritizer
		p      *clusterv1beta1.Placement
		want   string
	}{
		// Natives always run with failure policy Fail (resolve sets it; a native cannot
		// choose Ignore).
		{name: "native error", native: map[string]Prioritizer{"Boom": boom},
			p: placement(prioritizer(builtIn("Boom"), 1)), want: "prioritizer Boom: boom"},
		{name: "a default prioritizer failing", native: map[string]Prioritizer{"Steady": boom},
			p: placement(), want: "prioritizer Steady: boom"},
		{name: "wrong number of scores", native: map[string]Prioritizer{"Short": short},
			p: placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Short"), 1)), want: "prioritizer Short: answered 1 scores for 3 clusters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, newTestScheduler(tc.native), withDecisions(prioritizerFleet(), testKey, "c1"), tc.p)
			if res.Failed == nil || res.Failed.Error() != tc.want {
				t.Fatalf("Failed = %v, want %q", res.Failed, tc.want)
			}
			if res.Misconfigured != "" || res.Satisfied || res.Reason != clusterv1beta1.PlacementReasonNotAllDecisionsScheduled ||
				res.Message != tc.want || res.Groups != nil || res.Selected != 0 {
				t.Errorf("failed result = %+v, want NotAllDecisionsScheduled and no decisions (the current ones are kept)", res)
			}
		})
	}

	t.Run("canceled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		honest := PrioritizerFunc(func(ctx context.Context, _ *ScoreRequest) ([]int64, error) { return nil, ctx.Err() })
		sch := newTestScheduler(map[string]Prioritizer{"Steady": honest})
		res, err := sch.Schedule(ctx, NewSnapshot(prioritizerFleet()), placement())
		if !errors.Is(err, context.Canceled) || res != nil {
			t.Fatalf("Schedule = %v, %v; want context.Canceled", res, err)
		}
	})
}

func TestScoresClamped(t *testing.T) {
	wild := fixedScores(map[string]int64{"c1": 500, "c2": -500, "c3": 50})
	sch := newTestScheduler(map[string]Prioritizer{"Wild": wild})
	res := schedule(t, sch, prioritizerFleet(), placement(numberOf(1), mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Wild"), 2)))
	scheduled("c1").check(t, res)
	if want := map[string]int64{"c1": 100, "c2": -100, "c3": 50}; !reflect.DeepEqual(res.Prioritizers[0].Scores, want) {
		t.Errorf("recorded scores = %v, want %v", res.Prioritizers[0].Scores, want)
	}
	if want := map[string]int64{"c1": 200, "c2": -200, "c3": 100}; !reflect.DeepEqual(res.Scores, want) {
		t.Errorf("Scores = %v, want %v", res.Scores, want)
	}
}

// The request natives get: the feasible clusters, the placement and its key.
func TestScoreRequest(t *testing.T) {
	var got *ScoreRequest
	spy := PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
		got = req
		return make([]int64, len(req.Clusters)), nil
	})
	in := prioritizerFleet()
	p := placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Spy"), 1),
		predicates(clusterv1beta1.ClusterSelector{CelSelector: celExprs(`managedCluster.metadata.name != "c2"`)}))
	schedule(t, newTestScheduler(map[string]Prioritizer{"Spy": spy}), in, p)
	if got == nil || got.Key != testKey || got.Placement != p || got.Snapshot == nil || !reflect.DeepEqual(names(got.Clusters), []string{"c1", "c3"}) {
		t.Fatalf("ScoreRequest = %+v", got)
	}
}

// A real Wasm prioritizer whose answer cannot be decoded (the misbehave test guest answers
// "v1:<input>" to score): failure policy Fail stops the placement, Ignore skips the plugin.
func TestWasmPrioritizerFailurePolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a Wasm guest")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	ctx := context.Background()
	e, err := wasm.NewEngine(ctx, wasm.EngineOptions{CacheDir: filepath.Join(dir, "flotilla", "wasm-test-compile"), Logger: testr.New(t)})
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	guest := wasmtest.Misbehave(t, wasmtest.V1)
	reg := wasm.NewRegistry()
	for _, spec := range []wasm.ModuleSpec{
		{Name: "strict", Type: abi.TypePrioritizer, Wasm: guest, FailurePolicy: wasm.FailurePolicyFail},
		{Name: "lenient", Type: abi.TypePrioritizer, Wasm: guest, FailurePolicy: wasm.FailurePolicyIgnore},
	} {
		m, err := e.Load(ctx, spec)
		if err != nil {
			t.Fatalf("Load %s: %v", spec.Name, err)
		}
		if err := reg.Set(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	sch := &Scheduler{Native: newTestScheduler(nil).Native, Registry: reg}

	res := schedule(t, sch, prioritizerFleet(), placement(numberOf(1), prioritizer(plugin("lenient"), 1)))
	scheduled("c3").check(t, res)
	if len(res.Ignored) != 1 || !strings.HasPrefix(res.Ignored[0], "Plugin/lenient: ") {
		t.Errorf("Ignored = %q", res.Ignored)
	}

	res = schedule(t, sch, prioritizerFleet(), placement(numberOf(1), prioritizer(plugin("strict"), 1)))
	if res.Failed == nil || !strings.HasPrefix(res.Failed.Error(), "prioritizer Plugin/strict: ") || res.Groups != nil {
		t.Errorf("Failed = %v, groups %v; want the strict plugin's failure and no decisions", res.Failed, res.Groups)
	}
}

// clusterSource is what a Wasm prioritizer's declared inputs are read from.
func TestClusterSource(t *testing.T) {
	future := t0.Add(time.Hour)
	c1 := mc("c1", withLabels("zone", "a"), claims("region", "east"))
	c1.Status.Allocatable = clusterv1.ResourceList{"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("2Gi")}
	c1.Status.Capacity = clusterv1.ResourceList{"cpu": resource.MustParse("2")}
	c2 := mc("c2")
	in := globalFleet(c1, c2)
	in.Scores = []*clusterv1alpha1.AddOnPlacementScore{addonScore("c1", "default", &future, "cpu", 7)}
	in.Decisions = map[string][]string{testKey: {"c1"}, "ns/other": {"c1", "c2"}}
	snap := NewSnapshot(in)
	src := &clusterSource{req: &ScoreRequest{Key: testKey, Clusters: []*clusterv1.ManagedCluster{c1, c2}, Snapshot: snap}}
	var _ abi.ClusterSource = src
	if src.Len() != 2 || src.Name(0) != "c1" || src.Name(1) != "c2" {
		t.Fatalf("Len/Name = %d %s %s", src.Len(), src.Name(0), src.Name(1))
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	pair := func(a, b any) [2]any { return [2]any{a, b} }
	check("Label(c1, zone)", pair(src.Label(0, "zone")), pair("a", true))
	check("Label(c2, zone)", pair(src.Label(1, "zone")), pair("", false))
	check("Claim(c1, region)", pair(src.Claim(0, "region")), pair("east", true))
	check("Claim(c2, region)", pair(src.Claim(1, "region")), pair("", false))
	check("Resource(c1, allocatable cpu)", pair(src.Resource(0, abi.ResourceAllocatable, "cpu")), pair(int64(1500), true))
	check("Resource(c1, allocatable memory)", pair(src.Resource(0, abi.ResourceAllocatable, "memory")), pair(int64(2<<30)*1000, true))
	check("Resource(c1, capacity cpu)", pair(src.Resource(0, abi.ResourceCapacity, "cpu")), pair(int64(2000), true))
	check("Resource(c1, capacity memory)", pair(src.Resource(0, abi.ResourceCapacity, "memory")), pair(int64(0), false))
	check("AddOnScore(c1)", pair(src.AddOnScore(0, "default", "cpu")), pair(int64(7), true))
	check("AddOnScore(c2)", pair(src.AddOnScore(1, "default", "cpu")), pair(int64(0), false))
	check("DecisionCount", []int64{src.DecisionCount(0), src.DecisionCount(1)}, []int64{1, 1})
	check("Selected", []bool{src.Selected(0), src.Selected(1)}, []bool{true, false})
}

func TestMilli(t *testing.T) {
	cases := []struct {
		q    string
		want int64
	}{
		{"0", 0},
		{"1", 1000},
		{"250m", 250},
		{"1.5", 1500},
		{"-2", -2000},
		{"1Ki", 1024000},
		{"1E", math.MaxInt64},   // 10^18 × 1000 saturates
		{"100E", math.MaxInt64}, // beyond int64 itself
		{"-100E", math.MinInt64 + 1},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, tc := range cases {
		q := resource.MustParse(tc.q)
		if got := clusterv1.MilliValue(&q); got != tc.want {
			t.Errorf("MilliValue(%s) = %d, want %d", tc.q, got, tc.want)
		}
	}
}
