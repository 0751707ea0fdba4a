package mwrs

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
)

// PlacementRollout is where one placement reference of a replica set stands, as the
// controller sees it: the engine's verdict and every decided cluster's state.
type PlacementRollout struct {
	Name string
	// Found is false when the Placement does not exist.
	Found bool
	// Result is the rollout engine's verdict (zero when Err is set).
	Result rollout.Result
	// Err is the strategy's error (an invalid rolloutStrategy), if any.
	Err      error
	Clusters []ClusterRollout
}

// ClusterRollout is one cluster's state in a rollout.
type ClusterRollout struct {
	Cluster string
	Group   rollout.GroupRef
	State   rollout.Status
	// Since is when the cluster entered State (zero for ToApply).
	Since time.Time
	// Why explains State from the cluster's ManifestWork (or its failed render).
	Why string
	// Desired is the hash the cluster's work should carry (its render's), empty when its
	// render failed; Overrides is the rules that shape that render (the work annotation's
	// form); ShapedBy is the overrides annotation of the work the cluster has now.
	Desired, Overrides, ShapedBy string
}

// Inspect evaluates rs's rollouts at now without writing anything: what `flotilla rollout
// status` prints. It renders the overrides as the controller does (cel evaluates their
// celSelectors, tr runs their transforms; nil: such a rule fails). c needs no index: works
// are found by their replica set label.
func Inspect(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, now time.Time, cel override.CELMatcher, tr override.Transformer) ([]PlacementRollout, error) {
	works, err := listWorks(ctx, c, rs, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs)})
	if err != nil {
		return nil, err
	}
	ovs, err := overridesOf(ctx, c, rs)
	if err != nil {
		return nil, err
	}
	d, err := newDesired(rs, ovs)
	if err != nil {
		return nil, err
	}
	prs := make([]*decisions.Placement, len(rs.Spec.PlacementRefs))
	for i, ref := range rs.Spec.PlacementRefs {
		if prs[i], err = readPlacement(ctx, c, rs, ref); err != nil {
			return nil, err
		}
	}
	if err := (renderer{cel: cel, transformer: tr}).render(ctx, c, rs, d, prs); err != nil {
		return nil, err
	}
	var out []PlacementRollout
	for i, ref := range rs.Spec.PlacementRefs {
		pr := prs[i]
		pl := PlacementRollout{Name: ref.Name, Found: pr.Found}
		// As the controller reads them, without recording: a success it has not recorded yet
		// counts from now, as it will.
		states, _ := clusterStates(pr.Groups, works, d.want, d.failed, &rs.Spec.ManifestWorkTemplate, now,
			func(w *workv1.ManifestWork) (time.Time, error) {
				if t, ok := recordedSuccess(w, d.want[w.Namespace]); ok {
					return t, nil
				}
				return now, nil
			})
		pl.Result, pl.Err = rollout.Evaluate(rollout.Input{Strategy: ref.RolloutStrategy, Groups: pr.Groups, States: states, Now: now})
		timedOut := map[string]bool{}
		for _, cl := range pl.Result.TimedOut {
			timedOut[cl] = true
		}
		for _, g := range pr.Groups {
			for _, cl := range g.Clusters {
				st := states[cl]
				if timedOut[cl] {
					st.Status = rollout.TimeOut
				}
				w := why(works[cl], st.Status, d.want[cl], &rs.Spec.ManifestWorkTemplate)
				if p, ok := d.waiting[cl]; ok {
					w = "waiting for WasmPlugin " + p + " to serve its current spec; keeps its work"
				}
				if f, ok := d.failed[cl]; ok {
					w = "render failed: " + f
					if wk := works[cl]; wk != nil {
						w += "; keeps template " + wk.Annotations[TemplateHashAnnotation]
					}
				}
				cr := ClusterRollout{Cluster: cl, Group: rollout.GroupRef{Index: g.Index, Name: g.Name},
					State: st.Status, Since: st.LastTransitionTime, Why: w, Desired: d.want[cl], Overrides: d.applied[cl]}
				if wk := works[cl]; wk != nil {
					cr.ShapedBy = wk.Annotations[OverridesAnnotation]
				}
				pl.Clusters = append(pl.Clusters, cr)
			}
		}
		sort.SliceStable(pl.Clusters, func(i, j int) bool { return pl.Clusters[i].Group.Index < pl.Clusters[j].Group.Index })
		out = append(out, pl)
	}
	return out, nil
}

// why says what about a cluster's work puts it in state s.
func why(w *workv1.ManifestWork, s rollout.Status, hash string, tmpl *workv1.ManifestWorkSpec) string {
	cond := func(t string) *metav1.Condition {
		if w == nil {
			return nil
		}
		return meta.FindStatusCondition(w.Status.Conditions, t)
	}
	switch s {
	case rollout.ToApply:
		switch {
		case w == nil:
			return "no ManifestWork yet"
		case !w.DeletionTimestamp.IsZero():
			return "its ManifestWork is being deleted"
		case specEdited(w) && w.Annotations[TemplateHashAnnotation] == hash:
			return "its ManifestWork's spec was edited; the template is put back"
		default:
			return fmt.Sprintf("ManifestWork carries template %s, not the current %s", w.Annotations[TemplateHashAnnotation], hash)
		}
	case rollout.Failed:
		if c := cond(workv1.WorkDegraded); c != nil && c.Status == metav1.ConditionTrue {
			return fmt.Sprintf("Degraded: %s: %s", c.Reason, c.Message)
		}
		return "failed"
	case rollout.TimeOut:
		return "no success within progressDeadline"
	case rollout.Progressing:
		if c := cond(workv1.WorkApplied); c != nil && c.Status == metav1.ConditionFalse {
			return fmt.Sprintf("not Applied yet: %s: %s", c.Reason, c.Message)
		}
		var waiting []string
		for _, t := range append([]string{workv1.WorkApplied}, successConditions(tmpl)...) {
			if c := cond(t); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 0 && c.ObservedGeneration != w.Generation {
				waiting = append(waiting, t)
			}
		}
		return fmt.Sprintf("waiting for %v", waiting)
	case rollout.Succeeded:
		return "Applied and Available"
	}
	return ""
}
