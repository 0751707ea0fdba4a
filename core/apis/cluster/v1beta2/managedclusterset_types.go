package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// ManagedClusterSet groups ManagedClusters so that workloads can target the
// group as a whole. With the default ExclusiveClusterSetLabel selector a
// cluster joins a set through the label cluster.open-cluster-management.io/clusterset;
// changing that label needs CREATE on managedclustersets/join for both the old
// and the new set. With LabelSelector the set selects clusters by label instead.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={"mclset","mclsets"}
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Empty",type="string",JSONPath=".status.conditions[?(@.type==\"ClusterSetEmpty\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ManagedClusterSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says how member clusters are chosen.
	// +kubebuilder:default={clusterSelector: {selectorType: ExclusiveClusterSetLabel}}
	Spec ManagedClusterSetSpec `json:"spec"`

	// status of the set.
	// +optional
	Status ManagedClusterSetStatus `json:"status,omitempty"`
}

// ManagedClusterSetSpec describes a ManagedClusterSet.
type ManagedClusterSetSpec struct {
	// clusterSelector chooses the member clusters.
	// +optional
	// +kubebuilder:default:={selectorType: ExclusiveClusterSetLabel}
	ClusterSelector ManagedClusterSelector `json:"clusterSelector,omitempty"`

	// managedNamespaces are namespaces to be managed on every member cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	ManagedNamespaces []clusterv1.ManagedNamespaceConfig `json:"managedNamespaces,omitempty"`
}

// ManagedClusterSelector chooses the members of a ManagedClusterSet.
type ManagedClusterSelector struct {
	// selectorType is ExclusiveClusterSetLabel (members carry the label
	// cluster.open-cluster-management.io/clusterset=<set name>) or LabelSelector
	// (members match labelSelector).
	// +kubebuilder:validation:Enum=ExclusiveClusterSetLabel;LabelSelector
	// +kubebuilder:default:=ExclusiveClusterSetLabel
	// +required
	SelectorType SelectorType `json:"selectorType,omitempty"`

	// labelSelector selects the members when selectorType is LabelSelector.
	// An empty selector selects every cluster.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// SelectorType is how a ManagedClusterSet chooses its members.
type SelectorType string

const (
	// ExclusiveClusterSetLabel selects clusters labelled
	// cluster.open-cluster-management.io/clusterset=<set name>; a cluster is in at most one such set.
	ExclusiveClusterSetLabel SelectorType = "ExclusiveClusterSetLabel"
	// LabelSelector selects clusters with spec.clusterSelector.labelSelector.
	LabelSelector SelectorType = "LabelSelector"
)

// ManagedClusterSetStatus is the observed state of a ManagedClusterSet.
type ManagedClusterSetStatus struct {
	// conditions of the set.
	Conditions []metav1.Condition `json:"conditions"`
}

// ManagedClusterSetList is a list of ManagedClusterSets.
//
// +kubebuilder:object:root=true
type ManagedClusterSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the cluster sets.
	Items []ManagedClusterSet `json:"items"`
}
