package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterClaim is a fact a managed cluster states about itself, created on the
// managed cluster (cluster-scoped). The registration agent copies claims into
// status.clusterClaims of the cluster's ManagedCluster on the hub, reserved
// names first and then up to a configurable number of custom ones; claims
// labelled open-cluster-management.io/spoke-only stay local.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
type ClusterClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the claimed value.
	Spec ClusterClaimSpec `json:"spec,omitempty"`
}

// ClusterClaimSpec is the content of a ClusterClaim.
type ClusterClaimSpec struct {
	// value of the claim; its meaning depends on the claim's name.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value,omitempty"`
}

// ClusterClaimList is a list of ClusterClaims.
//
// +kubebuilder:object:root=true
type ClusterClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the claims.
	Items []ClusterClaim `json:"items"`
}
