package mwrs

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

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
// template (those that failed included) get the previous template back, and the new template
// is not rolled out again until the spec changes (a new generation, e.g. the fixed template,
// rolls out from the start). The controller keeps the templates it rolled out as
// apps/v1 ControllerRevisions owned by the replica set (the last keepRevisions), and records a
// rollback in the condition RolledBack (reason MaxFailuresBreached, observedGeneration the
// generation rolled back) and an Event. An annotation, not a field, so OCM's clients, which do
// not know it, keep it when they update the replica set.
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
	keepRevisions     = 3
)

func rollbackEnabled(rs *workv1alpha1.ManifestWorkReplicaSet) bool {
	return rs.Annotations[RollbackAnnotation] == "true"
}

// RolledBack reports whether rs's current generation was rolled back (and is not rolled out
// again until its spec changes).
func RolledBack(rs *workv1alpha1.ManifestWorkReplicaSet) bool { return rolledBack(rs) }

// rolledBack: the current generation was rolled back; it is not rolled out again.
func rolledBack(rs *workv1alpha1.ManifestWorkReplicaSet) bool {
	c := meta.FindStatusCondition(rs.Status.Conditions, ConditionRolledBack)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rs.Generation
}

// revision is a template the controller rolled out.
type revision struct {
	hash     string
	template *workv1.ManifestWorkSpec
}

// recordRevision keeps the template with hash as a ControllerRevision and returns the one
// rolled out before it (nil if none), pruning revisions beyond keepRevisions.
func (r *Reconciler) recordRevision(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, hash string) (*revision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(rs.Namespace),
		client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs)}); err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: listing its template revisions: %w", rs.Namespace, rs.Name, err)
	}
	revs := list.Items
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	current := -1
	var latest int64
	for i := range revs {
		latest = max(latest, revs[i].Revision)
		if revs[i].Labels[revisionHashLabel] == hash {
			current = i
		}
	}
	switch {
	case current >= 0 && revs[current].Revision < latest:
		// A template rolled out again (A, B, then A): it becomes the latest revision.
		cr := &revs[current]
		cr.Revision = latest + 1
		if err := r.Client.Update(ctx, cr); err != nil {
			return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: renumbering template revision %s: %w", rs.Namespace, rs.Name, cr.Name, err)
		}
		sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	case current < 0:
		data, err := json.Marshal(rs.Spec.ManifestWorkTemplate)
		if err != nil {
			return nil, err
		}
		cr := appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Name + "-" + hash,
				Labels:          map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs), revisionHashLabel: hash},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, workv1alpha1.GroupVersion.WithKind("ManifestWorkReplicaSet"))}},
			Data:     runtime.RawExtension{Raw: data},
			Revision: latest + 1,
		}
		if err := r.Client.Create(ctx, &cr); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: recording template revision %s: %w", rs.Namespace, rs.Name, hash, err)
		}
		revs = append(revs, cr)
	}
	for len(revs) > keepRevisions {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, &revs[0])); err != nil {
			return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: pruning template revision %s: %w", rs.Namespace, rs.Name, revs[0].Name, err)
		}
		revs = revs[1:]
	}
	// The previous revision: the latest other than the current template's.
	for i := len(revs) - 1; i >= 0; i-- {
		if h := revs[i].Labels[revisionHashLabel]; h != hash {
			t := &workv1.ManifestWorkSpec{}
			if err := json.Unmarshal(revs[i].Data.Raw, t); err != nil {
				return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: template revision %s: %w", rs.Namespace, rs.Name, revs[i].Name, err)
			}
			return &revision{hash: h, template: t}, nil
		}
	}
	return nil, nil
}
