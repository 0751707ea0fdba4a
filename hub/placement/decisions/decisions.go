// Package decisions reads a Placement's decisions as the rollout engine's decision groups:
// the one way the hub's consumers of placements (ManifestWorkReplicaSets, add-on install
// strategies) see which clusters a placement selected and in which group.
package decisions

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/rollout"
)

// Placement is what a placement reference resolved to.
type Placement struct {
	Namespace, Name string
	// Found is false when the Placement does not exist (then Groups is empty).
	Found bool
	// Groups are the decision groups by index, each with its clusters.
	Groups []rollout.Group
	// NGroups is the number of decision groups the Placement reports (its
	// status.decisionGroups), or len(Groups) when it reports none.
	NGroups int
}

// Clusters returns every cluster the placement selected.
func (p *Placement) Clusters() []string {
	var out []string
	for _, g := range p.Groups {
		out = append(out, g.Clusters...)
	}
	return out
}

// Read reads Placement namespace/name and its PlacementDecisions.
func Read(ctx context.Context, c client.Reader, namespace, name string) (*Placement, error) {
	out := &Placement{Namespace: namespace, Name: name}
	p := &clusterv1beta1.Placement{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return out, nil
		}
		return nil, fmt.Errorf("reading Placement %s/%s: %w", namespace, name, err)
	}
	out.Found = true
	list := &clusterv1beta1.PlacementDecisionList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, fmt.Errorf("listing the decisions of Placement %s/%s: %w", namespace, name, err)
	}
	byIndex := map[int32]*rollout.Group{}
	for i := range list.Items {
		d := &list.Items[i]
		idx, err := strconv.ParseInt(d.Labels[clusterv1beta1.DecisionGroupIndexLabel], 10, 32)
		if err != nil {
			idx = 0 // a decision without a group index (written by hand) is in group 0
		}
		g := byIndex[int32(idx)]
		if g == nil {
			g = &rollout.Group{Index: int32(idx), Name: d.Labels[clusterv1beta1.DecisionGroupNameLabel]}
			byIndex[int32(idx)] = g
		}
		for _, cd := range d.Status.Decisions {
			g.Clusters = append(g.Clusters, cd.ClusterName)
		}
	}
	for _, g := range byIndex {
		out.Groups = append(out.Groups, *g)
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Index < out.Groups[j].Index })
	// While the placement controller moves a cluster between pages it is briefly on two
	// (hub/placement planPageWrites): count it once, in its first group.
	seen := map[string]bool{}
	for i := range out.Groups {
		g := &out.Groups[i]
		kept := g.Clusters[:0]
		for _, c := range g.Clusters {
			if !seen[c] {
				seen[c] = true
				kept = append(kept, c)
			}
		}
		g.Clusters = kept
	}
	out.NGroups = len(p.Status.DecisionGroups)
	if out.NGroups == 0 {
		out.NGroups = len(out.Groups)
	}
	return out, nil
}
