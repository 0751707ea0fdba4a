package dashboard

// The placement explain view: the placement scheduler's debug data (what OCM's debug endpoint
// answers), computed here from a reader with the hub's own scheduler (hub/placement/scheduler),
// plus why each cluster the placement does not select is left out.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// ExplainTimeout bounds one explanation (reads, plugin loads, scoring).
const ExplainTimeout = 30 * time.Second

// Explanation says why clusters were (not) chosen by a placement (design-26 explain).
type Explanation struct {
	Filters      []ExplainFilter      `json:"filters"`
	Prioritizers []ExplainPrioritizer `json:"prioritizers"`
	Scores       map[string]int64     `json:"scores"`
	NotChosen    []ExplainNotChosen   `json:"notChosen"`
	// Error says why the placement is not scheduled (misconfigured), "" otherwise.
	Error string `json:"error"`
}

// ExplainFilter is the clusters left after a filter stage (cumulative, as OCM names them).
type ExplainFilter struct {
	Name     string   `json:"name"`
	Clusters []string `json:"clusters"`
}

// ExplainPrioritizer is one prioritizer's scores, or why it gave none.
type ExplainPrioritizer struct {
	Name   string           `json:"name"`
	Weight int32            `json:"weight"`
	Scores map[string]int64 `json:"scores"`
	Error  string           `json:"error"`
}

// ExplainNotChosen is a cluster of the fleet the placement does not select, and why.
type ExplainNotChosen struct {
	Cluster string `json:"cluster"`
	Why     string `json:"why"`
}

// Explain schedules Placement namespace/name at now against the fleet as r reads it, with the
// hub's scheduler, and says how: each filter stage's clusters, each prioritizer's scores and
// why every other cluster is not chosen. Nothing is written. Its Wasm prioritizers (the
// built-ins included) are loaded locally from their WasmPlugins' sources, each only if its
// module is the one the hub serves (status.digest); one that cannot be loaded here is skipped
// with why in its error, and the scores are then partial. r reads ManagedClusters,
// ManagedClusterSets, ManagedClusterSetBindings, PlacementDecisions, AddOnPlacementScores
// (optional), WasmPlugins and their source ConfigMaps. A missing placement is an error
// wrapping the API's NotFound (apierrors.IsNotFound).
func Explain(ctx context.Context, r client.Reader, namespace, name string, now time.Time) (Explanation, error) {
	ctx, cancel := context.WithTimeout(ctx, ExplainTimeout)
	defer cancel()
	out := Explanation{Filters: []ExplainFilter{}, Prioritizers: []ExplainPrioritizer{}, Scores: map[string]int64{}, NotChosen: []ExplainNotChosen{}}
	what := fmt.Sprintf("Placement %s/%s", namespace, name)
	p := &clusterv1beta1.Placement{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	in, notes, err := explainSnapshotInput(ctx, r, namespace, now)
	if err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	reg, done, err := explainRegistry(ctx, r, p)
	if err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	defer done()
	snap := scheduler.NewSnapshot(in)
	res, err := scheduler.New(reg, plugininstall.BuiltinPrioritizerPlugin).Schedule(ctx, snap, p)
	if err != nil {
		return out, fmt.Errorf("%s: scheduling: %w", what, err)
	}
	if res.Misconfigured != "" {
		out.Error = res.Misconfigured
		return out, nil
	}
	for _, f := range res.Filters {
		out.Filters = append(out.Filters, ExplainFilter{Name: f.Name, Clusters: explainNonNil(f.Clusters)})
	}
	partial := false
	for _, pr := range res.Prioritizers {
		if pr.Error != "" {
			partial = true
		}
		scores := pr.Scores
		if scores == nil {
			scores = map[string]int64{}
		}
		out.Prioritizers = append(out.Prioritizers, ExplainPrioritizer{Name: pr.Name, Weight: pr.Weight, Scores: scores, Error: pr.Error})
	}
	if res.Scores != nil {
		out.Scores = res.Scores
	}
	out.NotChosen = explainNotChosen(p, snap, res, partial)
	if res.Failed != nil {
		out.Error = res.Failed.Error() + " (the hub keeps the placement's decisions as they are)"
	}
	if len(notes) > 0 {
		out.Error = rolloutJoin(out.Error, strings.Join(notes, "; "))
	}
	return out, nil
}

// explainSnapshotInput reads the fleet a scheduling pass sees. Scores are optional: without
// them (no access) the AddOn prioritizers score 0, and a note says so. The objects are the
// cache's own (not copied): the scheduler only reads a snapshot, as it does the hub's shared one.
func explainSnapshotInput(ctx context.Context, r client.Reader, namespace string, now time.Time) (scheduler.SnapshotInput, []string, error) {
	in := scheduler.SnapshotInput{Now: now, Decisions: map[string][]string{}}
	clusters := &clusterv1.ManagedClusterList{}
	if err := r.List(ctx, clusters, client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	for i := range clusters.Items {
		in.Clusters = append(in.Clusters, &clusters.Items[i])
	}
	sets := &clusterv1beta2.ManagedClusterSetList{}
	if err := r.List(ctx, sets, client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, fmt.Errorf("listing ManagedClusterSets: %w", err)
	}
	for i := range sets.Items {
		in.Sets = append(in.Sets, &sets.Items[i])
	}
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	if err := r.List(ctx, bindings, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, fmt.Errorf("listing the ManagedClusterSetBindings of namespace %s: %w", namespace, err)
	}
	for i := range bindings.Items {
		in.Bindings = append(in.Bindings, &bindings.Items[i])
	}
	// Balance and Steady read every placement's decisions.
	decs := &clusterv1beta1.PlacementDecisionList{}
	if err := r.List(ctx, decs, client.UnsafeDisableDeepCopy); err != nil {
		return in, nil, fmt.Errorf("listing PlacementDecisions: %w", err)
	}
	for _, d := range decs.Items {
		owner := d.Labels[clusterv1beta1.PlacementLabel]
		if owner == "" {
			continue
		}
		key := d.Namespace + "/" + owner
		for _, cd := range d.Status.Decisions {
			in.Decisions[key] = append(in.Decisions[key], cd.ClusterName)
		}
	}
	var notes []string
	scores := &clusterv1alpha1.AddOnPlacementScoreList{}
	if err := r.List(ctx, scores, client.UnsafeDisableDeepCopy); err != nil {
		notes = append(notes, fmt.Sprintf("AddOnPlacementScores not read (%v): add-on scores count as 0 here", err))
	} else {
		for i := range scores.Items {
			in.Scores = append(in.Scores, &scores.Items[i])
		}
	}
	return in, notes, nil
}

// explainRegistry loads the Prioritizer WasmPlugins p's prioritizer policy may name into a
// local registry, as the hub's WasmPlugin controller loads them. A plugin the hub does not
// serve is unavailable here as there (with its failure policy: the scheduler then says the
// placement is misconfigured, or skips it); one the hub serves but that cannot be loaded here
// is skipped with why (failure policy Ignore), so the filters are still explained.
func explainRegistry(ctx context.Context, r client.Reader, p *clusterv1beta1.Placement) (*wasm.Registry, func(), error) {
	reg := wasm.NewRegistry()
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	builtIn := func(b string) {
		if n, ok := plugininstall.BuiltinPrioritizerPlugin(b); ok {
			add(n)
		}
	}
	if m := p.Spec.PrioritizerPolicy.Mode; m == "" || m == clusterv1beta1.PrioritizerPolicyModeAdditive {
		// The Additive mode's defaults.
		builtIn(clusterv1beta1.PrioritizerBalance)
		builtIn(clusterv1beta1.PrioritizerSteady)
	}
	for _, c := range p.Spec.PrioritizerPolicy.Configurations {
		if c.ScoreCoordinate == nil || c.Weight == 0 {
			continue
		}
		switch c.ScoreCoordinate.Type {
		case clusterv1beta1.ScoreCoordinateTypeBuiltIn, "":
			builtIn(c.ScoreCoordinate.BuiltIn)
		case clusterv1beta1.ScoreCoordinateTypePlugin:
			if c.ScoreCoordinate.Plugin != nil {
				add(c.ScoreCoordinate.Plugin.Name)
			}
		}
	}
	if len(names) == 0 {
		return reg, func() {}, nil
	}
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("wasm engine: %w", err)
	}
	done := func() { _ = engine.Close(context.WithoutCancel(ctx)) }
	for _, n := range names {
		u, err := explainLoad(ctx, r, engine, reg, n)
		if err != nil {
			done()
			return nil, nil, err
		}
		if u != nil {
			if err := reg.MarkUnavailable(ctx, *u); err != nil {
				done()
				return nil, nil, fmt.Errorf("WasmPlugin %s: %w", n, err)
			}
		}
	}
	return reg, done, nil
}

// explainLoad loads WasmPlugin name into reg, or says why it is unavailable (nil, nil: the
// plugin does not exist, which the scheduler reports itself). Only a canceled ctx is an error.
func explainLoad(ctx context.Context, r client.Reader, engine *wasm.Engine, reg *wasm.Registry, name string) (*wasm.Unavailable, error) {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return explainSkipped(name, fmt.Errorf("reading WasmPlugin %s: %w", name, err)), nil
	}
	if wp.Spec.Type != flotillav1alpha1.PluginTypePrioritizer {
		// Not served as a prioritizer: the scheduler says so.
		return nil, nil
	}
	if wp.Status.Digest == "" {
		// The hub does not serve it either: as the hub's scheduler sees it.
		u := &wasm.Unavailable{Name: name, Type: abi.TypePrioritizer, FailurePolicy: wasm.FailurePolicy(wp.Spec.FailurePolicy),
			Reason: "NotLoaded", Message: "the hub has not loaded it"}
		if u.FailurePolicy == "" {
			u.FailurePolicy = wasm.FailurePolicyFail
		}
		if c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady); c != nil {
			u.Reason, u.Message = wasm.LoadReason(c.Reason), c.Message
		}
		return u, nil
	}
	spec, _, lerr, err := wasmplugin.Resolve(ctx, r, engine, wp)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return explainSkipped(name, err), nil
	case lerr != nil:
		return explainSkipped(name, lerr), nil
	}
	if d := wasm.Digest(spec.Wasm); d != wp.Status.Digest {
		return explainSkipped(name, fmt.Errorf("its source holds sha256 %s, the hub serves %s", d, wp.Status.Digest)), nil
	}
	m, err := engine.Load(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return explainSkipped(name, err), nil
	}
	if err := reg.Set(ctx, m); err != nil {
		return explainSkipped(name, err), nil
	}
	return nil, nil
}

// explainSkipped: a plugin the hub serves but this view cannot run; its scores are left out.
func explainSkipped(name string, err error) *wasm.Unavailable {
	return &wasm.Unavailable{Name: name, Type: abi.TypePrioritizer, FailurePolicy: wasm.FailurePolicyIgnore,
		Reason: "NotLoadedLocally", Message: fmt.Sprintf("not run for this view (%v); the hub's scores are not shown", err)}
}

// explainNotChosen says, for every cluster of the fleet p does not select, which stage left it
// out: not in a ManagedClusterSet bound to p's namespace (and named by spec.clusterSets), being
// deleted, no predicate matching, a taint not tolerated, or the selection (numberOfClusters,
// spread, scores). partial: some prioritizer gave no scores here.
func explainNotChosen(p *clusterv1beta1.Placement, snap *scheduler.Snapshot, res *scheduler.Result, partial bool) []ExplainNotChosen {
	selected := map[string]bool{}
	for _, g := range res.Groups {
		for _, d := range g.Clusters {
			selected[d.ClusterName] = true
		}
	}
	stage := func(name string) map[string]bool {
		for _, f := range res.Filters {
			if f.Name == name {
				m := make(map[string]bool, len(f.Clusters))
				for _, c := range f.Clusters {
					m[c] = true
				}
				return m
			}
		}
		return nil
	}
	matched := stage(scheduler.StagePredicate)
	feasible := stage(scheduler.StagePredicate + "," + scheduler.StageTaintToleration)
	eligible := explainEligibleSets(p, snap)

	// The cut: the lowest total score selected, for "below the cut".
	cut, haveCut := int64(0), false
	for c := range selected {
		if s, ok := res.Scores[c]; ok && (!haveCut || s < cut) {
			cut, haveCut = s, true
		}
	}
	out := []ExplainNotChosen{}
	for _, c := range snap.Clusters {
		if selected[c.Name] {
			continue
		}
		var why string
		sets := explainMemberOf(c, eligible)
		switch {
		case len(eligible) == 0 || len(sets) == 0:
			why = fmt.Sprintf("not in a ManagedClusterSet bound to namespace %s", p.Namespace)
			if len(p.Spec.ClusterSets) > 0 {
				why += fmt.Sprintf(" and named in spec.clusterSets [%s]", strings.Join(p.Spec.ClusterSets, ","))
			}
			if res.Reason != "" && matched == nil {
				why += " (" + res.Message + ")"
			}
		case c.DeletionTimestamp != nil:
			why = "being deleted"
		case matched == nil:
			why = res.Message
		case !matched[c.Name]:
			why = "no predicate matches it (spec.predicates)"
		case feasible != nil && !feasible[c.Name]:
			why = "taint not tolerated: " + explainTaints(c)
		default:
			why = explainBelowCut(p, c, res, cut, haveCut)
			if partial {
				why += " (scores partial: a prioritizer did not run here)"
			}
		}
		out = append(out, ExplainNotChosen{Cluster: c.Name, Why: why})
	}
	return out
}

// explainEligibleSets are the sets bound to p's namespace that exist and that spec.clusterSets
// (when set) names, as the scheduler's candidates.
func explainEligibleSets(p *clusterv1beta1.Placement, snap *scheduler.Snapshot) []*clusterv1beta2.ManagedClusterSet {
	var out []*clusterv1beta2.ManagedClusterSet
	for name := range snap.Bindings[p.Namespace] {
		set, ok := snap.Sets[name]
		if !ok || len(p.Spec.ClusterSets) > 0 && !slices.Contains(p.Spec.ClusterSets, name) {
			continue
		}
		out = append(out, set)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func explainMemberOf(c *clusterv1.ManagedCluster, sets []*clusterv1beta2.ManagedClusterSet) []string {
	var out []string
	for _, s := range sets {
		sel, err := clusterset.Selector(s)
		if err == nil && sel.Matches(labels.Set(c.Labels)) {
			out = append(out, s.Name)
		}
	}
	return out
}

func explainTaints(c *clusterv1.ManagedCluster) string {
	var ts []string
	for _, t := range c.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		ts = append(ts, s+":"+string(t.Effect))
	}
	if len(ts) == 0 {
		return "(none now)"
	}
	return strings.Join(ts, ", ")
}

// explainBelowCut says why a feasible cluster was not selected.
func explainBelowCut(p *clusterv1beta1.Placement, c *clusterv1.ManagedCluster, res *scheduler.Result, cut int64, haveCut bool) string {
	for _, t := range c.Spec.Taints {
		if t.Effect == clusterv1.TaintEffectPreferNoSelect {
			return fmt.Sprintf("taint %s:PreferNoSelect not tolerated: chosen only after every other cluster", t.Key)
		}
	}
	score, scored := res.Scores[c.Name]
	n := "every feasible cluster"
	if p.Spec.NumberOfClusters != nil {
		n = fmt.Sprintf("numberOfClusters %d", *p.Spec.NumberOfClusters)
	}
	switch {
	case !scored:
		return "not scored: " + n + " already selected"
	case haveCut && score < cut:
		return fmt.Sprintf("score %d below the cut %d (%s selected)", score, cut, n)
	case len(p.Spec.SpreadPolicy.SpreadConstraints) > 0:
		return fmt.Sprintf("score %d; left out by spec.spreadPolicy (%s selected)", score, n)
	}
	return fmt.Sprintf("score %d ties the cut; clusters selected now and then names come first (%s selected)", score, n)
}

func explainNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ExplainReader reads from cached, and from direct what cached does not watch (a cache built
// with ReaderFailOnMissingInformer answers cache.ErrResourceNotCached): Explain and the
// rollouts read kinds a dashboard need not watch (ManagedClusterSetBindings,
// AddOnPlacementScores, plugin source ConfigMaps), once per request.
func ExplainReader(cached, direct client.Reader) client.Reader {
	return explainFallback{cached: cached, direct: direct}
}

type explainFallback struct{ cached, direct client.Reader }

func explainNotCached(err error) bool {
	var nc *cache.ErrResourceNotCached
	var ncv cache.ErrResourceNotCached
	return errors.As(err, &nc) || errors.As(err, &ncv)
}

func (f explainFallback) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := f.cached.Get(ctx, key, obj, opts...)
	if explainNotCached(err) {
		return f.direct.Get(ctx, key, obj, opts...)
	}
	return err
}

func (f explainFallback) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := f.cached.List(ctx, list, opts...)
	if explainNotCached(err) {
		return f.direct.List(ctx, list, opts...)
	}
	return err
}
