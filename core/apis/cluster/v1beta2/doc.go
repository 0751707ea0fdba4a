// Package v1beta2 holds the cluster.open-cluster-management.io/v1beta2 API types:
// ManagedClusterSet and ManagedClusterSetBinding. Field names, JSON tags, enums, defaults and validation
// markers follow Open Cluster Management so that OCM clients and manifests
// work against Flotilla unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.open-cluster-management.io
package v1beta2
