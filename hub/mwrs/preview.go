package mwrs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
)

// PreviewOptions are what a render outside the controller needs besides the hub's objects.
type PreviewOptions struct {
	// CEL evaluates celSelectors; Transformer runs transform rules (nil: such rules fail, as
	// in the controller).
	CEL         override.CELMatcher
	Transformer override.Transformer
	// Plugins are the transform plugins' states, as the controller's Plugins: their digests
	// are part of the work's render-inputs annotation (nil: none are named there).
	Plugins PluginStates
	// Overrides add to, or replace by name, the overrides of the replica set's namespace read
	// from the hub (a preview of `kubectl apply`); their namespace must be the replica set's.
	Overrides []flotillav1alpha1.ManifestWorkReplicaSetOverride
}

// Preview is one cluster's work as the controller renders and writes it.
type Preview struct {
	Cluster   string
	Placement string
	Group     rollout.GroupRef
	// Revision is the template-and-overrides revision, TemplateHash the cluster's desired
	// hash (the work's template-hash annotation).
	Revision, TemplateHash string
	// Overridden: some override names the replica set.
	Overridden bool
	// Work is the ManifestWork the controller writes for the cluster (labels, annotations but
	// the write time, spec); nil when the render failed.
	Work *workv1.ManifestWork
	// Trace is the rules that changed the cluster's work, in the order they applied.
	Trace []override.Applied
	// Failure is the rule that failed the cluster's render (the controller then leaves its
	// work as it is and counts the cluster Failed).
	Failure *override.RuleFailure
}

// NotSelectedError is a preview of a cluster that no placement of the replica set selects.
type NotSelectedError struct {
	Cluster    string
	ReplicaSet types.NamespacedName
	Placements []string
}

func (e *NotSelectedError) Error() string {
	return fmt.Sprintf("cluster %s is not selected by the placements of ManifestWorkReplicaSet %s (%s)",
		e.Cluster, e.ReplicaSet, strings.Join(e.Placements, ", "))
}

// PreviewCluster renders rs's work for cluster with the controller's code (newDesired,
// renderer.render) and writes nothing. The cluster is rendered for the first placement that
// selects it, as the controller does.
func PreviewCluster(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, cluster string, o PreviewOptions) (*Preview, error) {
	all, err := listOverrides(ctx, c, rs)
	if err != nil {
		return nil, err
	}
	for _, f := range o.Overrides {
		if f.Namespace != rs.Namespace {
			return nil, fmt.Errorf("ManifestWorkReplicaSetOverride %s/%s: not in the namespace of ManifestWorkReplicaSet %s/%s", f.Namespace, f.Name, rs.Namespace, rs.Name)
		}
		if i := slices.IndexFunc(all, func(x flotillav1alpha1.ManifestWorkReplicaSetOverride) bool { return x.Name == f.Name }); i >= 0 {
			all[i] = f
		} else {
			all = append(all, f)
		}
	}
	d, err := newDesired(rs, naming(all, rs))
	if err != nil {
		return nil, err
	}
	// Only cluster's decisions: the render then does its work alone, for the first
	// placement that selects it.
	var prs []*decisions.Placement
	var refs []string
	p := &Preview{Cluster: cluster, Revision: d.rev, Overridden: d.overridden()}
	for _, ref := range rs.Spec.PlacementRefs {
		refs = append(refs, ref.Name)
		pr, err := readPlacement(ctx, c, rs, ref)
		if err != nil {
			return nil, err
		}
		one := &decisions.Placement{Namespace: pr.Namespace, Name: pr.Name, Found: pr.Found, NGroups: pr.NGroups}
		for _, g := range pr.Groups {
			if slices.Contains(g.Clusters, cluster) {
				one.Groups = append(one.Groups, rollout.Group{Index: g.Index, Name: g.Name, Clusters: []string{cluster}})
				if p.Placement == "" {
					p.Placement, p.Group = pr.Name, rollout.GroupRef{Index: g.Index, Name: g.Name}
				}
				break
			}
		}
		prs = append(prs, one)
	}
	if p.Placement == "" {
		return nil, &NotSelectedError{Cluster: cluster, ReplicaSet: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, Placements: refs}
	}
	if err := (renderer{cel: o.CEL, transformer: o.Transformer, plugins: o.Plugins}).render(ctx, c, rs, d, prs); err != nil {
		return nil, err
	}
	if _, ok := d.failed[cluster]; ok {
		for _, f := range d.failures {
			if f.Cluster == cluster {
				p.Failure = f
			}
		}
		return p, nil
	}
	p.TemplateHash = d.want[cluster]
	if p.Overridden {
		// The trace the render keeps only as an annotation, from the same inputs: its hash
		// must be the render's, or the render is not deterministic.
		facts, err := readFacts(ctx, c)
		if err != nil {
			return nil, err
		}
		mc := facts.clusters[cluster]
		if mc == nil {
			return nil, fmt.Errorf("cluster %s: no ManagedCluster", cluster)
		}
		res, f := override.Render(ctx, override.Input{ReplicaSet: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name},
			Template: d.template, Overrides: d.programs, CEL: o.CEL, Transformer: o.Transformer,
			Cluster: override.Cluster{Cluster: mc, ClusterSets: facts.setsOf(mc), Placement: p.Placement, GroupName: p.Group.Name, GroupIndex: p.Group.Index}})
		switch {
		case f != nil:
			return nil, fmt.Errorf("render is not deterministic: cluster %s rendered, then failed: %w", cluster, f)
		case res.Hash != p.TemplateHash:
			return nil, fmt.Errorf("render is not deterministic: cluster %s rendered %s, then %s", cluster, p.TemplateHash, res.Hash)
		}
		p.Trace = res.Trace
	}
	ann := map[string]string{TemplateHashAnnotation: p.TemplateHash}
	for k, v := range d.annotations(cluster) {
		ann[k] = v
	}
	p.Work = &workv1.ManifestWork{
		TypeMeta: metav1.TypeMeta{APIVersion: workv1.GroupVersion.String(), Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: rs.Name, Annotations: ann, Labels: map[string]string{
			workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs),
			workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey:  p.Placement,
		}},
		Spec: *d.specs[cluster].DeepCopy(),
	}
	return p, nil
}
