package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedClusterSetBinding makes a ManagedClusterSet usable from one namespace:
// placements in that namespace may only pick clusters of sets bound there.
// Creating a binding needs CREATE on the virtual subresource
// managedclustersets/bind of the set, and the binding must be named after it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName={"mclsetbinding","mclsetbindings"}
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterSet",message="The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet"
type ManagedClusterSetBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the bound set.
	Spec ManagedClusterSetBindingSpec `json:"spec"`

	// status of the binding.
	// +optional
	Status ManagedClusterSetBindingStatus `json:"status,omitempty"`
}

// ManagedClusterSetBindingSpec describes a ManagedClusterSetBinding.
type ManagedClusterSetBindingSpec struct {
	// clusterSet is the name of the bound ManagedClusterSet. It equals the
	// binding's own name and never changes.
	// +kubebuilder:validation:MinLength=1
	ClusterSet string `json:"clusterSet"`
}

// ManagedClusterSetBindingStatus is the observed state of a binding.
type ManagedClusterSetBindingStatus struct {
	// conditions of the binding.
	Conditions []metav1.Condition `json:"conditions"`
}

// ManagedClusterSetBindingList is a list of ManagedClusterSetBindings.
//
// +kubebuilder:object:root=true
type ManagedClusterSetBindingList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the bindings.
	Items []ManagedClusterSetBinding `json:"items"`
}
