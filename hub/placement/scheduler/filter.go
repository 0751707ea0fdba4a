package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/library"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// candidates are the members of the eligible sets: bound to the placement's namespace and,
// when spec.clusterSets is set, named there. A terminating cluster is never a candidate.
// The reason is set when there are none, as PlacementSatisfied's reason.
func (s *Snapshot) candidates(p *clusterv1beta1.Placement) ([]*clusterv1.ManagedCluster, []string, string, string) {
	bound := s.Bindings[p.Namespace]
	if len(bound) == 0 {
		return nil, nil, clusterv1beta1.PlacementReasonNoManagedClusterSetBindings,
			"No valid ManagedClusterSetBindings found in placement namespace"
	}
	var eligible []string
	valid := 0
	for set := range bound {
		if _, ok := s.Sets[set]; !ok {
			continue // a binding to a set that does not exist selects nothing
		}
		valid++
		if len(p.Spec.ClusterSets) == 0 || slices.Contains(p.Spec.ClusterSets, set) {
			eligible = append(eligible, set)
		}
	}
	sort.Strings(eligible)
	if len(eligible) == 0 {
		// Fix (scheduler tests): OCM counts only valid bindings (their set exists), so bindings
		// that all name missing sets are NoManagedClusterSetBindings even with spec.clusterSets,
		// not NoIntersection.
		if len(p.Spec.ClusterSets) > 0 && valid > 0 {
			return nil, nil, clusterv1beta1.PlacementReasonNoIntersection,
				fmt.Sprintf("None of ManagedClusterSets [%s] is bound to placement namespace", strings.Join(p.Spec.ClusterSets, ","))
		}
		return nil, nil, clusterv1beta1.PlacementReasonNoManagedClusterSetBindings,
			"No valid ManagedClusterSetBindings found in placement namespace"
	}
	seen := make(map[int]bool)
	var idx []int
	for _, set := range eligible {
		for _, i := range s.members[set] {
			if !seen[i] && s.Clusters[i].DeletionTimestamp == nil {
				seen[i] = true
				idx = append(idx, i)
			}
		}
	}
	if len(idx) == 0 {
		return nil, eligible, clusterv1beta1.PlacementReasonAllManagedClusterSetsEmpty,
			fmt.Sprintf("All ManagedClusterSets [%s] have no member ManagedCluster", strings.Join(eligible, ","))
	}
	sort.Ints(idx)
	out := make([]*clusterv1.ManagedCluster, len(idx))
	for i, j := range idx {
		out[i] = s.Clusters[j]
	}
	return out, eligible, "", ""
}

// predicate is one compiled requiredClusterSelector.
type predicate struct {
	labels labels.Selector
	claims labels.Selector
	cel    []cel.Program
}

// compilePredicates compiles spec.predicates; an error names the field.
func (sch *Scheduler) compilePredicates(p *clusterv1beta1.Placement) ([]predicate, error) {
	out := make([]predicate, 0, len(p.Spec.Predicates))
	for i, pr := range p.Spec.Predicates {
		field := fmt.Sprintf("spec.predicates[%d].requiredClusterSelector", i)
		rs := pr.RequiredClusterSelector
		ls, err := metav1.LabelSelectorAsSelector(&rs.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%s.labelSelector: %w", field, err)
		}
		cs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: nil, MatchExpressions: rs.ClaimSelector.MatchExpressions})
		if err != nil {
			return nil, fmt.Errorf("%s.claimSelector: %w", field, err)
		}
		compiled := predicate{labels: ls, claims: cs}
		for j, expr := range rs.CelSelector.CelExpressions {
			prg, err := sch.celProgram(expr)
			if err != nil {
				return nil, fmt.Errorf("%s.celSelector.celExpressions[%d]: %w", field, j, err)
			}
			compiled.cel = append(compiled.cel, prg)
		}
		out = append(out, compiled)
	}
	return out, nil
}

// matches says whether c passes the predicates (any of them; none means all clusters).
func (s *Snapshot) matches(c *clusterv1.ManagedCluster, preds []predicate, obj func() map[string]any) (bool, error) {
	if len(preds) == 0 {
		return true, nil
	}
	// Fix (scheduler tests): an expression that fails on c (e.g. a label c lacks: "no such
	// key") only makes its own predicate not match, as in OCM; it used to return at once,
	// so the other ORed predicates could not select c. The first error is still returned
	// when no predicate matches.
	var firstErr error
	for _, pr := range preds {
		if !pr.labels.Matches(labels.Set(c.Labels)) {
			continue
		}
		if !pr.claims.Empty() && !pr.claims.Matches(claimSetOf(c)) {
			continue
		}
		ok := true
		for _, prg := range pr.cel {
			out, _, err := prg.Eval(map[string]any{"managedCluster": obj()})
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("CEL on cluster %s: %w", c.Name, err)
				}
				ok = false
				break
			}
			if b, isBool := out.Value().(bool); !isBool || !b {
				ok = false
				break
			}
		}
		if ok {
			return true, nil
		}
	}
	return false, firstErr
}

// claimLabels are a cluster's claims as a label set, for claimSelector.
type claimLabels struct{ c *clusterv1.ManagedCluster }

func claimSetOf(c *clusterv1.ManagedCluster) claimLabels { return claimLabels{c} }

func (l claimLabels) Has(key string) bool { _, ok := l.find(key); return ok }
func (l claimLabels) Get(key string) string {
	v, _ := l.find(key)
	return v
}
func (l claimLabels) find(key string) (string, bool) {
	for _, cl := range l.c.Status.ClusterClaims {
		if cl.Name == key {
			return cl.Value, true
		}
	}
	return "", false
}
func (l claimLabels) Lookup(key string) (string, bool) { return l.find(key) }

// celEnv is the environment of celSelector expressions: the variable managedCluster (the
// ManagedCluster as JSON) and Kubernetes' CEL libraries (semver, quantity, regex, lists...).
func newCELEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("managedCluster", cel.DynType),
		// managedCluster.scores("<AddOnPlacementScore>") lists that resource's valid scores as
		// {name, value}, as OCM's CEL selector offers.
		cel.Function("scores", cel.MemberOverload("managedcluster_scores_string",
			[]*cel.Type{cel.DynType, cel.StringType}, cel.ListType(cel.DynType),
			cel.BinaryBinding(func(cluster, resource ref.Val) ref.Val {
				m, ok := cluster.(traits.Mapper)
				if !ok {
					return types.NewErr("scores: the receiver must be managedCluster")
				}
				all, found := m.Find(types.String(scoresKey))
				if !found {
					return types.NewDynamicList(types.DefaultTypeAdapter, []any{})
				}
				if byName, ok := all.(traits.Mapper); ok {
					if list, found := byName.Find(resource); found {
						return list
					}
				}
				return types.NewDynamicList(types.DefaultTypeAdapter, []any{})
			}))),
		library.Lists(), library.Regex(), library.URLs(), library.Quantity(), library.IP(), library.CIDR(),
		library.Format(), library.SemverLib(),
	)
}

// celCostLimit bounds one expression's evaluation on one cluster.
const celCostLimit = 1_000_000

// celCache compiles each distinct expression once.
type celCache struct {
	once  sync.Once
	env   *cel.Env
	err   error
	mu    sync.Mutex
	progs map[string]celEntry
}

type celEntry struct {
	prg cel.Program
	err error
}

func (sch *Scheduler) celProgram(expr string) (cel.Program, error) { return sch.cel.program(expr) }

func (c *celCache) program(expr string) (cel.Program, error) {
	c.once.Do(func() { c.env, c.err = newCELEnv(); c.progs = map[string]celEntry{} })
	if c.err != nil {
		return nil, c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.progs[expr]; ok {
		return e.prg, e.err
	}
	var e celEntry
	ast, iss := c.env.Compile(expr)
	if iss.Err() != nil {
		e.err = iss.Err()
	} else if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		e.err = fmt.Errorf("expression must be a boolean, is %s", ast.OutputType())
	} else {
		e.prg, e.err = c.env.Program(ast, cel.CostLimit(celCostLimit))
	}
	if len(c.progs) < 10000 {
		c.progs[expr] = e
	}
	return e.prg, e.err
}

// CELMatcher evaluates celSelector expressions on one cluster as a Placement's
// requiredClusterSelector does (all must be true; scores() sees no scores): the overrides of
// ManifestWorkReplicaSets select clusters with it. The zero value is ready; use a pointer.
type CELMatcher struct{ cache celCache }

// MatchCEL reports whether every expression is true on cluster.
func (m *CELMatcher) MatchCEL(ctx context.Context, exprs []string, cluster *clusterv1.ManagedCluster) (bool, error) {
	obj := clusterObject(cluster)
	for i, expr := range exprs {
		prg, err := m.cache.program(expr)
		if err != nil {
			return false, fmt.Errorf("celExpressions[%d]: %w", i, err)
		}
		out, _, err := prg.ContextEval(ctx, map[string]any{"managedCluster": obj})
		if err != nil {
			return false, fmt.Errorf("celExpressions[%d] on cluster %s: %w", i, cluster.Name, err)
		}
		if b, ok := out.Value().(bool); !ok || !b {
			return false, nil
		}
	}
	return true, nil
}

// scoresKey holds, in the object CEL sees, the cluster's AddOnPlacementScores for scores().
const scoresKey = "__scores"

// clusterObject is c as the JSON map CEL sees.
func clusterObject(c *clusterv1.ManagedCluster) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return map[string]any{}
	}
	return m
}

// toleration checks. A taint is tolerated when a toleration matches its key, value and
// effect and its tolerationSeconds (counted from the taint's timeAdded) have not run out.
// expires is when the earliest toleration in use runs out (zero when none does).
func tolerated(t clusterv1.Taint, tols []clusterv1beta1.Toleration, now time.Time) (ok bool, expires time.Time) {
	for _, tol := range tols {
		if !tolerationMatches(tol, t) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return true, time.Time{}
		}
		until := t.TimeAdded.Add(time.Duration(*tol.TolerationSeconds) * time.Second)
		if now.Before(until) {
			return true, until
		}
	}
	return false, time.Time{}
}

func tolerationMatches(tol clusterv1beta1.Toleration, t clusterv1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	switch tol.Operator {
	case clusterv1beta1.TolerationOpExists:
		return tol.Key == "" || tol.Key == t.Key
	case clusterv1beta1.TolerationOpEqual, "":
		return tol.Key == t.Key && tol.Value == t.Value
	}
	return false
}

// taintVerdict is what a cluster's taints make of it for a placement.
type taintVerdict int

const (
	taintOK       taintVerdict = iota
	taintFiltered              // NoSelect, or NoSelectIfNew for a cluster not selected now
	taintPreferNo              // an untolerated PreferNoSelect: chosen only when others do not suffice
)

// taints judges c; requeue is when a toleration in use runs out.
func taints(c *clusterv1.ManagedCluster, tols []clusterv1beta1.Toleration, selectedNow bool, now time.Time) (v taintVerdict, requeue time.Time) {
	v = taintOK
	for _, t := range c.Spec.Taints {
		ok, until := tolerated(t, tols, now)
		if ok {
			if !until.IsZero() && (requeue.IsZero() || until.Before(requeue)) {
				requeue = until
			}
			continue
		}
		switch t.Effect {
		case clusterv1.TaintEffectNoSelect:
			return taintFiltered, requeue
		case clusterv1.TaintEffectNoSelectIfNew:
			if !selectedNow {
				return taintFiltered, requeue
			}
		case clusterv1.TaintEffectPreferNoSelect:
			v = taintPreferNo
		}
	}
	return v, requeue
}

// groupSelector matches the clusters of a decision group (labels and claims, ANDed).
func groupSelector(g clusterv1beta1.DecisionGroup) (func(*clusterv1.ManagedCluster) bool, error) {
	ls, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector.LabelSelector)
	if err != nil {
		return nil, err
	}
	cs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: g.ClusterSelector.ClaimSelector.MatchExpressions})
	if err != nil {
		return nil, err
	}
	return func(c *clusterv1.ManagedCluster) bool {
		return ls.Matches(labels.Set(c.Labels)) && (cs.Empty() || cs.Matches(claimSetOf(c)))
	}, nil
}
