package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PlacementDecision holds one page of a Placement's selected clusters. A
// placement's decisions are spread over PlacementDecisions named
// <placement>-decision-<n>, each labelled
// cluster.open-cluster-management.io/placement=<placement> and holding at most
// 100 clusters, so that no single object grows too large.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
type PlacementDecision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status holds the decisions.
	// +optional
	Status PlacementDecisionStatus `json:"status,omitempty"`
}

// PlacementDecisionStatus lists selected clusters.
type PlacementDecisionStatus struct {
	// decisions are the selected clusters of this page, at most 100.
	// +kubebuilder:validation:Required
	// +required
	Decisions []ClusterDecision `json:"decisions"`
}

// ClusterDecision is one selected cluster.
type ClusterDecision struct {
	// clusterName is the ManagedCluster's name, unique across all decisions of the placement.
	// +kubebuilder:validation:Required
	// +required
	ClusterName string `json:"clusterName"`

	// reason says why the cluster was selected; may be empty.
	// +kubebuilder:validation:Required
	// +required
	Reason string `json:"reason"`

	// score is the cluster's final score (the sum of weight × score over the
	// prioritizers).
	// +optional
	Score int64 `json:"score,omitempty"`
}

// PlacementDecisionList is a list of PlacementDecisions.
//
// +kubebuilder:object:root=true
type PlacementDecisionList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the placement decisions.
	Items []PlacementDecision `json:"items"`
}
