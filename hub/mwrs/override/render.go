package override

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/hash"
)

// MaxRenderTime bounds one cluster's render (transforms included).
const MaxRenderTime = 10 * time.Second

// Hash is a rendered spec's hash: the replica set controller's template hash, so a cluster
// no override changes hashes exactly as before overrides existed.
func Hash(spec *workv1.ManifestWorkSpec) (string, error) {
	h, err := hash.JSON(spec)
	if err != nil {
		return "", fmt.Errorf("the ManifestWork template: %w", err)
	}
	return hash.Short(h), nil
}

// CELMatcher evaluates a rule's celSelector expressions on a cluster, as a Placement's
// requiredClusterSelector does (the controller passes the placement scheduler's compiler).
type CELMatcher interface {
	MatchCEL(ctx context.Context, exprs []string, cluster *clusterv1.ManagedCluster) (bool, error)
}

// TransformRequest is what a transform rule hands its plugin for one manifest.
type TransformRequest struct {
	Plugin     string
	Params     json.RawMessage
	ReplicaSet types.NamespacedName
	Override   string
	Rule       string
	// Values are the template values of the cluster (cluster, placement, group, replicaSet),
	// shared by the render: read only.
	Values   map[string]any
	Manifest json.RawMessage
}

// Transformer runs ManifestTransformer plugins; it returns the manifest the plugin made.
type Transformer interface {
	Transform(ctx context.Context, req TransformRequest) (json.RawMessage, error)
}

// Cluster is one cluster to render for, with the facts that are not on its ManagedCluster.
type Cluster struct {
	Cluster     *clusterv1.ManagedCluster
	ClusterSets []string
	Placement   string
	GroupName   string
	GroupIndex  int32
}

// Input is one render: a replica set's template, its compiled overrides and a cluster.
type Input struct {
	ReplicaSet types.NamespacedName
	Template   *workv1.ManifestWorkSpec
	// Overrides naming the replica set, in any order (Render sorts a copy).
	Overrides   []*Program
	Cluster     Cluster
	CEL         CELMatcher
	Transformer Transformer
}

// Applied is one rule that changed the cluster's work.
type Applied struct {
	Override  string
	Rule      string
	Manifests int
	// Overrider is the rule's overrider; Changed the manifests it changed (group/Kind ns/name).
	Overrider string
	Changed   []string
}

// Result is a cluster's rendered work.
type Result struct {
	// Spec is the template itself when no rule changed anything, else a copy whose
	// manifests differ.
	Spec *workv1.ManifestWorkSpec
	Hash string
	// Matched: overrides with a rule that selected the cluster; Trace: the rules that changed it.
	Matched []string
	Trace   []Applied
}

// RuleFailure is a rule that failed for one cluster; the cluster's work is not written.
type RuleFailure struct {
	Override string
	Rule     string
	Cluster  string
	Manifest string
	Message  string
}

func (f *RuleFailure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "override %s rule %s on cluster %s", f.Override, f.Rule, f.Cluster)
	if f.Manifest != "" {
		fmt.Fprintf(&b, " manifest %s", f.Manifest)
	}
	b.WriteString(": ")
	b.WriteString(f.Message)
	return b.String()
}

// ruleContext is what an overrider sees of the render.
type ruleContext struct {
	ctx      context.Context
	in       *Input
	values   map[string]any
	override string
	rule     string
}

// Render renders in.Cluster's work. A failing rule stops the render (the order is fixed, so
// the failure is too) and nothing of it is returned: the caller keeps the cluster's work.
func Render(ctx context.Context, in Input) (Result, *RuleFailure) {
	ctx, cancel := context.WithTimeout(ctx, MaxRenderTime)
	defer cancel()
	mc := in.Cluster.Cluster
	fail := func(p, r, m string, err error) (Result, *RuleFailure) {
		return Result{}, &RuleFailure{Override: p, Rule: r, Cluster: mc.Name, Manifest: m, Message: truncate(err.Error(), 1024)}
	}
	progs := slices.Clone(in.Overrides)
	Sort(progs)
	values := Values(in.ReplicaSet, in.Cluster)
	manifests := in.Template.Workload.Manifests
	// objs caches the decoded manifests a rule touched; raw keeps bytes of untouched ones.
	objs := make([]map[string]any, len(manifests))
	changed := make([]bool, len(manifests))
	var res Result
	for _, p := range progs {
		matched := false
		for _, r := range p.Rules {
			ok, err := r.selects(ctx, &in)
			if err != nil {
				return fail(p.Name, r.Name, "", err)
			}
			if !ok {
				continue
			}
			matched = true
			rc := &ruleContext{ctx: ctx, in: &in, values: values, override: p.Name, rule: r.Name}
			n := 0
			var ids []string
			for i, m := range manifests {
				if objs[i] == nil {
					obj, err := decode(m.Raw)
					if err != nil {
						return fail(p.Name, r.Name, fmt.Sprintf("manifests[%d]", i), err)
					}
					objs[i] = obj
				}
				id := identityOf(objs[i])
				if !r.selectsManifest(id) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return fail(p.Name, r.Name, id.String(), fmt.Errorf("render deadline: %w", err))
				}
				out, did, err := applyRule(rc, r, objs[i])
				if err != nil {
					return fail(p.Name, r.Name, id.String(), err)
				}
				if did {
					objs[i], changed[i] = out, true
					n++
					ids = append(ids, id.String())
				}
			}
			if n > 0 {
				res.Trace = append(res.Trace, Applied{Override: p.Name, Rule: r.Name, Manifests: n, Overrider: r.Overrider, Changed: ids})
			}
		}
		if matched {
			res.Matched = append(res.Matched, p.Name)
		}
	}
	res.Spec = in.Template
	if slices.Contains(changed, true) {
		spec := in.Template.DeepCopy()
		same := true
		for i := range changed {
			if !changed[i] {
				continue
			}
			raw, err := canonical(objs[i])
			if err != nil {
				return fail("", "", identityOf(objs[i]).String(), err)
			}
			// Rules that undid each other leave the manifest's bytes as written.
			if orig, err := decode(manifests[i].Raw); err == nil {
				if was, err := canonical(orig); err == nil && bytes.Equal(was, raw) {
					continue
				}
			}
			spec.Workload.Manifests[i].Raw = raw
			spec.Workload.Manifests[i].Object = nil
			same = false
		}
		if !same {
			res.Spec = spec
		}
	}
	h, err := Hash(res.Spec)
	if err != nil {
		return fail("", "", "", err)
	}
	res.Hash = h
	return res, nil
}

// applyRule runs r's overrider on obj and checks the result: same identity, within the size
// cap. did is false when the result is canonically equal to obj. A panic of a library is
// the rule's failure, not the hub's.
func applyRule(rc *ruleContext, r *Rule, obj map[string]any) (out map[string]any, did bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, did, err = nil, false, fmt.Errorf("internal error: %v", p)
		}
	}()
	before, err := canonical(obj)
	if err != nil {
		return nil, false, err
	}
	// Overriders change the copy they are given; obj stays as it was if the rule fails.
	work, err := decode(before)
	if err != nil {
		return nil, false, err
	}
	out, err = r.op.apply(rc, work)
	var na *notApplicableError
	if errors.As(err, &na) && len(r.manifests) == 0 {
		return obj, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	after, err := canonical(out)
	if err != nil {
		return nil, false, err
	}
	if len(after) > MaxManifestBytes {
		return nil, false, fmt.Errorf("the manifest is %d bytes, at most %d", len(after), MaxManifestBytes)
	}
	if was, is := identityOf(obj), identityOf(out); was != is {
		return nil, false, fmt.Errorf("changes the manifest's identity: %s", was.diff(is))
	}
	if bytes.Equal(before, after) {
		return obj, false, nil
	}
	// Re-decode so what later rules see is exactly what the bytes say.
	out, err = decode(after)
	return out, err == nil, err
}

// selects says whether the rule applies to the cluster; its members are ANDed.
func (r *Rule) selects(ctx context.Context, in *Input) (bool, error) {
	c := in.Cluster
	mc := c.Cluster
	if r.labels != nil && !r.labels.Matches(labels.Set(mc.Labels)) {
		return false, nil
	}
	if r.claims != nil && !r.claims.Matches(labels.Set(claims(mc))) {
		return false, nil
	}
	if len(r.clusterSets) > 0 && !slices.ContainsFunc(r.clusterSets, func(s string) bool { return slices.Contains(c.ClusterSets, s) }) {
		return false, nil
	}
	if len(r.groups) > 0 && !slices.ContainsFunc(r.groups, func(g flotillav1alpha1.DecisionGroupMatch) bool {
		return (g.Placement == "" || g.Placement == c.Placement) &&
			(g.GroupIndex == nil && g.GroupName == c.GroupName || g.GroupIndex != nil && *g.GroupIndex == c.GroupIndex)
	}) {
		return false, nil
	}
	if len(r.cel) > 0 {
		if in.CEL == nil {
			return false, errors.New("celSelector: no CEL evaluator configured")
		}
		ok, err := in.CEL.MatchCEL(ctx, r.cel, mc)
		if err != nil {
			return false, fmt.Errorf("celSelector: %w", err)
		}
		return ok, nil
	}
	return true, nil
}

// selectsManifest says whether one of the rule's manifest selectors matches id (none: all).
func (r *Rule) selectsManifest(id identity) bool {
	if len(r.manifests) == 0 {
		return true
	}
	for _, s := range r.manifests {
		if s.Kind != "" && (s.Kind != id.Kind || s.Group != id.group()) {
			continue
		}
		if s.Namespace != "" && s.Namespace != id.Namespace {
			continue
		}
		if s.Name != "" && s.Name != id.Name {
			continue
		}
		return true
	}
	return false
}

// claims are the cluster's claims by name.
func claims(mc *clusterv1.ManagedCluster) map[string]string {
	out := make(map[string]string, len(mc.Status.ClusterClaims))
	for _, c := range mc.Status.ClusterClaims {
		out[c.Name] = c.Value
	}
	return out
}

// Values are the template values of one cluster (see the package README table in the design):
// .cluster.{name,kubernetesVersion,labels,claims,capacity,allocatable,clusterSets},
// .placement, .group.{name,index}, .replicaSet.{namespace,name}. Quantities are milli-units.
func Values(rs types.NamespacedName, c Cluster) map[string]any {
	mc := c.Cluster
	lbls := make(map[string]any, len(mc.Labels))
	for k, v := range mc.Labels {
		lbls[k] = v
	}
	cls := map[string]any{}
	for k, v := range claims(mc) {
		cls[k] = v
	}
	milli := func(rl clusterv1.ResourceList) map[string]any {
		out := make(map[string]any, len(rl))
		for k, q := range rl {
			out[string(k)] = clusterv1.MilliValue(&q)
		}
		return out
	}
	sets := slices.Clone(c.ClusterSets)
	slices.Sort(sets)
	setsAny := make([]any, len(sets))
	for i, s := range sets {
		setsAny[i] = s
	}
	return map[string]any{
		"cluster": map[string]any{
			"name":              mc.Name,
			"kubernetesVersion": mc.Status.Version.Kubernetes,
			"labels":            lbls,
			"claims":            cls,
			"capacity":          milli(mc.Status.Capacity),
			"allocatable":       milli(mc.Status.Allocatable),
			"clusterSets":       setsAny,
		},
		"placement":  c.Placement,
		"group":      map[string]any{"name": c.GroupName, "index": int64(c.GroupIndex)},
		"replicaSet": map[string]any{"namespace": rs.Namespace, "name": rs.Name},
	}
}

// Outcome is one cluster's render of RenderAll.
type Outcome struct {
	Cluster string
	Result  Result
	Failure *RuleFailure
}

// RenderAll renders in for every cluster, in parallel (at most GOMAXPROCS at a time); the
// outcomes are in the order of clusters. in.Cluster is ignored.
func RenderAll(ctx context.Context, in Input, clusters []Cluster) []Outcome {
	out := make([]Outcome, len(clusters))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, c := range clusters {
		g.Go(func() error {
			one := in
			one.Cluster = c
			res, f := Render(ctx, one)
			out[i] = Outcome{Cluster: c.Cluster.Name, Result: res, Failure: f}
			return nil
		})
	}
	_ = g.Wait() // the goroutines return no errors: failures are per cluster
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
