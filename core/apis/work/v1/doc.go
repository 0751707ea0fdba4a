// Package v1 holds the work.open-cluster-management.io/v1 API: ManifestWork, the
// set of manifests the hub asks one managed cluster to apply, and
// AppliedManifestWork, the agent-side record of what it applied.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:Optional
// +groupName=work.open-cluster-management.io
package v1
