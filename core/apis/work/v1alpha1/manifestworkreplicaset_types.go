package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=manifestworkreplicasets,shortName=mwrs,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Placement",type="string",JSONPath=".status.conditions[?(@.type==\"PlacementVerified\")].reason",description="Reason"
// +kubebuilder:printcolumn:name="Found",type="string",JSONPath=".status.conditions[?(@.type==\"PlacementVerified\")].status",description="Configured"
// +kubebuilder:printcolumn:name="ManifestWorks",type="string",JSONPath=".status.conditions[?(@.type==\"ManifestworkApplied\")].reason",description="Reason"
// +kubebuilder:printcolumn:name="Applied",type="string",JSONPath=".status.conditions[?(@.type==\"ManifestworkApplied\")].status",description="Applied"

// ManifestWorkReplicaSet creates one ManifestWork from its template in the
// namespace of every cluster chosen by its Placements (which must live in the same
// namespace), follows placement decision changes, and removes the ManifestWorks
// when it is deleted.
type ManifestWorkReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the ManifestWork template and the placements to spread it over.
	Spec ManifestWorkReplicaSetSpec `json:"spec,omitempty"`

	// Status summarises the generated ManifestWorks.
	Status ManifestWorkReplicaSetStatus `json:"status,omitempty"`
}

// ManifestWorkReplicaSetSpec is the desired state of a ManifestWorkReplicaSet.
type ManifestWorkReplicaSetSpec struct {
	// ManifestWorkTemplate is the spec of each generated ManifestWork.
	ManifestWorkTemplate workv1.ManifestWorkSpec `json:"manifestWorkTemplate"`

	// PlacementRefs name the Placements (in this namespace) whose decisions receive
	// the ManifestWork, each with its own rollout strategy.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +required
	PlacementRefs []LocalPlacementReference `json:"placementRefs"`

	// CascadeDeletionPolicy is Background (the replica set goes away at once) or
	// Foreground (it stays until every generated ManifestWork is gone).
	// +kubebuilder:default=Background
	// +kubebuilder:validation:Enum=Background;Foreground
	// +optional
	CascadeDeletionPolicy CascadeDeletionPolicy `json:"cascadeDeletionPolicy,omitempty"`
}

// CascadeDeletionPolicy says whether deleting the replica set waits for its
// ManifestWorks.
type CascadeDeletionPolicy string

const (
	// Foreground keeps the replica set until its ManifestWorks are deleted.
	Foreground CascadeDeletionPolicy = "Foreground"
	// Background deletes the replica set without waiting.
	Background CascadeDeletionPolicy = "Background"
)

// LocalPlacementReference names a Placement in the replica set's namespace.
type LocalPlacementReference struct {
	// Name of the Placement.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// RolloutStrategy is how changes reach the clusters of this Placement.
	// +optional
	// +kubebuilder:default={type: All, all: {progressDeadline: None}}
	RolloutStrategy clusterv1alpha1.RolloutStrategy `json:"rolloutStrategy"`
}

// ManifestWorkReplicaSetStatus is the observed state of a ManifestWorkReplicaSet.
type ManifestWorkReplicaSetStatus struct {
	// Conditions: PlacementVerified, PlacementRolledOut and ManifestworkApplied.
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Summary counts the generated ManifestWorks over all placements.
	Summary ManifestWorkReplicaSetSummary `json:"summary"`

	// PlacementsSummary counts them per placement.
	PlacementsSummary []PlacementSummary `json:"placementSummary"`
}

// PlacementSummary reports progress for one placement reference.
type PlacementSummary struct {
	// Name of the Placement.
	Name string `json:"name"`

	// AvailableDecisionGroups tells how many decision groups have all their
	// ManifestWorks available, e.g. "2 (20 / 30 clusters applied)".
	AvailableDecisionGroups string `json:"availableDecisionGroups"`

	// Summary counts the ManifestWorks of this placement.
	Summary ManifestWorkReplicaSetSummary `json:"summary"`
}

// ManifestWorkReplicaSetSummary counts ManifestWorks by state.
type ManifestWorkReplicaSetSummary struct {
	// Total is the number of ManifestWorks managed by the replica set.
	Total int `json:"total"`
	// Progressing is the number with Progressing=True.
	Progressing int `json:"progressing"`
	// Available is the number with Available=True.
	Available int `json:"available"`
	// Degraded is the number with Degraded=True.
	Degraded int `json:"degraded"`
	// Applied is the number with Applied=True.
	Applied int `json:"applied"`
	// DesiredTotal is the number of ManifestWorks the replica set will create.
	DesiredTotal int `json:"desiredTotal"`
	// Updated is the number of clusters running the latest template.
	Updated int `json:"updated"`
}

// +kubebuilder:object:root=true

// ManifestWorkReplicaSetList is a list of ManifestWorkReplicaSets.
type ManifestWorkReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ManifestWorkReplicaSets.
	Items []ManifestWorkReplicaSet `json:"items"`
}

// Condition types on ManifestWorkReplicaSet status.
const (
	// ManifestWorkReplicaSetConditionPlacementVerified: the referenced placements
	// exist and select clusters. Reasons: AsExpected, PlacementDecisionNotFound,
	// PlacementDecisionEmpty, NotAsExpected.
	ManifestWorkReplicaSetConditionPlacementVerified = "PlacementVerified"
	// ManifestWorkReplicaSetConditionPlacementRolledOut: the rollout strategies
	// finished. Reasons: Progressing, Complete.
	ManifestWorkReplicaSetConditionPlacementRolledOut = "PlacementRolledOut"
	// ManifestWorkReplicaSetConditionManifestworkApplied: a ManifestWork exists for
	// every decided cluster. Reasons: AsExpected, NotAsExpected, Processing.
	ManifestWorkReplicaSetConditionManifestworkApplied = "ManifestworkApplied"
)

// Reasons on ManifestWorkReplicaSet conditions.
const (
	// ReasonPlacementDecisionNotFound: a referenced placement has no decision.
	ReasonPlacementDecisionNotFound = "PlacementDecisionNotFound"
	// ReasonPlacementDecisionEmpty: a referenced placement selects no cluster.
	ReasonPlacementDecisionEmpty = "PlacementDecisionEmpty"
	// ReasonAsExpected: the condition holds as desired.
	ReasonAsExpected = "AsExpected"
	// ReasonProcessing: ManifestWorks are still being created or updated.
	ReasonProcessing = "Processing"
	// ReasonNotAsExpected: the ManifestWorks are not in the desired state.
	ReasonNotAsExpected = "NotAsExpected"
	// ReasonProgressing: the rollout is applying ManifestWorks progressively.
	ReasonProgressing = "Progressing"
	// ReasonComplete: the rollout reached every placement cluster.
	ReasonComplete = "Complete"
)

// Labels and finalizers used by the ManifestWorkReplicaSet controller.
const (
	// ManifestWorkReplicaSetControllerNameLabelKey on a generated ManifestWork holds
	// "<namespace>.<name>" of the owning replica set.
	ManifestWorkReplicaSetControllerNameLabelKey = "work.open-cluster-management.io/manifestworkreplicaset"
	// ManifestWorkReplicaSetPlacementNameLabelKey on a generated ManifestWork names
	// the placement that selected its cluster.
	ManifestWorkReplicaSetPlacementNameLabelKey = "work.open-cluster-management.io/placementname"
	// ManifestWorkReplicaSetFinalizer holds a replica set until its ManifestWorks
	// are deleted.
	ManifestWorkReplicaSetFinalizer = "work.open-cluster-management.io/manifest-work-cleanup"
)
