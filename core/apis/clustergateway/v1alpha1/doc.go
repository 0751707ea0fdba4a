// Package v1alpha1 holds the cluster.core.oam.dev/v1alpha1 API of cluster-gateway:
// ClusterGateway, one per managed cluster that the hub can reach, with the proxy
// subresource that forwards requests to that cluster's kube-apiserver.
//
// It is not a CustomResourceDefinition: the hub serves it as an aggregated API behind the
// APIService APIServiceName, reading the gateways from credential Secrets (LabelKey*). The
// types, JSON names, Table columns, labels and annotations follow cluster-gateway v1.9.1, so
// kubectl and cluster-gateway's clients see the same objects.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=cluster.core.oam.dev
package v1alpha1
