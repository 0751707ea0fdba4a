// Package v1beta1 holds the cluster.open-cluster-management.io/v1beta1 API types:
// Placement and PlacementDecision. Field names, JSON tags, enums, defaults and validation
// markers follow Open Cluster Management so that OCM clients and manifests
// work against Flotilla unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1beta1
