// Package v1alpha1 holds the cluster.open-cluster-management.io/v1alpha1 API types:
// ClusterClaim, AddOnPlacementScore and the rollout strategy types. Field names, JSON tags, enums, defaults and validation
// markers follow Open Cluster Management so that OCM clients and manifests
// work against Flotilla unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1alpha1
