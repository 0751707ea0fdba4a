package mwrs

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// Rollback, beyond OCM. With the annotation RollbackAnnotation: "true" on a replica set, a
// rollout that maxFailures stops does not just stop: the clusters that already carry the new
// template (those that failed included) get back the last template that completed (rolled
// out successfully everywhere its placements meant it to go), and the new template is not
// rolled out again until the spec changes (a new generation, e.g. the fixed template, rolls
// out from the start). Not simply the template before: after A completed and B was rolled
// back to A, a failing C goes back to A, not to the never-completed B. The controller keeps
// the templates it rolled out as apps/v1 ControllerRevisions owned by the replica set (the
// last keepRevisions, and always the rollback target), marks the ones that completed with
// completedLabel, and records a rollback in the condition RolledBack (reason
// MaxFailuresBreached, observedGeneration the generation rolled back) and an Event. An
// annotation, not a field, so OCM's clients, which do not know it, keep it when they update
// the replica set. With no completed template (the first one fails) there is nothing to go
// back to: the rollout stops.
const (
	// RollbackAnnotation, "true" on a ManifestWorkReplicaSet, turns rollback on.
	RollbackAnnotation = "work.flotilla.dev/rollback-on-failure"
	// ConditionRolledBack is True while the current generation is rolled back.
	ConditionRolledBack = "RolledBack"
	// ReasonMaxFailuresBreached: the rollout stopped and was rolled back.
	ReasonMaxFailuresBreached = "MaxFailuresBreached"
	// ReasonNotRolledBack: the current generation was not rolled back.
	ReasonNotRolledBack = "NotRolledBack"
	// EventRolledBack is the Event of a rollback.
	EventRolledBack = "RolledBack"

	// revisionHashLabel on a ControllerRevision is the template hash it holds.
	revisionHashLabel = "work.flotilla.dev/template-hash"
	// completedLabel, "true" on a ControllerRevision, says its template completed its rollout
	// the last time it was rolled out: a rollback target. Rolling it out again clears it.
	completedLabel = "work.flotilla.dev/rollout-completed"
	keepRevisions  = 3
	// revisionFieldManager owns completedLabel.
	revisionFieldManager = FieldManager + "-revision"
	// maxRevisionBytes bounds a recorded revision's data (template and override snapshot); a
	// larger one is not recorded, so no rollback can return to it.
	maxRevisionBytes = 1 << 20
)

func rollbackEnabled(rs *workv1alpha1.ManifestWorkReplicaSet) bool {
	return rs.Annotations[RollbackAnnotation] == "true"
}

// RolledBack reports whether rs's current generation was rolled back (and is not rolled out
// again until its spec changes).
func RolledBack(rs *workv1alpha1.ManifestWorkReplicaSet) bool { return rolledBack(rs, "") }

// rolledBack: the current generation's revision rev was rolled back; it is not rolled out
// again. An override's change is a new revision of the same generation: the condition's
// message names the revision it rolled back ("template <rev> rolled back to ..."); rev ""
// asks about the generation only.
func rolledBack(rs *workv1alpha1.ManifestWorkReplicaSet, rev string) bool {
	c := meta.FindStatusCondition(rs.Status.Conditions, ConditionRolledBack)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rs.Generation &&
		(rev == "" || strings.Contains(c.Message, "template "+rev+" rolled back"))
}

// holds: the template with hash is not rolled out again, because the current generation was
// rolled back (the status says so) or some work was rolled back from it (the status may not
// say so yet in the cache).
func holds(rs *workv1alpha1.ManifestWorkReplicaSet, works map[string]*workv1.ManifestWork, hash string) bool {
	return rolledBack(rs, hash) || rolledBackFrom(works, hash)
}

// rolledBackFrom: some work was rolled back from the template with hash, so that template
// is held.
func rolledBackFrom(works map[string]*workv1.ManifestWork, hash string) bool {
	for _, w := range works {
		if w.Annotations[RolledBackFromAnnotation] == hash {
			return true
		}
	}
	return false
}

// revision is a template (and the overrides naming the replica set then) the controller
// rolled out; hash is the revision's (the template hash without overrides).
type revision struct {
	hash      string
	template  *workv1.ManifestWorkSpec
	overrides []overrideSnapshot
}

// recordRevision keeps the template with hash as a ControllerRevision and returns it
// (current; nil when its data is over maxRevisionBytes and so not recorded) and the rollback
// target: the latest revision of another template that completed (nil if none). It prunes
// the oldest revisions beyond keepRevisions, never the target.
func (r *Reconciler) recordRevision(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, d *desired) (current *appsv1.ControllerRevision, target *revision, err error) {
	hash := d.rev
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(rs.Namespace),
		client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs)}); err != nil {
		return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: listing its template revisions: %w", rs.Namespace, rs.Name, err)
	}
	revs := list.Items
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	cur := -1
	var latest int64
	for i := range revs {
		latest = max(latest, revs[i].Revision)
		if revs[i].Labels[revisionHashLabel] == hash {
			cur = i
		}
	}
	switch {
	case cur >= 0 && revs[cur].Revision < latest:
		// A template rolled out again (A, B, then A): it becomes the latest revision, and
		// counts as completed only once this rollout completes.
		cr := revs[cur].DeepCopy()
		cr.Revision = latest + 1
		delete(cr.Labels, completedLabel)
		if err := r.Client.Update(ctx, cr); err != nil {
			return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: renumbering template revision %s: %w", rs.Namespace, rs.Name, cr.Name, err)
		}
		revs = append(append(revs[:cur:cur], revs[cur+1:]...), *cr)
		cur = len(revs) - 1
	case cur < 0:
		data, err := d.revisionBytes()
		if err != nil {
			return nil, nil, err
		}
		if len(data) > maxRevisionBytes {
			break
		}
		cr := appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Name + "-" + hash,
				Labels:          map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs), revisionHashLabel: hash},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, workv1alpha1.GroupVersion.WithKind("ManifestWorkReplicaSet"))}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: latest + 1,
		}
		if err := r.Client.Create(ctx, &cr); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: recording template revision %s: %w", rs.Namespace, rs.Name, hash, err)
			}
			// Created by a reconcile the cache has not caught up with: read it.
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(&cr), &cr); err != nil {
				return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: reading template revision %s: %w", rs.Namespace, rs.Name, hash, err)
			}
		}
		revs = append(revs, cr)
		cur = len(revs) - 1
	}
	if cur >= 0 {
		current = &revs[cur]
	}
	// The rollback target: the latest completed revision of another template. Revisions are
	// numbered in the order their templates were (last) rolled out, and a revision counts as
	// completed only for its last rollout, so this is the template that completed last.
	t := -1
	for i := len(revs) - 1; i >= 0; i-- {
		if i != cur && revs[i].Labels[completedLabel] == "true" {
			t = i
			break
		}
	}
	if t >= 0 {
		tmpl, ovs, err := readRevision(revs[t].Data.Raw)
		if err != nil {
			return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: template revision %s: %w", rs.Namespace, rs.Name, revs[t].Name, err)
		}
		target = &revision{hash: revs[t].Labels[revisionHashLabel], template: tmpl, overrides: ovs}
	}
	for i, n := 0, len(revs); n > keepRevisions && i < len(revs); i++ {
		if i == t || i == cur {
			continue
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, &revs[i])); err != nil {
			return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: pruning template revision %s: %w", rs.Namespace, rs.Name, revs[i].Name, err)
		}
		n--
	}
	return current, target, nil
}

// markCompleted labels the current template's revision as completed (see completedLabel),
// guarded by the revision's resourceVersion: a revision pruned or renumbered since it was
// read is not marked (nor created again). An update, not an apply: a server-side apply
// re-encodes the immutable data (its keys sorted), which the API server refuses as a change.
func (r *Reconciler) markCompleted(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, cr *appsv1.ControllerRevision) error {
	if cr.Labels[completedLabel] == "true" {
		return nil
	}
	cr = cr.DeepCopy()
	if cr.Labels == nil {
		cr.Labels = map[string]string{}
	}
	cr.Labels[completedLabel] = "true"
	if err := r.Client.Update(ctx, cr, client.FieldOwner(revisionFieldManager)); err != nil {
		return fmt.Errorf("ManifestWorkReplicaSet %s/%s: marking template revision %s completed: %w", rs.Namespace, rs.Name, cr.Name, err)
	}
	return nil
}
