// Package override renders the work of one cluster from a ManifestWorkReplicaSet's template
// and the ManifestWorkReplicaSetOverrides that name it: ordered rules select clusters and
// manifests and apply one overrider each. It is pure (no client, no clock, no randomness):
// the same inputs give the same bytes and the same hash. The controller, the webhook and the
// CLI all use Compile and Render, so all three say the same thing about an override.
package override

import (
	"encoding/json"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// Caps on what an override's spec may make the renderer do.
const (
	// MaxSpecBytes bounds an override's spec as JSON.
	MaxSpecBytes = 256 << 10
	// MaxParamsBytes bounds a transform rule's params.
	MaxParamsBytes = 16 << 10
	// MaxManifestBytes bounds a manifest before and after every rule.
	MaxManifestBytes = 512 << 10
)

// Program is a compiled override: its rules in order, ready to render.
type Program struct {
	Name  string
	Order int32
	Rules []*Rule
}

// Rule is a compiled rule: which clusters and manifests it selects and its overrider.
type Rule struct {
	Name string
	// Overrider is the rule's overrider field (image, jsonPatch, …): what a trace names.
	Overrider string

	labels      labels.Selector // nil: any
	claims      labels.Selector // nil: any
	cel         []string
	clusterSets []string
	groups      []flotillav1alpha1.DecisionGroupMatch
	manifests   []flotillav1alpha1.ManifestSelector

	op overrider
}

// overrider changes one manifest (decoded with UseNumber) for one cluster.
type overrider interface {
	apply(rc *ruleContext, obj map[string]any) (map[string]any, error)
}

// Compile checks spec and compiles it; the errors name the field under fld (e.g.
// spec.rules[2].image.registry). Everything the renderer needs from the spec is checked here,
// so Render fails only on what depends on the cluster or the manifest.
func Compile(name string, spec *flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec, fld *field.Path) (*Program, field.ErrorList) {
	var errs field.ErrorList
	if raw, err := json.Marshal(spec); err != nil {
		return nil, field.ErrorList{field.InternalError(fld, err)}
	} else if len(raw) > MaxSpecBytes {
		return nil, field.ErrorList{field.TooLong(fld, len(raw), MaxSpecBytes)}
	}
	if len(spec.ReplicaSets) == 0 {
		errs = append(errs, field.Required(fld.Child("replicaSets"), "name at least one ManifestWorkReplicaSet"))
	}
	if len(spec.Rules) == 0 {
		errs = append(errs, field.Required(fld.Child("rules"), "at least one rule"))
	}
	p := &Program{Name: name, Order: spec.Order}
	seen := map[string]bool{}
	for i := range spec.Rules {
		r := &spec.Rules[i]
		rf := fld.Child("rules").Index(i)
		if seen[r.Name] {
			errs = append(errs, field.Duplicate(rf.Child("name"), r.Name))
		}
		seen[r.Name] = true
		rule, rerrs := compileRule(r, rf)
		errs = append(errs, rerrs...)
		p.Rules = append(p.Rules, rule)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

func compileRule(r *flotillav1alpha1.OverrideRule, fld *field.Path) (*Rule, field.ErrorList) {
	var errs field.ErrorList
	rule := &Rule{Name: r.Name, manifests: r.Manifests}
	if c := r.Clusters; c != nil {
		cf := fld.Child("clusters")
		if s := c.LabelSelector; len(s.MatchLabels)+len(s.MatchExpressions) > 0 {
			sel, err := metav1.LabelSelectorAsSelector(&s)
			if err != nil {
				errs = append(errs, field.Invalid(cf.Child("labelSelector"), s, err.Error()))
			}
			rule.labels = sel
		}
		if exprs := c.ClaimSelector.MatchExpressions; len(exprs) > 0 {
			sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: exprs})
			if err != nil {
				errs = append(errs, field.Invalid(cf.Child("claimSelector"), exprs, err.Error()))
			}
			rule.claims = sel
		}
		rule.cel = c.CelSelector.CelExpressions
		rule.clusterSets = c.ClusterSets
		rule.groups = c.DecisionGroups
		for j, g := range c.DecisionGroups {
			if (g.GroupName == "") == (g.GroupIndex == nil) {
				errs = append(errs, field.Invalid(cf.Child("decisionGroups").Index(j), g, "set groupName or groupIndex"))
			}
		}
	}
	var set []string
	add := func(name string, op overrider, e field.ErrorList) {
		set = append(set, name)
		rule.op, rule.Overrider = op, name
		errs = append(errs, e...)
	}
	if r.JSONPatch != nil {
		op, e := compileJSONPatch(r.JSONPatch, fld.Child("jsonPatch"))
		add("jsonPatch", op, e)
	}
	if r.MergePatch != nil {
		op, e := compileMergePatch(r.MergePatch.Raw, fld.Child("mergePatch"))
		add("mergePatch", op, e)
	}
	if r.Image != nil {
		op, e := compileImage(r.Image, fld.Child("image"))
		add("image", op, e)
	}
	if r.Command != nil {
		op, e := compileList("command", r.Command, fld.Child("command"))
		add("command", op, e)
	}
	if r.Args != nil {
		op, e := compileList("args", r.Args, fld.Child("args"))
		add("args", op, e)
	}
	if r.Labels != nil {
		op, e := compileMetadata("labels", r.Labels, fld.Child("labels"))
		add("labels", op, e)
	}
	if r.Annotations != nil {
		op, e := compileMetadata("annotations", r.Annotations, fld.Child("annotations"))
		add("annotations", op, e)
	}
	if r.Replicas != nil {
		op, e := compileReplicas(r.Replicas, fld.Child("replicas"))
		add("replicas", op, e)
	}
	if r.Env != nil {
		op, e := compileEnv(r.Env, fld.Child("env"))
		add("env", op, e)
	}
	if r.ExpandTemplates != nil {
		add("expandTemplates", expandTemplates{}, nil)
	}
	if r.Transform != nil {
		op, e := compileTransform(r.Transform, fld.Child("transform"))
		add("transform", op, e)
	}
	if len(set) != 1 {
		errs = append(errs, field.Invalid(fld, set, "a rule sets exactly one of jsonPatch, mergePatch, image, command, args, labels, annotations, replicas, env, expandTemplates, transform"))
	}
	return rule, errs
}

// Sort orders the overrides of one replica set as they apply: by order, then by name.
func Sort(ps []*Program) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Order != ps[j].Order {
			return ps[i].Order < ps[j].Order
		}
		return ps[i].Name < ps[j].Name
	})
}

// compileTemplate parses src for the field fld.
func compileTemplate(src string, fld *field.Path) (*tmpl, field.ErrorList) {
	t, err := parseTemplate(src)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fld, src, err.Error())}
	}
	return t, nil
}

// RulesSelectingNothing names the rules of p whose manifest selectors match no manifest of
// tmpl: not an error (the template may change), but worth saying in the Valid condition.
func (p *Program) RulesSelectingNothing(tmpl *workv1.ManifestWorkSpec) []string {
	var out []string
	for _, r := range p.Rules {
		found := false
		for _, m := range tmpl.Workload.Manifests {
			if obj, err := decode(m.Raw); err == nil && r.selectsManifest(identityOf(obj)) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, r.Name)
		}
	}
	return out
}
