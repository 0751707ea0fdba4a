package work

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// Condition reasons the agent writes besides the API's well-known ones.
const (
	reasonFetchingResourceFailed = "FetchingResourceFailed"
	reasonStatusFeedbackSynced   = "StatusFeedbackSynced"
	reasonNoStatusFeedback       = "NoStatusFeedbackSynced"
	reasonStatusFeedbackFailed   = "StatusFeedbackSyncFailed"
)

// manifestConditions builds one manifest's conditions from its apply result, keeping the
// lastTransitionTime of those that did not change.
func (r *workReconciler) manifestConditions(ctx context.Context, res manifestResult, generation int64, previous []metav1.Condition) ([]metav1.Condition, workv1.StatusFeedbackResult) {
	conds := make([]metav1.Condition, 0, 3)
	for _, c := range previous {
		conds = append(conds, *c.DeepCopy())
	}
	set := func(c metav1.Condition) {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(&conds, c)
	}

	var conflict *conflictError
	var ignoreErr *ignoreFieldError
	switch {
	case errors.As(res.err, &ignoreErr):
		set(metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse,
			Reason: workv1.ManifestAppliedReasonSSAIgnoreFieldError, Message: ignoreErr.Error()})
	case res.err == nil:
		set(metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue,
			Reason: workv1.ManifestAppliedReasonComplete, Message: "Apply manifest complete"})
	case errors.As(res.err, &conflict):
		set(metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse,
			Reason: workv1.ManifestAppliedReasonApplyConflict, Message: conflict.Error()})
	default:
		set(metav1.Condition{Type: workv1.ManifestApplied, Status: metav1.ConditionFalse,
			Reason: workv1.ManifestAppliedReasonFailed, Message: "Failed to apply manifest: " + apiMessage(res.err)})
	}

	obj := res.obj
	var fetchErr error
	if obj == nil && res.decoded {
		obj, fetchErr = resourceClient(r.dyn, res.gvr, res.meta.Namespace).Get(ctx, res.meta.Name, metav1.GetOptions{})
	}
	switch {
	case !res.decoded:
		set(metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionUnknown,
			Reason: workv1.ManifestAvailableReasonStatusUnknown, Message: "Resource meta is incomplete: the manifest could not be read or mapped"})
	case fetchErr == nil:
		set(metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue,
			Reason: workv1.ManifestAvailableReasonAvailable, Message: "Resource is available"})
	case apierrors.IsNotFound(fetchErr):
		obj = nil
		set(metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionFalse,
			Reason: workv1.ManifestAvailableReasonNotAvailable, Message: "Resource is not available"})
	default:
		obj = nil
		set(metav1.Condition{Type: workv1.ManifestAvailable, Status: metav1.ConditionUnknown,
			Reason: reasonFetchingResourceFailed, Message: "Failed to fetch resource: " + apiMessage(fetchErr)})
	}

	var feedback workv1.StatusFeedbackResult
	if obj != nil {
		values, err := r.feedback.values(ctx, obj, res.meta, res.option)
		feedback.Values = values
		switch {
		case err != nil:
			set(metav1.Condition{Type: workv1.ManifestStatusFeedbackSynced, Status: metav1.ConditionFalse,
				Reason: reasonStatusFeedbackFailed, Message: "Sync status feedback failed: " + err.Error()})
		case res.option == nil || len(res.option.FeedbackRules) == 0:
			set(metav1.Condition{Type: workv1.ManifestStatusFeedbackSynced, Status: metav1.ConditionTrue, Reason: reasonNoStatusFeedback})
		case res.watchRefused:
			set(metav1.Condition{Type: workv1.ManifestStatusFeedbackSynced, Status: metav1.ConditionTrue, Reason: reasonStatusFeedbackSynced,
				Message: fmt.Sprintf("feedbackScrapeType Watch: the agent's limit of %d watched resources is reached, so this feedback is polled every %s",
					r.watches.max, r.cfg.StatusSyncInterval)})
		default:
			set(metav1.Condition{Type: workv1.ManifestStatusFeedbackSynced, Status: metav1.ConditionTrue, Reason: reasonStatusFeedbackSynced})
		}
		// Condition rules read the live object; without one their conditions stay as they were.
		setRuleConditions(ctx, &conds, obj, res.option, generation)
	}
	return conds, feedback
}

// workConditions sets the work-level Applied and Available conditions from the manifests', and
// the aggregates of the conditions their condition rules made (Complete, say).
func workConditions(conds *[]metav1.Condition, manifests []workv1.ManifestCondition, generation int64) {
	aggregateRuleConditions(conds, manifests, generation)
	set := func(c metav1.Condition) {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(conds, c)
	}
	if len(manifests) == 0 {
		set(metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: workv1.WorkAppliedReasonComplete, Message: "Apply manifest work complete"})
		set(metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue,
			Reason: workv1.WorkAvailableReasonAvailable, Message: "All resources are available"})
		return
	}
	applied := true
	var notAvailable, unknown int
	for _, m := range manifests {
		if !meta.IsStatusConditionTrue(m.Conditions, workv1.ManifestApplied) {
			applied = false
		}
		switch c := meta.FindStatusCondition(m.Conditions, workv1.ManifestAvailable); {
		case c == nil || c.Status == metav1.ConditionUnknown:
			unknown++
		case c.Status == metav1.ConditionFalse:
			notAvailable++
		}
	}
	if applied {
		set(metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue,
			Reason: workv1.WorkAppliedReasonComplete, Message: "Apply manifest work complete"})
	} else {
		set(metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionFalse,
			Reason: workv1.WorkAppliedReasonFailed, Message: "Failed to apply manifest work"})
	}
	switch {
	case notAvailable > 0:
		set(metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionFalse, Reason: workv1.WorkAvailableReasonNotAvailable,
			Message: fmt.Sprintf("%d of %d resources are not available", notAvailable, len(manifests))})
	case unknown > 0:
		set(metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionUnknown, Reason: workv1.WorkAvailableReasonStatusUnknown,
			Message: fmt.Sprintf("%d of %d resources have unknown status", unknown, len(manifests))})
	default:
		set(metav1.Condition{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue,
			Reason: workv1.WorkAvailableReasonAvailable, Message: "All resources are available"})
	}
}

// writeStatus computes the work's status from the apply results and writes it to the hub
// when it changed (feedback values are only written when a value changed).
func (r *workReconciler) writeStatus(ctx context.Context, work *workv1.ManifestWork, results []manifestResult) error {
	previous := map[int32]workv1.ManifestCondition{}
	for _, m := range work.Status.ResourceStatus.Manifests {
		previous[m.ResourceMeta.Ordinal] = m
	}
	status := work.Status.DeepCopy()
	status.ResourceStatus.Manifests = make([]workv1.ManifestCondition, 0, len(results))
	for _, res := range results {
		var prevConds []metav1.Condition
		if p, ok := previous[res.meta.Ordinal]; ok && sameResource(p.ResourceMeta, res.meta) {
			prevConds = p.Conditions
		}
		conds, feedback := r.manifestConditions(ctx, res, work.Generation, prevConds)
		status.ResourceStatus.Manifests = append(status.ResourceStatus.Manifests,
			workv1.ManifestCondition{ResourceMeta: res.meta, StatusFeedbacks: feedback, Conditions: conds})
	}
	workConditions(&status.Conditions, status.ResourceStatus.Manifests, work.Generation)
	if equality.Semantic.DeepEqual(*status, work.Status) {
		return nil
	}
	// The whole status, computed from the work as read and guarded by its resourceVersion:
	// the hub marks works Unknown when the cluster goes away (hub/work), and a report computed
	// before that must not overwrite it unseen. A conflict reconciles again on the new copy.
	if err := apply.Guarded(ctx, r.hub, work, fieldManager, true, map[string]any{"status": status}); err != nil {
		return fmt.Errorf("ManifestWork %s/%s: writing status: %w", work.Namespace, work.Name, err)
	}
	return nil
}

func sameResource(a, b workv1.ManifestResourceMeta) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Name == b.Name && a.Namespace == b.Namespace
}
