package mwrs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

const (
	// RevisionAnnotation on a generated work is the revision (template and overrides) it
	// was rendered from; written only when some override names the replica set.
	RevisionAnnotation = "work.flotilla.dev/revision"
	// OverridesAnnotation on a generated work names the override/rule pairs that changed it.
	OverridesAnnotation = "work.flotilla.dev/overrides"
	// maxOverridesAnnotation bounds OverridesAnnotation's value.
	maxOverridesAnnotation = 2 << 10

	// ConditionOverridesApplied says whether the overrides naming a replica set rendered for
	// every selected cluster; set only while some override names it.
	ConditionOverridesApplied = "OverridesApplied"
	// ReasonRendered: every selected cluster rendered.
	ReasonRendered = "Rendered"
	// ReasonRenderFailed: some cluster's render failed (or an override is invalid).
	ReasonRenderFailed = "RenderFailed"
	// ReasonTooManyOverrides: more than MaxOverrides overrides name the replica set.
	ReasonTooManyOverrides = "TooManyOverrides"
	// ReasonWaitingForPlugin: a transform rule's plugin is not serving yet.
	ReasonWaitingForPlugin = "WaitingForPlugin"
	// EventOverrideRenderFailed is the Warning Event of a new render failure message.
	EventOverrideRenderFailed = "OverrideRenderFailed"

	// MaxOverrides is how many overrides may name one replica set.
	MaxOverrides = 16
)

// overrideSnapshot is one override as a revision records it.
type overrideSnapshot struct {
	Name  string                                              `json:"name"`
	Order int32                                               `json:"order"`
	Spec  flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec `json:"spec"`
}

// revisionData is a revision's data when overrides name the replica set (a top-level
// "template" key tells it from the bare template recorded without overrides).
type revisionData struct {
	Template  workv1.ManifestWorkSpec `json:"template"`
	Overrides []overrideSnapshot      `json:"overrides"`
}

// desired is what every selected cluster should carry, rendered once per reconcile.
type desired struct {
	// rev identifies the template and the overrides: the template hash without overrides.
	rev          string
	templateHash string
	template     *workv1.ManifestWorkSpec
	// overrides are the snapshot of the overrides naming the replica set (nil: none).
	overrides []overrideSnapshot
	programs  []*override.Program
	// fatal fails every cluster: an invalid override, too many overrides.
	fatal, fatalReason string
	// Per selected cluster: the desired hash and spec, the rules that shaped it, a failure.
	want    map[string]string
	specs   map[string]*workv1.ManifestWorkSpec
	applied map[string]string
	failed  map[string]string
	// failures in cluster order, for the condition and the overrides' status.
	failures []*override.RuleFailure
	// per override: clusters matched and changed (tally, from traces and matchedBy).
	matched, changed map[string]int32
	// Per rendered cluster: its render inputs, the rules that changed it, the overrides that matched it.
	inputs    map[string]string
	traces    map[string][]override.Applied
	matchedBy map[string][]string
	// waiting: clusters whose render called a transform plugin still loading, by plugin;
	// neither rendered nor failed this reconcile.
	waiting map[string]string
	// reasons: a failed cluster's RenderFailuresMetric reason.
	reasons map[string]string

	// From the override specs: the transform plugins (sorted), the plugin of each transform
	// rule and the expandTemplates rules ("override/rule"), and whether a rule uses celSelector.
	plugins       []string
	rulePlugins   map[string]string
	templateRules map[string]bool
	usesCEL       bool
}

// overridden reports whether some override names the replica set.
func (d *desired) overridden() bool { return len(d.overrides) > 0 || d.fatal != "" }

// overridesOf lists the overrides in rs's namespace that name rs, sorted as they apply.
func overridesOf(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet) ([]flotillav1alpha1.ManifestWorkReplicaSetOverride, error) {
	all, err := listOverrides(ctx, c, rs)
	if err != nil {
		return nil, err
	}
	return naming(all, rs), nil
}

// listOverrides lists the overrides of rs's namespace.
func listOverrides(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet) ([]flotillav1alpha1.ManifestWorkReplicaSetOverride, error) {
	list := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := c.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: listing ManifestWorkReplicaSetOverrides: %w", rs.Namespace, rs.Name, err)
	}
	return list.Items, nil
}

// naming are the overrides of all that name rs, sorted as they apply.
func naming(all []flotillav1alpha1.ManifestWorkReplicaSetOverride, rs *workv1alpha1.ManifestWorkReplicaSet) []flotillav1alpha1.ManifestWorkReplicaSetOverride {
	var out []flotillav1alpha1.ManifestWorkReplicaSetOverride
	for _, o := range all {
		if names(&o, rs.Name) && o.DeletionTimestamp.IsZero() {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Spec.Order != out[j].Spec.Order {
			return out[i].Spec.Order < out[j].Spec.Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// names reports whether override o's spec names replica set rs.
func names(o *flotillav1alpha1.ManifestWorkReplicaSetOverride, rs string) bool {
	return slices.ContainsFunc(o.Spec.ReplicaSets, func(r flotillav1alpha1.ReplicaSetReference) bool { return r.Name == rs })
}

// newDesired compiles the overrides of rs and computes the revision.
func newDesired(rs *workv1alpha1.ManifestWorkReplicaSet, ovs []flotillav1alpha1.ManifestWorkReplicaSetOverride) (*desired, error) {
	th, err := templateHash(&rs.Spec.ManifestWorkTemplate)
	if err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	d := &desired{rev: th, templateHash: th, template: &rs.Spec.ManifestWorkTemplate,
		want: map[string]string{}, specs: map[string]*workv1.ManifestWorkSpec{}, applied: map[string]string{},
		failed: map[string]string{}, matched: map[string]int32{}, changed: map[string]int32{},
		inputs: map[string]string{}, traces: map[string][]override.Applied{}, matchedBy: map[string][]string{},
		waiting: map[string]string{}, reasons: map[string]string{}, rulePlugins: map[string]string{}, templateRules: map[string]bool{}}
	if len(ovs) == 0 {
		return d, nil
	}
	if len(ovs) > MaxOverrides {
		d.fatal, d.fatalReason = fmt.Sprintf("%d ManifestWorkReplicaSetOverrides name it, at most %d", len(ovs), MaxOverrides), ReasonTooManyOverrides
		ovs = ovs[:MaxOverrides]
	}
	type specHash struct {
		Name  string `json:"name"`
		Order int32  `json:"order"`
		Spec  string `json:"spec"`
	}
	key := struct {
		Template  string     `json:"template"`
		Overrides []specHash `json:"overrides"`
	}{Template: th}
	for i := range ovs {
		o := &ovs[i]
		d.overrides = append(d.overrides, overrideSnapshot{Name: o.Name, Order: o.Spec.Order, Spec: o.Spec})
		for _, rule := range o.Spec.Rules {
			switch {
			case rule.Transform != nil:
				d.rulePlugins[o.Name+"/"+rule.Name] = rule.Transform.Plugin
			case rule.ExpandTemplates != nil:
				d.templateRules[o.Name+"/"+rule.Name] = true
			}
			if rule.Clusters != nil && len(rule.Clusters.CelSelector.CelExpressions) > 0 {
				d.usesCEL = true
			}
		}
		sh, err := hash.JSON(o.Spec)
		if err != nil {
			return nil, fmt.Errorf("ManifestWorkReplicaSetOverride %s/%s: %w", o.Namespace, o.Name, err)
		}
		key.Overrides = append(key.Overrides, specHash{Name: o.Name, Order: o.Spec.Order, Spec: sh})
		p, errs := override.Compile(o.Name, &o.Spec, field.NewPath("spec"))
		if len(errs) > 0 {
			if d.fatal == "" {
				d.fatal, d.fatalReason = fmt.Sprintf("ManifestWorkReplicaSetOverride %s is invalid: %v", o.Name, errs.ToAggregate()), ReasonRenderFailed
			}
			continue
		}
		d.programs = append(d.programs, p)
	}
	h, err := hash.JSON(key)
	if err != nil {
		return nil, err
	}
	d.rev = hash.Short(h)
	d.plugins = transformPlugins(d.overrides)
	return d, nil
}

// clusterFacts reads what a render needs to know about the clusters: their ManagedClusters and
// the cluster sets they belong to.
type clusterFacts struct {
	clusters map[string]*clusterv1.ManagedCluster
	sets     []setSelector
}

type setSelector struct {
	name string
	sel  labels.Selector
}

func readFacts(ctx context.Context, c client.Reader) (*clusterFacts, error) {
	mcs := &clusterv1.ManagedClusterList{}
	if err := c.List(ctx, mcs); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters for the overrides: %w", err)
	}
	sets := &clusterv1beta2.ManagedClusterSetList{}
	if err := c.List(ctx, sets); err != nil {
		return nil, fmt.Errorf("listing ManagedClusterSets for the overrides: %w", err)
	}
	f := &clusterFacts{clusters: make(map[string]*clusterv1.ManagedCluster, len(mcs.Items))}
	for i := range mcs.Items {
		f.clusters[mcs.Items[i].Name] = &mcs.Items[i]
	}
	for i := range sets.Items {
		sel, err := clusterset.Selector(&sets.Items[i])
		if err != nil {
			continue // an invalid set has no members (its controller says why)
		}
		f.sets = append(f.sets, setSelector{name: sets.Items[i].Name, sel: sel})
	}
	return f, nil
}

func (f *clusterFacts) setsOf(mc *clusterv1.ManagedCluster) []string {
	var out []string
	for _, s := range f.sets {
		if s.sel.Matches(labels.Set(mc.Labels)) {
			out = append(out, s.name)
		}
	}
	return out
}

// renderer is what a render needs beyond the inputs: the CEL evaluator and the transformer,
// and optionally the transform plugins' states, a render cache and metrics.
type renderer struct {
	cel         override.CELMatcher
	transformer override.Transformer
	// plugins tells which transform plugins serve (nil: the transformer's own check only).
	plugins PluginStates
	cache   *renderCache
	metrics *renderMetrics
}

// render fills d for the clusters the placements select; a cluster in several placements is
// rendered for the first that selects it. Without overrides every cluster wants the template.
// A cluster whose render inputs are in the cache is not rendered again; the others render in
// parallel. A cluster whose render called a transform plugin that is loading waits (d.waiting).
func (rn renderer) render(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, d *desired, prs []*decisions.Placement) error {
	var targets []override.Cluster
	seen := map[string]bool{}
	var facts *clusterFacts
	if d.overridden() {
		var err error
		if facts, err = readFacts(ctx, c); err != nil {
			return fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	for _, pr := range prs {
		for _, g := range pr.Groups {
			for _, cl := range g.Clusters {
				if seen[cl] {
					continue
				}
				seen[cl] = true
				if !d.overridden() {
					d.want[cl], d.specs[cl] = d.templateHash, d.template
					continue
				}
				if d.fatal != "" {
					d.fail(&override.RuleFailure{Cluster: cl, Message: d.fatal})
					d.reasons[cl] = failureRule
					continue
				}
				mc := facts.clusters[cl]
				if mc == nil {
					// Decided but gone: its work goes when the placement drops it.
					mc = &clusterv1.ManagedCluster{}
					mc.Name = cl
				}
				targets = append(targets, override.Cluster{Cluster: mc, ClusterSets: facts.setsOf(mc),
					Placement: pr.Name, GroupName: g.Name, GroupIndex: g.Index})
			}
		}
	}
	if len(targets) == 0 {
		d.tally()
		rn.countFailures(d)
		return nil
	}
	start := time.Now()
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	states := readPluginStates(ctx, rn.plugins, d.plugins)
	var todo []override.Cluster
	for _, t := range targets {
		in, err := d.inputsOf(key, t, states)
		if err != nil {
			return fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		d.inputs[t.Cluster.Name] = in
		if hit := rn.cache.get(in); hit != nil {
			d.use(t.Cluster.Name, hit)
			if rn.metrics != nil {
				rn.metrics.hits.Inc()
			}
			continue
		}
		todo = append(todo, t)
	}
	if rn.metrics != nil {
		rn.metrics.misses.Add(float64(len(todo)))
	}
	var tr override.Transformer
	gate := &pluginGate{next: rn.transformer, states: states, waiting: map[string]string{}}
	if rn.transformer != nil {
		tr = gate
	}
	outs := override.RenderAll(ctx, override.Input{ReplicaSet: key,
		Template: d.template, Overrides: d.programs, CEL: rn.cel, Transformer: tr}, todo)
	for _, o := range outs {
		if p, ok := gate.waiting[o.Cluster]; ok {
			d.waiting[o.Cluster] = p
			delete(d.inputs, o.Cluster)
			continue
		}
		if o.Failure != nil {
			delete(d.inputs, o.Cluster)
			d.fail(o.Failure)
			d.reasons[o.Cluster] = failureReason(o.Failure, d.rulePlugins, d.templateRules)
			continue
		}
		cr := &cachedRender{key: d.inputs[o.Cluster], hash: o.Result.Hash, applied: tracesAnnotation(o.Result.Trace),
			trace: o.Result.Trace, matched: o.Result.Matched}
		if o.Result.Spec != d.template {
			cr.spec = o.Result.Spec
		}
		d.use(o.Cluster, cr)
		rn.cache.put(cr)
	}
	d.tally()
	rn.countFailures(d)
	if rn.metrics != nil {
		rn.metrics.duration.Observe(time.Since(start).Seconds())
	}
	return nil
}

// countFailures counts d's failed renders by reason.
func (rn renderer) countFailures(d *desired) {
	if rn.metrics == nil {
		return
	}
	for _, f := range d.failures {
		if r := d.reasons[f.Cluster]; r != "" {
			rn.metrics.failures.WithLabelValues(r).Inc()
		}
	}
}

// use makes r cluster c's render.
func (d *desired) use(c string, r *cachedRender) {
	d.want[c], d.specs[c] = r.hash, r.spec
	if r.spec == nil {
		d.specs[c] = d.template
	}
	d.applied[c], d.traces[c], d.matchedBy[c] = r.applied, r.trace, r.matched
}

// drop forgets cluster c's render (it is to fail instead).
func (d *desired) drop(c string) {
	delete(d.want, c)
	delete(d.specs, c)
	delete(d.applied, c)
	delete(d.traces, c)
	delete(d.matchedBy, c)
}

// tally counts, per override, the rendered clusters it matched and changed, and sorts the
// failures by cluster name (the status lists the first ones).
func (d *desired) tally() {
	sort.SliceStable(d.failures, func(i, j int) bool { return d.failures[i].Cluster < d.failures[j].Cluster })
	d.matched, d.changed = map[string]int32{}, map[string]int32{}
	for c := range d.want {
		for _, m := range d.matchedBy[c] {
			d.matched[m]++
		}
		changed := map[string]bool{}
		for _, t := range d.traces[c] {
			changed[t.Override] = true
		}
		for name := range changed {
			d.changed[name]++
		}
	}
}

func (d *desired) fail(f *override.RuleFailure) {
	d.failed[f.Cluster] = f.Error()
	d.failures = append(d.failures, f)
}

// tracesAnnotation is OverridesAnnotation's value: "override/rule,…", capped.
func tracesAnnotation(trace []override.Applied) string {
	var b strings.Builder
	for i, t := range trace {
		s := t.Override + "/" + t.Rule
		if b.Len()+len(s)+1 > maxOverridesAnnotation-16 {
			fmt.Fprintf(&b, ",…(+%d)", len(trace)-i)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	return b.String()
}

// revisionBytes is the data of d's revision: the bare template without overrides (as before
// overrides existed), else revisionData.
func (d *desired) revisionBytes() ([]byte, error) {
	if !d.overridden() {
		return json.Marshal(d.template)
	}
	return json.Marshal(revisionData{Template: *d.template, Overrides: d.overrides})
}

// readRevision decodes a revision's data, in either form.
func readRevision(raw []byte) (*workv1.ManifestWorkSpec, []overrideSnapshot, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, nil, err
	}
	if _, ok := probe["template"]; ok {
		var rd revisionData
		if err := json.Unmarshal(raw, &rd); err != nil {
			return nil, nil, err
		}
		return &rd.Template, rd.Overrides, nil
	}
	tmpl := &workv1.ManifestWorkSpec{}
	if err := json.Unmarshal(raw, tmpl); err != nil {
		return nil, nil, err
	}
	return tmpl, nil, nil
}

// condition is the OverridesApplied condition (nil when no override names the replica set).
func (d *desired) condition(generation int64, selected int) *conditionSpec {
	if !d.overridden() {
		return nil
	}
	switch {
	case d.fatalReason == ReasonTooManyOverrides:
		return &conditionSpec{status: false, reason: ReasonTooManyOverrides, message: d.fatal}
	case len(d.failures) > 0:
		var msgs []string
		for i, f := range d.failures {
			if i == 5 {
				msgs = append(msgs, fmt.Sprintf("and %d more", len(d.failures)-5))
				break
			}
			msgs = append(msgs, f.Error())
		}
		return &conditionSpec{status: false, reason: ReasonRenderFailed,
			message: fmt.Sprintf("%d of %d clusters failed to render: %s", len(d.failures), selected, strings.Join(msgs, "; "))}
	}
	if len(d.waiting) > 0 {
		byPlugin := map[string]int{}
		for _, p := range d.waiting {
			byPlugin[p]++
		}
		var ps []string
		for p, n := range byPlugin {
			ps = append(ps, fmt.Sprintf("WasmPlugin %s (%d clusters)", p, n))
		}
		sort.Strings(ps)
		return &conditionSpec{status: false, reason: ReasonWaitingForPlugin,
			message: fmt.Sprintf("waiting for %s to serve its current spec; those clusters keep their works", strings.Join(ps, ", "))}
	}
	shaped := 0
	for _, a := range d.applied {
		if a != "" {
			shaped++
		}
	}
	var ns []string
	for _, o := range d.overrides {
		ns = append(ns, o.Name)
	}
	return &conditionSpec{status: true, reason: ReasonRendered,
		message: fmt.Sprintf("overrides %s shape %d of %d clusters", strings.Join(ns, ", "), shaped, selected)}
}

type conditionSpec struct {
	status          bool
	reason, message string
}

// annotations are the extra annotations of cluster c's work: none without overrides.
func (d *desired) annotations(c string) map[string]string {
	if !d.overridden() {
		return nil
	}
	out := map[string]string{RevisionAnnotation: d.rev}
	if a := d.applied[c]; a != "" {
		out[OverridesAnnotation] = a
	}
	if in := d.inputs[c]; in != "" {
		out[RenderInputsAnnotation] = in
	}
	return out
}

// prevRenderer renders a rollback target for one cluster at a time: the target's template
// and override snapshot, with the cluster's current facts.
type prevRenderer struct {
	r     *Reconciler
	rs    *workv1alpha1.ManifestWorkReplicaSet
	prev  *revision
	progs []*override.Program
	facts *clusterFacts
	bad   string // a snapshot override that does not compile
}

// render returns the target's spec, hash and extra annotations for cluster c, or why it
// cannot be rendered (the cluster then keeps its work).
func (p *prevRenderer) render(ctx context.Context, placement string, g rollout.Group, c string) (*workv1.ManifestWorkSpec, string, map[string]string, string, error) {
	if len(p.prev.overrides) == 0 {
		return p.prev.template, p.prev.hash, nil, "", nil
	}
	if p.facts == nil {
		f, err := readFacts(ctx, p.r.Client)
		if err != nil {
			return nil, "", nil, "", fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", p.rs.Namespace, p.rs.Name, err)
		}
		p.facts = f
		for i := range p.prev.overrides {
			o := &p.prev.overrides[i]
			prog, errs := override.Compile(o.Name, &o.Spec, field.NewPath("spec"))
			if len(errs) > 0 {
				p.bad = fmt.Sprintf("override %s: %v", o.Name, errs.ToAggregate())
				break
			}
			p.progs = append(p.progs, prog)
		}
	}
	if p.bad != "" {
		return nil, "", nil, p.bad, nil
	}
	mc := p.facts.clusters[c]
	if mc == nil {
		return nil, "", nil, "its ManagedCluster is gone", nil
	}
	res, f := override.Render(ctx, override.Input{ReplicaSet: types.NamespacedName{Namespace: p.rs.Namespace, Name: p.rs.Name},
		Template: p.prev.template, Overrides: p.progs, CEL: p.r.CEL, Transformer: p.r.Transformer,
		Cluster: override.Cluster{Cluster: mc, ClusterSets: p.facts.setsOf(mc), Placement: placement, GroupName: g.Name, GroupIndex: g.Index}})
	if f != nil {
		return nil, "", nil, f.Error(), nil
	}
	ann := map[string]string{RevisionAnnotation: p.prev.hash}
	if a := tracesAnnotation(res.Trace); a != "" {
		ann[OverridesAnnotation] = a
	}
	return res.Spec, res.Hash, ann, "", nil
}

// overrideTargets are the replica sets an override names now or named when its status was
// written (so that one it stops naming renders without it).
func overrideTargets(o *flotillav1alpha1.ManifestWorkReplicaSetOverride) []reconcile.Request {
	seen := map[string]bool{}
	var out []reconcile.Request
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: name}})
		}
	}
	for _, r := range o.Spec.ReplicaSets {
		add(r.Name)
	}
	for _, r := range o.Status.ReplicaSets {
		add(r.Name)
	}
	return out
}

// renderFactsChanged: a cluster changed what a render may read of it.
func renderFactsChanged(old, cur *clusterv1.ManagedCluster) bool {
	return !equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Status.ClusterClaims, cur.Status.ClusterClaims) ||
		!equality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) ||
		old.Status.Version != cur.Status.Version
}

// byCluster maps a cluster's change to the replica sets that own a work in its namespace
// and are named by some override (the others render the template whatever the cluster): one
// indexed lookup (overriddenIndex) per generated work of the cluster, so a relabel of
// thousands of clusters costs no list of every override.
func (r *Reconciler) byCluster(ctx context.Context, o client.Object) []reconcile.Request {
	list := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetName()), client.HasLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey}); err != nil {
		log.FromContext(ctx).Error(err, "listing the ManifestWorks of a cluster; its change reaches no ManifestWorkReplicaSet", "cluster", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		key, ok := ownerKey(list.Items[i].Labels[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey])
		if !ok {
			continue
		}
		ovs := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
		if err := r.Client.List(ctx, ovs, client.InNamespace(key.Namespace), client.MatchingFields{overriddenIndex: key.Name}); err != nil {
			log.FromContext(ctx).Error(err, "listing the ManifestWorkReplicaSetOverrides of a replica set; a cluster's change does not reach it", "replicaSet", key.String())
			continue
		}
		if len(ovs.Items) > 0 {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// overriddenIndex indexes overrides by the replica sets they name now or named when their
// status was written (overrideTargets).
const overriddenIndex = "flotilla.dev/mwrso-replicaset"

func replicaSetsOfOverride(o client.Object) []string {
	var out []string
	for _, req := range overrideTargets(o.(*flotillav1alpha1.ManifestWorkReplicaSetOverride)) {
		out = append(out, req.Name)
	}
	return out
}

// overridden maps a cluster set's change to every replica set some override names (its
// members may have moved; a set changes rarely).
func (r *Reconciler) overridden(ctx context.Context, _ client.Object) []reconcile.Request {
	ovs := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := r.Client.List(ctx, ovs); err != nil {
		log.FromContext(ctx).Error(err, "listing ManifestWorkReplicaSetOverrides; a cluster set's change reaches none of their replica sets")
		return nil
	}
	var out []reconcile.Request
	for i := range ovs.Items {
		out = append(out, overrideTargets(&ovs.Items[i])...)
	}
	return out
}

const (
	// overrideFieldManager writes the overrides' status.replicaSets.
	overrideFieldManager = FieldManager + "-overrides"
	// maxStatusFailures bounds the failures an override's status lists per replica set.
	maxStatusFailures = 10
)

// overrideStatus is what override o did to rs's clusters (d nil: rs is going away).
func overrideStatus(o *flotillav1alpha1.ManifestWorkReplicaSetOverride, rs *workv1alpha1.ManifestWorkReplicaSet, d *desired) *flotillav1alpha1.ReplicaSetOverrideStatus {
	if d == nil || !names(o, rs.Name) || !o.DeletionTimestamp.IsZero() {
		return nil
	}
	st := &flotillav1alpha1.ReplicaSetOverrideStatus{Name: rs.Name, ObservedGeneration: o.Generation, Revision: d.rev,
		ClustersMatched: d.matched[o.Name], ClustersChanged: d.changed[o.Name]}
	for _, f := range d.failures {
		// A failure naming no override (one invalid override, too many) fails them all.
		if f.Override != o.Name && f.Override != "" {
			continue
		}
		st.ClustersFailed++
		if len(st.Failures) < maxStatusFailures {
			st.Failures = append(st.Failures, flotillav1alpha1.RuleFailure{Rule: f.Rule, Cluster: f.Cluster, Manifest: f.Manifest, Message: f.Message})
		}
	}
	return st
}

// writeOverrideStatus brings rs's entry in every override's status.replicaSets in line: set
// for those naming it, dropped from the others. The whole list is applied (one field manager
// writes every replica set's entry), guarded by the cached resourceVersion, only when it changed.
func (r *Reconciler) writeOverrideStatus(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, all []flotillav1alpha1.ManifestWorkReplicaSetOverride, d *desired) error {
	for i := range all {
		o := &all[i]
		entry := overrideStatus(o, rs, d)
		var next []flotillav1alpha1.ReplicaSetOverrideStatus
		found := false
		for _, e := range o.Status.ReplicaSets {
			if e.Name == rs.Name {
				found = true
				continue
			}
			next = append(next, e)
		}
		if entry == nil && !found {
			continue
		}
		if entry != nil {
			next = append(next, *entry)
		}
		sort.Slice(next, func(i, j int) bool { return next[i].Name < next[j].Name })
		if equality.Semantic.DeepEqual(next, o.Status.ReplicaSets) || len(next) == 0 && len(o.Status.ReplicaSets) == 0 {
			continue
		}
		list := make([]any, 0, len(next))
		for _, e := range next {
			list = append(list, e)
		}
		if err := apply.Guarded(ctx, r.Client, o, overrideFieldManager, true, map[string]any{"status": map[string]any{"replicaSets": list}}); err != nil {
			return fmt.Errorf("ManifestWorkReplicaSetOverride %s/%s: status of replica set %s: %w", o.Namespace, o.Name, rs.Name, err)
		}
	}
	return nil
}
