// Package v1 holds the operator.open-cluster-management.io/v1 API: the install
// described by OCM's operator API. ClusterManager (cluster-scoped, conventionally named
// "cluster-manager") describes the hub's controllers; Klusterlet (cluster-scoped,
// conventionally named "klusterlet") describes a managed cluster's agent and how it
// registers with its hub (cluster name, bootstrap kubeconfigs for multiple hubs,
// registration driver, feature gates, client QPS, ...).
//
// Field names, JSON tags, enums, defaults and validation follow OCM's
// operator.open-cluster-management.io/v1 CRDs, so OCM manifests (clusteradm's, the
// operator's samples and the documentation's) are accepted unchanged. As in OCM's, the
// ClusterManager CRD is installed on the hub and the Klusterlet CRD on managed clusters.
//
// Nothing acts on these objects yet: init/join and the hub/klusterlet read them in a
// later change. Until then they are stored and validated only.
//
// Fields are optional in the CRD schema unless marked required, as in OCM's.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:Optional
// +groupName=operator.open-cluster-management.io
package v1
