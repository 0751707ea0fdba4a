// Package v1alpha1 holds the work.open-cluster-management.io/v1alpha1 API:
// ManifestWorkReplicaSet, which stamps one ManifestWork into the namespace of
// every cluster its Placements select and rolls changes out by a rollout strategy.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:Optional
// +groupName=work.open-cluster-management.io
package v1alpha1
