package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/wasm"
)

// Scheduler decides placements against snapshots. Safe for concurrent use.
type Scheduler struct {
	// Registry serves the Wasm prioritizers: the built-ins and third-party plugins.
	Registry *wasm.Registry
	// BuiltIns maps OCM's built-in prioritizer names to the WasmPlugins serving them
	// (plugininstall.BuiltinPrioritizerPlugin); ok is false for a name that is no built-in.
	BuiltIns func(builtIn string) (plugin string, ok bool)
	// Native replaces built-ins by Go implementations (benchmarks and tests).
	Native map[string]Prioritizer

	cel      celCache
	decls    sync.Map // module name@digest → *abi.PrioritizerInputs
	encoders sync.Pool
}

// New returns a scheduler over registry with the built-ins served by builtIns.
func New(registry *wasm.Registry, builtIns func(string) (string, bool)) *Scheduler {
	return &Scheduler{Registry: registry, BuiltIns: builtIns}
}

// parallelScoring is the number of feasible clusters from which a placement's prioritizers
// score concurrently; below it a goroutine costs more than it saves.
const parallelScoring = 512

// Stage names, as OCM's debug output shows them.
const (
	StagePredicate       = "Predicate"
	StageTaintToleration = "TaintToleration"
)

// FilterResult is the clusters left after a stage (cumulative: "Predicate,TaintToleration").
type FilterResult struct {
	Name     string   `json:"name"`
	Clusters []string `json:"filteredClusters"`
}

// PrioritizerResult is one prioritizer's scores.
type PrioritizerResult struct {
	Name   string           `json:"name"`
	Weight int32            `json:"weight"`
	Scores map[string]int64 `json:"scores"`
	// Error is a run-time failure the failure policy Ignore skipped.
	Error string `json:"error,omitempty"`
}

// Timing is how long one stage or prioritizer took.
type Timing struct {
	Stage    string
	Duration time.Duration
	// Failed is set for a prioritizer that failed.
	Failed bool
}

// Stage names of Timings besides the filter stages.
const (
	StageCandidates = "Candidates"
	StagePrioritize = "Prioritize"
	StageSelect     = "Select"
)

// Decision is one selected cluster.
type Decision struct {
	ClusterName string
	Score       int64
}

// Group is one decision group: a named or remainder group of selected clusters.
type Group struct {
	Index    int32
	Name     string
	Clusters []Decision
}

// Result is the outcome of scheduling one placement.
type Result struct {
	// Misconfigured is set when the placement cannot be scheduled as written
	// (PlacementMisconfigured=True); nothing else is set then.
	Misconfigured string
	// Reason and Message of PlacementSatisfied; Satisfied when every requested decision was made.
	Satisfied       bool
	Reason, Message string
	// Groups hold the decisions, in order; with no decision strategy one group 0.
	Groups []Group
	// Selected is the number of selected clusters.
	Selected int
	// Failed is set when a prioritizer with failure policy Fail failed: the placement's
	// decisions must be kept as they are.
	Failed error
	// Ignored lists prioritizers with failure policy Ignore that failed and were skipped.
	Ignored []string
	// RequeueAfter is when the decision may change by itself (a toleration running out).
	RequeueAfter time.Duration
	// Timings are the durations of the stages that ran (Stage* names, then "Prioritize/<name>"
	// per prioritizer and "Select"), for metrics.
	Timings []Timing `json:"-"`
	// Scored are the feasible clusters with their final scores, in name order.
	Scored []Decision `json:"-"`
	// What each stage did, filled by Schedule (not Decide): the debug endpoint's answer.
	Filters      []FilterResult      `json:"filteredPiplieResults"`
	Prioritizers []PrioritizerResult `json:"prioritizeResults"`
	Scores       map[string]int64    `json:"scores,omitempty"`
}

// Schedule decides p against snap and explains how: every stage's clusters and every
// prioritizer's scores (the debug endpoint). Only a canceled ctx is an error; everything about
// the placement is in the Result.
func (sch *Scheduler) Schedule(ctx context.Context, snap *Snapshot, p *clusterv1beta1.Placement) (*Result, error) {
	return sch.schedule(ctx, snap, p, true)
}

// Decide is Schedule without the explanation, for the controller: a pass over thousands of
// placements allocates only what the decision needs.
func (sch *Scheduler) Decide(ctx context.Context, snap *Snapshot, p *clusterv1beta1.Placement) (*Result, error) {
	return sch.schedule(ctx, snap, p, false)
}

func (sch *Scheduler) schedule(ctx context.Context, snap *Snapshot, p *clusterv1beta1.Placement, explain bool) (*Result, error) {
	key := p.Namespace + "/" + p.Name
	res := &Result{}
	preds, err := sch.compilePredicates(p)
	if err != nil {
		res.Misconfigured = err.Error()
		return res, nil
	}
	prios, err := sch.prioritizers(p)
	if err != nil {
		var mc *misconfigured
		if errors.As(err, &mc) {
			res.Misconfigured = mc.msg
			return res, nil
		}
		return nil, err
	}
	if msg := validateStrategy(p); msg != "" {
		res.Misconfigured = msg
		return res, nil
	}

	mark := time.Now()
	lap := func(stage string, failed bool) {
		now := time.Now()
		res.Timings = append(res.Timings, Timing{Stage: stage, Duration: now.Sub(mark), Failed: failed})
		mark = now
	}
	cands, _, reason, msg := snap.candidates(p)
	decided := snap.Decided(key)
	lap(StageCandidates, false)
	if reason != "" {
		res.Reason, res.Message = reason, msg
		res.Groups = []Group{{Index: 0}}
		return res, nil
	}

	// Predicate.
	var matched []*clusterv1.ManagedCluster
	for _, c := range cands {
		var obj map[string]any
		ok, err := snap.matches(c, preds, func() map[string]any {
			if obj == nil {
				obj = clusterObject(c)
				obj[scoresKey] = snap.scoresOf(c.Name)
			}
			return obj
		})
		if err != nil {
			// An expression that cannot be evaluated on a cluster does not select it.
			continue
		}
		if ok {
			matched = append(matched, c)
		}
	}
	if explain {
		res.Filters = append(res.Filters, FilterResult{Name: StagePredicate, Clusters: names(matched)})
	}

	lap(StagePredicate, false)

	// TaintToleration.
	var feasible []*clusterv1.ManagedCluster
	preferNo := map[string]bool{}
	var requeue time.Time
	for _, c := range matched {
		v, until := taints(c, p.Spec.Tolerations, decided[c.Name], snap.Now)
		if !until.IsZero() && (requeue.IsZero() || until.Before(requeue)) {
			requeue = until
		}
		switch v {
		case taintFiltered:
			continue
		case taintPreferNo:
			preferNo[c.Name] = true
		}
		feasible = append(feasible, c)
	}
	if !requeue.IsZero() {
		res.RequeueAfter = requeue.Sub(snap.Now)
	}
	if explain {
		res.Filters = append(res.Filters, FilterResult{Name: StagePredicate + "," + StageTaintToleration, Clusters: names(feasible)})
	}

	if len(feasible) == 0 {
		res.Reason = clusterv1beta1.PlacementReasonNoManagedClusterMatched
		res.Message = "No ManagedCluster matches any of the cluster predicate"
		res.Groups = []Group{{Index: 0}}
		if n := p.Spec.NumberOfClusters; n != nil && *n == 0 {
			res.Satisfied, res.Reason, res.Message = true, clusterv1beta1.PlacementReasonAllDecisionsScheduled, "All cluster decisions scheduled"
		}
		return res, nil
	}

	lap(StageTaintToleration, false)

	// Prioritize.
	total := make([]int64, len(feasible))
	req := &ScoreRequest{Placement: p, Key: key, Clusters: feasible, Snapshot: snap, decided: decided}
	// The prioritizers are independent: with many clusters they score at once, and their
	// answers are summed in configuration order.
	type answer struct {
		scores []int64
		err    error
		took   time.Duration
	}
	answers := make([]answer, len(prios))
	score := func(i int) {
		start := time.Now()
		answers[i].scores, answers[i].err = prios[i].prioritizer.Score(ctx, req)
		answers[i].took = time.Since(start)
	}
	if len(prios) > 1 && len(feasible) >= parallelScoring {
		var wg sync.WaitGroup
		for i := range prios {
			wg.Add(1)
			go func() { defer wg.Done(); score(i) }()
		}
		wg.Wait()
	} else {
		for i := range prios {
			score(i)
		}
	}
	for i, pr := range prios {
		scores, err := answers[i].scores, answers[i].err
		if err == nil && len(scores) != len(feasible) {
			err = fmt.Errorf("answered %d scores for %d clusters", len(scores), len(feasible))
		}
		res.Timings = append(res.Timings, Timing{Stage: StagePrioritize + "/" + pr.metricName, Duration: answers[i].took, Failed: err != nil})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if pr.failurePolicy == wasm.FailurePolicyIgnore {
				res.Ignored = append(res.Ignored, fmt.Sprintf("%s: %v", pr.name, err))
				res.Prioritizers = append(res.Prioritizers, PrioritizerResult{Name: pr.name, Weight: pr.weight, Error: err.Error()})
				continue
			}
			res.Failed = fmt.Errorf("prioritizer %s: %w", pr.name, err)
			res.Reason, res.Message = clusterv1beta1.PlacementReasonNotAllDecisionsScheduled, res.Failed.Error()
			return res, nil
		}
		var pres PrioritizerResult
		if explain {
			pres = PrioritizerResult{Name: pr.name, Weight: pr.weight, Scores: make(map[string]int64, len(feasible))}
		}
		for i, s := range scores {
			s = min(max(s, -100), 100)
			if explain {
				pres.Scores[feasible[i].Name] = s
			}
			total[i] += int64(pr.weight) * s
		}
		if explain {
			res.Prioritizers = append(res.Prioritizers, pres)
		}
	}
	res.Scored = make([]Decision, len(feasible))
	for i, c := range feasible {
		res.Scored[i] = Decision{ClusterName: c.Name, Score: total[i]}
	}
	if explain {
		res.Scores = make(map[string]int64, len(feasible))
		for i, c := range feasible {
			res.Scores[c.Name] = total[i]
		}
	}

	// Select.
	selectStart := time.Now()
	order := make([]int, len(feasible))
	for i := range order {
		order[i] = i
	}
	// Sort keys computed once per cluster, not per comparison: feasible is in name order, so
	// the index breaks the last tie.
	avoid, selectedNow := make([]bool, len(feasible)), make([]bool, len(feasible))
	for i, c := range feasible {
		avoid[i], selectedNow[i] = preferNo[c.Name], decided[c.Name]
	}
	slices.SortFunc(order, func(a, b int) int {
		// Untolerated PreferNoSelect clusters come last, whatever their score.
		if avoid[a] != avoid[b] {
			if avoid[b] {
				return -1
			}
			return 1
		}
		if total[a] != total[b] {
			return cmp.Compare(total[b], total[a])
		}
		// Ties keep what is selected now, then go by name.
		if selectedNow[a] != selectedNow[b] {
			if selectedNow[a] {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	want := len(feasible)
	if n := p.Spec.NumberOfClusters; n != nil {
		want = int(*n)
	}
	chosen := spread(p.Spec.SpreadPolicy.SpreadConstraints, feasible, order, want)
	selected := make([]Decision, len(chosen))
	for i, j := range chosen {
		selected[i] = Decision{ClusterName: feasible[j].Name, Score: total[j]}
	}
	sortDecisions(selected, p.Spec.SortBy)
	res.Selected = len(selected)
	if n := p.Spec.NumberOfClusters; n != nil && len(selected) < int(*n) {
		res.Reason = clusterv1beta1.PlacementReasonNotAllDecisionsScheduled
		res.Message = fmt.Sprintf("%d cluster decisions unscheduled", int(*n)-len(selected))
	} else {
		res.Satisfied, res.Reason, res.Message = true, clusterv1beta1.PlacementReasonAllDecisionsScheduled, "All cluster decisions scheduled"
	}
	res.Groups = groups(p, selected, snap)
	res.Timings = append(res.Timings, Timing{Stage: StageSelect, Duration: time.Since(selectStart)})
	return res, nil
}

func names(cs []*clusterv1.ManagedCluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func sortDecisions(ds []Decision, by clusterv1beta1.PlacementSortBy) {
	sort.Slice(ds, func(i, j int) bool {
		if by == clusterv1beta1.PlacementSortByScore && ds[i].Score != ds[j].Score {
			return ds[i].Score > ds[j].Score
		}
		return ds[i].ClusterName < ds[j].ClusterName
	})
}

// validateStrategy checks what the CRD schema cannot: the sortBy value and the group size.
func validateStrategy(p *clusterv1beta1.Placement) string {
	// Fix (scheduler tests): the CRD sets no minimum on numberOfClusters, and a negative
	// value made spread slice order[:want] and panic.
	if n := p.Spec.NumberOfClusters; n != nil && *n < 0 {
		return fmt.Sprintf("spec.numberOfClusters %d is negative", *n)
	}
	switch p.Spec.SortBy {
	case "", clusterv1beta1.PlacementSortByClusterName, clusterv1beta1.PlacementSortByScore:
	default:
		return fmt.Sprintf("spec.sortBy %q is not ClusterName or Score", p.Spec.SortBy)
	}
	gs := p.Spec.DecisionStrategy.GroupStrategy
	if _, err := groupSize(gs.ClustersPerDecisionGroup, 100); err != nil {
		return "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup: " + err.Error()
	}
	for i, g := range gs.DecisionGroups {
		if _, err := groupSelector(g); err != nil {
			return fmt.Sprintf("spec.decisionStrategy.groupStrategy.decisionGroups[%d].groupClusterSelector: %v", i, err)
		}
	}
	return ""
}

// groupSize is clustersPerDecisionGroup for total selected clusters: a count, or a percentage
// rounded up (at least 1). Unset means everything in one group.
func groupSize(v intstr.IntOrString, total int) (int, error) {
	if v.Type == intstr.Int && v.IntVal == 0 && v.StrVal == "" {
		return max(total, 1), nil
	}
	if v.Type == intstr.String && !strings.HasSuffix(v.StrVal, "%") {
		var n int
		if _, err := fmt.Sscanf(v.StrVal, "%d", &n); err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a positive number or a percentage", v.StrVal)
		}
		return n, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		return 0, err
	}
	if v.Type == intstr.Int && n < 1 {
		return 0, fmt.Errorf("%d is not positive", v.IntVal)
	}
	if v.Type == intstr.String {
		var pct int
		if _, err := fmt.Sscanf(v.StrVal, "%d%%", &pct); err != nil || pct < 1 || pct > 100 {
			return 0, fmt.Errorf("%q is not a percentage in 1%%..100%%", v.StrVal)
		}
	}
	return max(n, 1), nil
}

// groups splits the selected clusters: the strategy's named groups first (each split into
// groups of at most clustersPerDecisionGroup), then the rest in unnamed groups.
func groups(p *clusterv1beta1.Placement, selected []Decision, snap *Snapshot) []Group {
	gs := p.Spec.DecisionStrategy.GroupStrategy
	size, _ := groupSize(gs.ClustersPerDecisionGroup, len(selected))
	var out []Group
	taken := make([]bool, len(selected))
	add := func(name string, ds []Decision) {
		for len(ds) > 0 {
			n := min(size, len(ds))
			out = append(out, Group{Index: int32(len(out)), Name: name, Clusters: ds[:n:n]})
			ds = ds[n:]
		}
	}
	for _, g := range gs.DecisionGroups {
		sel, err := groupSelector(g)
		if err != nil {
			continue // validateStrategy refused it before scheduling
		}
		var ds []Decision
		for i, d := range selected {
			if taken[i] {
				continue
			}
			c, ok := snap.Cluster(d.ClusterName)
			if ok && sel(c) {
				taken[i] = true
				ds = append(ds, d)
			}
		}
		add(g.GroupName, ds)
	}
	var rest []Decision
	for i, d := range selected {
		if !taken[i] {
			rest = append(rest, d)
		}
	}
	add("", rest)
	if len(out) == 0 {
		out = []Group{{Index: 0}}
	}
	return out
}

// spread picks up to want clusters from order (indexes into feasible, best first) keeping
// each constraint's skew: DoNotSchedule never exceeds maxSkew (clusters without the topology
// key are not chosen); ScheduleAnyway prefers clusters that keep it and takes the others only
// when none does.
func spread(terms []clusterv1beta1.SpreadConstraintsTerm, feasible []*clusterv1.ManagedCluster, order []int, want int) []int {
	if want > len(order) {
		want = len(order)
	}
	if len(terms) == 0 {
		return append([]int(nil), order[:want]...)
	}
	type domain struct {
		value string
		ok    bool
	}
	topo := make([][]domain, len(terms)) // term → cluster index → domain
	counts := make([]map[string]int, len(terms))
	for t, term := range terms {
		topo[t] = make([]domain, len(feasible))
		counts[t] = map[string]int{}
		for i, c := range feasible {
			var v string
			var ok bool
			if term.TopologyKeyType == clusterv1beta1.TopologyKeyTypeClaim {
				v, ok = claimSetOf(c).find(term.TopologyKey)
			} else {
				v, ok = c.Labels[term.TopologyKey]
			}
			topo[t][i] = domain{v, ok}
			if ok {
				counts[t][v] = 0 // every domain present among the feasible clusters
			}
		}
	}
	skewOK := func(t, i int) bool {
		d := topo[t][i]
		if !d.ok {
			return false
		}
		lo := math.MaxInt
		for v, n := range counts[t] {
			if v == d.value {
				n++
			}
			lo = min(lo, n)
		}
		maxSkew := int(terms[t].MaxSkew)
		if maxSkew < 1 {
			maxSkew = 1
		}
		return counts[t][d.value]+1-lo <= maxSkew
	}
	var out []int
	taken := make([]bool, len(feasible))
	for len(out) < want {
		pick := -1
		fallback := -1
		for _, i := range order {
			if taken[i] {
				continue
			}
			hard, soft := true, true
			for t, term := range terms {
				ok := skewOK(t, i)
				if term.WhenUnsatisfiable == clusterv1beta1.DoNotSchedule {
					hard = hard && ok
				} else {
					soft = soft && ok
				}
			}
			if !hard {
				continue
			}
			if soft {
				pick = i
				break
			}
			if fallback < 0 {
				fallback = i
			}
		}
		if pick < 0 {
			pick = fallback
		}
		if pick < 0 {
			break
		}
		taken[pick] = true
		out = append(out, pick)
		for t := range terms {
			if d := topo[t][pick]; d.ok {
				counts[t][d.value]++
			}
		}
	}
	return out
}
