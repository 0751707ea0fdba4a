package v1

// Condition types on ManifestWork status (work level).
const (
	// WorkProgressing: the agent is still applying the workload.
	WorkProgressing = "Progressing"
	// WorkApplied: every manifest was applied for the current generation.
	WorkApplied = "Applied"
	// WorkAvailable: every manifest exists on the managed cluster.
	WorkAvailable = "Available"
	// WorkDegraded: the live state has not matched the desired state for a while.
	WorkDegraded = "Degraded"
	// WorkDeleted: the agent removed everything the work applied. Reported by
	// transports that keep a status after the hub object is gone.
	WorkDeleted = "Deleted"
	// WorkComplete: every manifest with condition rules reached Complete; the work
	// is no longer updated (and is deleted after deleteOption.ttlSecondsAfterFinished).
	WorkComplete = "Complete"
)

// Condition types on each entry of status.resourceStatus.manifests.
const (
	// ManifestProgressing: the manifest is being applied.
	ManifestProgressing = "Progressing"
	// ManifestApplied: the manifest was applied.
	ManifestApplied = "Applied"
	// ManifestAvailable: the object exists on the managed cluster.
	ManifestAvailable = "Available"
	// ManifestDegraded: the object has not matched the manifest for a while.
	ManifestDegraded = "Degraded"
	// ManifestComplete: a condition rule found the object finished; it is no
	// longer updated.
	ManifestComplete = "Complete"
	// ManifestStatusFeedbackSynced: the feedback rules of the manifest were read.
	ManifestStatusFeedbackSynced = "StatusFeedbackSynced"
)

// Reasons the work agent writes on the conditions above.
const (
	// WorkAppliedReasonComplete: Applied=True on the work.
	WorkAppliedReasonComplete = "AppliedManifestWorkComplete"
	// WorkAppliedReasonFailed: Applied=False on the work.
	WorkAppliedReasonFailed = "AppliedManifestWorkFailed"
	// WorkAvailableReasonAvailable: Available=True on the work.
	WorkAvailableReasonAvailable = "ResourcesAvailable"
	// WorkAvailableReasonNotAvailable: Available=False on the work.
	WorkAvailableReasonNotAvailable = "ResourcesNotAvailable"
	// WorkAvailableReasonStatusUnknown: availability of some resource is unknown.
	WorkAvailableReasonStatusUnknown = "ResourcesStatusUnknown"

	// ManifestAppliedReasonComplete: Applied=True on a manifest.
	ManifestAppliedReasonComplete = "AppliedManifestComplete"
	// ManifestAppliedReasonFailed: Applied=False on a manifest.
	ManifestAppliedReasonFailed = "AppliedManifestFailed"
	// ManifestAppliedReasonApplyConflict: server-side apply hit a field owned by
	// another manager.
	ManifestAppliedReasonApplyConflict = "ApplyConflict"
	// ManifestAppliedReasonSSAIgnoreFieldError: Applied=False on a manifest because
	// its serverSideApply.ignoreFields could not be processed (a JSON pointer or jq
	// expression failed on the object).
	ManifestAppliedReasonSSAIgnoreFieldError = "AppliedManifestSSAIgnoreFieldError"
	// ManifestAvailableReasonAvailable: Available=True on a manifest.
	ManifestAvailableReasonAvailable = "ResourceAvailable"
	// ManifestAvailableReasonNotAvailable: Available=False on a manifest.
	ManifestAvailableReasonNotAvailable = "ResourceNotAvailable"
	// ManifestAvailableReasonStatusUnknown: availability could not be determined.
	ManifestAvailableReasonStatusUnknown = "ResourceStatusUnknown"
)

// Reasons on conditions set by condition rules; every such reason starts with
// ConditionRule, which tells rule-made conditions from the agent's own.
const (
	// ConditionRuleEvaluated: the rule was evaluated.
	ConditionRuleEvaluated = "ConditionRuleEvaluated"
	// ConditionRuleInvalid: the rule is invalid and was not evaluated.
	ConditionRuleInvalid = "ConditionRuleInvalid"
	// ConditionRuleExpressionError: a CEL expression of the rule failed.
	ConditionRuleExpressionError = "ConditionRuleExpressionError"
	// ConditionRuleInternalError: evaluation failed for a reason other than the
	// expressions.
	ConditionRuleInternalError = "ConditionRuleInternalError"
)

// Finalizers.
const (
	// ManifestWorkFinalizer holds a ManifestWork on the hub until its
	// AppliedManifestWork on the managed cluster is gone.
	ManifestWorkFinalizer = "cluster.open-cluster-management.io/manifest-work-cleanup"
	// AppliedManifestWorkFinalizer holds an AppliedManifestWork until every resource
	// it applied is deleted from the managed cluster.
	AppliedManifestWorkFinalizer = "cluster.open-cluster-management.io/applied-manifest-work-cleanup"
)

// Annotations.
const (
	// ManifestConfigSpecHashAnnotationKey on a ManifestWork records the hash of the
	// configurations it was rendered from.
	ManifestConfigSpecHashAnnotationKey = "open-cluster-management.io/config-spec-hash"
	// ObjectSpecHash on an applied resource records the hash of its manifest.
	ObjectSpecHash = "open-cluster-management.io/object-hash"
)

// Names reported by a WellKnownStatus feedback rule, per kind. Flotilla serves them with the
// klusterlet's feedback-wellknown Wasm plugin (plugins/feedback/wellknown): OCM's for
// Deployment, Job and Pod, and in the same style for DaemonSet and StatefulSet. A field the
// object lacks reports no value, as OCM's JSONPath reader does.
const (
	// Deployment (apps/v1): .status.readyReplicas, .status.replicas,
	// .status.availableReplicas. StatefulSet (apps/v1) reports the same three names from
	// the same fields.
	WellKnownReadyReplicas     = "ReadyReplicas"
	WellKnownReplicas          = "Replicas"
	WellKnownAvailableReplicas = "AvailableReplicas"

	// Job (batch/v1): status of the Complete condition and .status.succeeded.
	WellKnownJobComplete  = "JobComplete"
	WellKnownJobSucceeded = "JobSucceeded"

	// Pod (v1): status of the Ready condition and .status.phase.
	WellKnownPodReady = "PodReady"
	WellKnownPodPhase = "PodPhase"

	// DaemonSet (apps/v1): .status.desiredNumberScheduled, .status.numberReady,
	// .status.numberAvailable.
	WellKnownDesiredNumberScheduled = "DesiredNumberScheduled"
	WellKnownNumberReady            = "NumberReady"
	WellKnownNumberAvailable        = "NumberAvailable"
)
