package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddOnPlacementScore publishes scores about one managed cluster for placement
// prioritizers of type AddOn. It lives in the cluster's namespace on the hub
// and is maintained by whichever controller computes the scores.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status
type AddOnPlacementScore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// status holds the scores.
	// +optional
	Status AddOnPlacementScoreStatus `json:"status,omitempty"`
}

// AddOnPlacementScoreStatus is the published set of scores.
type AddOnPlacementScoreStatus struct {
	// conditions of the score resource.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// scores of the cluster, by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Scores []AddOnPlacementScoreItem `json:"scores,omitempty"`

	// validUntil is when the scores go stale; placement ignores them afterwards.
	// Nil never expires, so producers should refresh it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +optional
	ValidUntil *metav1.Time `json:"validUntil"`
}

// AddOnPlacementScoreItem is one named score.
type AddOnPlacementScoreItem struct {
	// name of the score, referenced by a placement's addOn.scoreName.
	// +kubebuilder:validation:Required
	// +required
	Name string `json:"name"`

	// value of the score, from -100 to 100.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum:=-100
	// +kubebuilder:validation:Maximum:=100
	// +required
	Value int32 `json:"value"`
}

// AddOnPlacementScoreList is a list of AddOnPlacementScores.
//
// +kubebuilder:object:root=true
type AddOnPlacementScoreList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the score resources.
	Items []AddOnPlacementScore `json:"items"`
}
