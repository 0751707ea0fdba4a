package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The rollout types below are not resources of their own: ManifestWorkReplicaSet
// placement references and ClusterManagementAddOn install strategies embed them to
// say how a change reaches the clusters a Placement selected. Field names and
// defaults follow OCM so that objects written for OCM decode unchanged.

// RolloutType names how a workload change is spread over the selected clusters.
type RolloutType string

const (
	// All applies the change to every selected cluster at once.
	All RolloutType = "All"
	// Progressive applies the change cluster by cluster, bounded by maxConcurrency.
	Progressive RolloutType = "Progressive"
	// ProgressivePerGroup applies the change one placement decision group at a time.
	ProgressivePerGroup RolloutType = "ProgressivePerGroup"
)

// RolloutStrategy selects a rollout type and carries the settings for it. Only the
// member matching Type is read; the others are ignored.
type RolloutStrategy struct {
	// Type is All, Progressive or ProgressivePerGroup.
	//  - All: every selected cluster receives the workload together.
	//  - Progressive: the next cluster starts only after a running one succeeded
	//    (or timed out) without breaching maxFailures.
	//  - ProgressivePerGroup: the next decision group starts only after every cluster
	//    of the current group succeeded without breaching maxFailures.
	// +kubebuilder:validation:Enum=All;Progressive;ProgressivePerGroup
	// +kubebuilder:default:=All
	// +optional
	Type RolloutType `json:"type,omitempty"`

	// RolloutType is the name OCM's documentation gives Type in its
	// ManifestWorkReplicaSet example ("rolloutType: Progressive"). A Flotilla
	// superset, so that example applies and rolls out as documented: it is read when
	// Type is All or unset (Type's default hides whether it was written). Write type.
	// +kubebuilder:validation:Enum=All;Progressive;ProgressivePerGroup
	// +optional
	RolloutType RolloutType `json:"rolloutType,omitempty"`

	// All holds the settings for type All.
	// +optional
	All *RolloutAll `json:"all,omitempty"`

	// Progressive holds the settings for type Progressive.
	// +optional
	Progressive *RolloutProgressive `json:"progressive,omitempty"`

	// ProgressivePerGroup holds the settings for type ProgressivePerGroup.
	// +optional
	ProgressivePerGroup *RolloutProgressivePerGroup `json:"progressivePerGroup,omitempty"`
}

// RolloutConfig bounds how long a rollout waits for each cluster and how many
// failures it tolerates. Durations are written as e.g. 90s, 10m or 2h.
type RolloutConfig struct {
	// MinSuccessTime is a soak period: after a cluster reaches success the rollout
	// still waits this long before moving on. Only Progressive and
	// ProgressivePerGroup honour it; 0 means move on immediately.
	// +kubebuilder:default:="0"
	// +optional
	MinSuccessTime metav1.Duration `json:"minSuccessTime,omitempty"`

	// ProgressDeadline is how long a cluster may take to reach success before it is
	// counted as timed out (and so towards maxFailures). "None" waits forever.
	// +kubebuilder:validation:Pattern="^(([0-9])+[h|m|s])|None$"
	// +kubebuilder:default:="None"
	// +optional
	ProgressDeadline string `json:"progressDeadline,omitempty"`

	// MaxFailures is how many clusters (a count, or a percentage written as "N%")
	// may fail or time out before the rollout stops. Progressive counts over all
	// clusters, ProgressivePerGroup over the current group. Default: none tolerated.
	// +kubebuilder:validation:Pattern="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:default="0"
	// +optional
	MaxFailures intstr.IntOrString `json:"maxFailures,omitempty"`

	// Timeout is the older name of ProgressDeadline, still accepted on the wire.
	//
	// Deprecated: use ProgressDeadline.
	// +kubebuilder:validation:Pattern="^(([0-9])+[h|m|s])|None$"
	// +kubebuilder:default:="None"
	// +optional
	Timeout string `json:"timeout,omitempty"`
}

// MandatoryDecisionGroup picks one placement decision group, by name or by index.
// When both are set the name is matched first.
type MandatoryDecisionGroup struct {
	// GroupName matches the PlacementDecision label
	// cluster.open-cluster-management.io/decision-group-name.
	// +optional
	GroupName string `json:"groupName,omitempty"`

	// GroupIndex matches the PlacementDecision label
	// cluster.open-cluster-management.io/decision-group-index.
	// +optional
	GroupIndex int32 `json:"groupIndex,omitempty"`
}

// MandatoryDecisionGroups lists the decision groups that receive a change first;
// the rollout fails if any of them does not reach success.
type MandatoryDecisionGroups struct {
	// MandatoryDecisionGroups must name or index groups defined by the Placement's
	// decisionStrategy.
	// +optional
	MandatoryDecisionGroups []MandatoryDecisionGroup `json:"mandatoryDecisionGroups,omitempty"`
}

// RolloutAll configures rollout type All.
type RolloutAll struct {
	// +optional
	RolloutConfig `json:",inline"`
}

// RolloutProgressivePerGroup configures rollout type ProgressivePerGroup.
type RolloutProgressivePerGroup struct {
	// +optional
	RolloutConfig `json:",inline"`

	// +optional
	MandatoryDecisionGroups `json:",inline"`
}

// RolloutProgressive configures rollout type Progressive.
type RolloutProgressive struct {
	// +optional
	RolloutConfig `json:",inline"`

	// +optional
	MandatoryDecisionGroups `json:",inline"`

	// MaxConcurrency caps how many clusters are updated at the same time, as a count
	// or "N%". Unset, it follows clustersPerDecisionGroup of the Placement's
	// decisionStrategy.
	// +kubebuilder:validation:Pattern="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxConcurrency intstr.IntOrString `json:"maxConcurrency,omitempty"`
}
