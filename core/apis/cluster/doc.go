// Package cluster is the root of the cluster.open-cluster-management.io API
// group. The versioned types live in the v1, v1beta1, v1beta2 and v1alpha1
// sub-packages; this package only holds what is shared by all of them.
package cluster

// GroupName is the API group every cluster.open-cluster-management.io kind belongs to.
const GroupName = "cluster.open-cluster-management.io"
