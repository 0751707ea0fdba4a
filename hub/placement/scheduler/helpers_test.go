package scheduler

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// t0 is the clock of every test snapshot unless a case sets another.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	testNS  = "ns"
	testKey = testNS + "/p"
)

// Native prioritizers with OCM's semantics, standing in for the Wasm built-ins.

// nativeBalance: count = decisions of other placements on the cluster, maxCount over the
// scored clusters; score = 100 - 200*count/maxCount, all 100 when maxCount is 0.
func nativeBalance() Prioritizer {
	return PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
		counts := make([]int64, len(req.Clusters))
		var maxCount int64
		for i, c := range req.Clusters {
			counts[i] = req.Snapshot.DecisionCount(c.Name, req.Key)
			maxCount = max(maxCount, counts[i])
		}
		out := make([]int64, len(req.Clusters))
		for i := range out {
			out[i] = 100
			if maxCount > 0 {
				out[i] = 100 - 200*counts[i]/maxCount
			}
		}
		return out, nil
	})
}

// nativeSteady: 100 for the clusters the placement selects now, 0 for the others.
func nativeSteady() Prioritizer {
	return PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
		out := make([]int64, len(req.Clusters))
		for i, c := range req.Clusters {
			if req.Snapshot.Selected(c.Name, req.Key) {
				out[i] = 100
			}
		}
		return out, nil
	})
}

// fixedScores scores clusters from a map (missing: 0).
func fixedScores(m map[string]int64) Prioritizer {
	return PrioritizerFunc(func(_ context.Context, req *ScoreRequest) ([]int64, error) {
		out := make([]int64, len(req.Clusters))
		for i, c := range req.Clusters {
			out[i] = m[c.Name]
		}
		return out, nil
	})
}

// newTestScheduler serves Balance and Steady natively, plus extra.
func newTestScheduler(extra map[string]Prioritizer) *Scheduler {
	native := map[string]Prioritizer{
		clusterv1beta1.PrioritizerBalance: nativeBalance(),
		clusterv1beta1.PrioritizerSteady:  nativeSteady(),
	}
	for k, v := range extra {
		native[k] = v
	}
	return &Scheduler{Native: native}
}

// Clusters.

type clusterOpt func(*clusterv1.ManagedCluster)

func mc(name string, opts ...clusterOpt) *clusterv1.ManagedCluster {
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// labels sets key=value pairs.
func withLabels(kv ...string) clusterOpt {
	return func(c *clusterv1.ManagedCluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			c.Labels[kv[i]] = kv[i+1]
		}
	}
}

func inSet(set string) clusterOpt { return withLabels(clusterv1beta2.ClusterSetLabel, set) }

func claims(kv ...string) clusterOpt {
	return func(c *clusterv1.ManagedCluster) {
		for i := 0; i+1 < len(kv); i += 2 {
			c.Status.ClusterClaims = append(c.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: kv[i], Value: kv[i+1]})
		}
	}
}

func taint(key, value string, effect clusterv1.TaintEffect, added time.Time) clusterOpt {
	return func(c *clusterv1.ManagedCluster) {
		c.Spec.Taints = append(c.Spec.Taints, clusterv1.Taint{Key: key, Value: value, Effect: effect, TimeAdded: metav1.NewTime(added)})
	}
}

func terminating() clusterOpt {
	return func(c *clusterv1.ManagedCluster) {
		ts := metav1.NewTime(t0.Add(-time.Minute))
		c.DeletionTimestamp = &ts
		c.Finalizers = []string{"cluster.open-cluster-management.io/api-resource-cleanup"}
	}
}

// Sets and bindings.

func exclusiveSet(name string) *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func labelSet(name string, sel *metav1.LabelSelector) *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.LabelSelector, LabelSelector: sel}}}
}

func globalSet() *clusterv1beta2.ManagedClusterSet {
	return labelSet(clusterv1beta2.GlobalClusterSetName, &metav1.LabelSelector{})
}

func binding(ns, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
}

func addonScore(cluster, resource string, validUntil *time.Time, kv ...any) *clusterv1alpha1.AddOnPlacementScore {
	s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: resource}}
	if validUntil != nil {
		v := metav1.NewTime(*validUntil)
		s.Status.ValidUntil = &v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Status.Scores = append(s.Status.Scores, clusterv1alpha1.AddOnPlacementScoreItem{Name: kv[i].(string), Value: int32(kv[i+1].(int))})
	}
	return s
}

// globalFleet is a snapshot input with every cluster in the global set bound to testNS.
func globalFleet(clusters ...*clusterv1.ManagedCluster) SnapshotInput {
	return SnapshotInput{
		Now:      t0,
		Clusters: clusters,
		Sets:     []*clusterv1beta2.ManagedClusterSet{globalSet()},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{binding(testNS, clusterv1beta2.GlobalClusterSetName)},
	}
}

// Placements.

type placementOpt func(*clusterv1beta1.Placement)

func placement(opts ...placementOpt) *clusterv1beta1.Placement {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "p"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func numberOf(n int32) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.NumberOfClusters = &n }
}

func clusterSets(sets ...string) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.ClusterSets = sets }
}

func predicates(ps ...clusterv1beta1.ClusterSelector) placementOpt {
	return func(p *clusterv1beta1.Placement) {
		for _, s := range ps {
			p.Spec.Predicates = append(p.Spec.Predicates, clusterv1beta1.ClusterPredicate{RequiredClusterSelector: s})
		}
	}
}

func tolerations(ts ...clusterv1beta1.Toleration) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.Tolerations = ts }
}

func mode(m clusterv1beta1.PrioritizerPolicyModeType) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.PrioritizerPolicy.Mode = m }
}

func prioritizer(sc *clusterv1beta1.ScoreCoordinate, weight int32) placementOpt {
	return func(p *clusterv1beta1.Placement) {
		p.Spec.PrioritizerPolicy.Configurations = append(p.Spec.PrioritizerPolicy.Configurations,
			clusterv1beta1.PrioritizerConfig{ScoreCoordinate: sc, Weight: weight})
	}
}

func builtIn(name string) *clusterv1beta1.ScoreCoordinate {
	return &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: name}
}

func addOn(resource, score string) *clusterv1beta1.ScoreCoordinate {
	return &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeAddOn,
		AddOn: &clusterv1beta1.AddOnScore{ResourceName: resource, ScoreName: score}}
}

func plugin(name string) *clusterv1beta1.ScoreCoordinate {
	return &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypePlugin, Plugin: &clusterv1beta1.PluginScore{Name: name}}
}

func sortBy(by clusterv1beta1.PlacementSortBy) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.SortBy = by }
}

func spreadBy(terms ...clusterv1beta1.SpreadConstraintsTerm) placementOpt {
	return func(p *clusterv1beta1.Placement) { p.Spec.SpreadPolicy.SpreadConstraints = terms }
}

func matchLabels(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func claimIn(key string, values ...string) clusterv1beta1.ClusterClaimSelector {
	return clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}}
}

func celExprs(exprs ...string) clusterv1beta1.ClusterCelSelector {
	return clusterv1beta1.ClusterCelSelector{CelExpressions: exprs}
}

// Results.

func schedule(t *testing.T, sch *Scheduler, in SnapshotInput, p *clusterv1beta1.Placement) *Result {
	t.Helper()
	if in.Now.IsZero() {
		in.Now = t0
	}
	res, err := sch.Schedule(context.Background(), NewSnapshot(in), p)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return res
}

// decided lists the decisions of every group, in order.
func decided(res *Result) []string {
	var out []string
	for _, g := range res.Groups {
		for _, d := range g.Clusters {
			out = append(out, d.ClusterName)
		}
	}
	return out
}

// groupSummary is "index:name:count" per group.
func groupSummary(res *Result) []string {
	var out []string
	for _, g := range res.Groups {
		out = append(out, fmt.Sprintf("%d:%s:%d", g.Index, g.Name, len(g.Clusters)))
	}
	return out
}

// expect is the outcome a case checks; zero fields are not checked except where noted.
type expect struct {
	// misconfigured, when set, must be a substring of Result.Misconfigured (which must be set);
	// when empty Result.Misconfigured must be empty.
	misconfigured string
	reason        string
	satisfied     bool
	// message, when set, must be a substring of Result.Message.
	message string
	// decisions are the decided clusters in order (nil: none).
	decisions []string
}

func (e expect) check(t *testing.T, res *Result) {
	t.Helper()
	if e.misconfigured != "" {
		if !strings.Contains(res.Misconfigured, e.misconfigured) {
			t.Fatalf("Misconfigured = %q, want it to contain %q", res.Misconfigured, e.misconfigured)
		}
		if res.Reason != "" || res.Groups != nil || res.Selected != 0 {
			t.Errorf("misconfigured result carries more: reason %q, groups %v, selected %d", res.Reason, res.Groups, res.Selected)
		}
		return
	}
	if res.Misconfigured != "" {
		t.Fatalf("unexpected Misconfigured %q", res.Misconfigured)
	}
	if res.Failed != nil {
		t.Fatalf("unexpected Failed %v", res.Failed)
	}
	if res.Reason != e.reason || res.Satisfied != e.satisfied {
		t.Errorf("reason/satisfied = %q/%v (%s), want %q/%v", res.Reason, res.Satisfied, res.Message, e.reason, e.satisfied)
	}
	if e.message != "" && !strings.Contains(res.Message, e.message) {
		t.Errorf("message = %q, want it to contain %q", res.Message, e.message)
	}
	if got := decided(res); !reflect.DeepEqual(got, e.decisions) {
		t.Errorf("decisions = %v, want %v", got, e.decisions)
	}
	if res.Selected != len(e.decisions) {
		t.Errorf("Selected = %d, want %d", res.Selected, len(e.decisions))
	}
	if len(res.Groups) == 0 || res.Groups[0].Index != 0 {
		t.Errorf("groups = %v, want at least group 0", res.Groups)
	}
}

func ptr[T any](v T) *T { return &v }

func scheduled(decisions ...string) expect {
	return expect{reason: clusterv1beta1.PlacementReasonAllDecisionsScheduled, satisfied: true, decisions: decisions}
}
