package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedCluster is the hub's record of one registered (or registering) cluster.
// It is cluster-scoped and named after the cluster. Joining is a double opt-in:
// the agent creates the ManagedCluster and a CSR, and a hub admin both approves
// the CSR and sets spec.hubAcceptsClient. The agent then keeps the status fresh.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={"mcl","mcls"}
// +kubebuilder:printcolumn:JSONPath=`.spec.hubAcceptsClient`,name="Hub Accepted",type=boolean
// +kubebuilder:printcolumn:JSONPath=`.spec.managedClusterClientConfigs[*].url`,name="Managed Cluster URLs",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ManagedClusterJoined")].status`,name="Joined",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status`,name="Available",type=string
// +kubebuilder:printcolumn:JSONPath=`.metadata.creationTimestamp`,name="Age",type=date
type ManagedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the hub wants from the cluster's agent.
	Spec ManagedClusterSpec `json:"spec"`

	// status is reported by the agent on the managed cluster.
	// +optional
	Status ManagedClusterStatus `json:"status,omitempty"`
}

// ManagedClusterSpec is the desired configuration of a managed cluster.
type ManagedClusterSpec struct {
	// managedClusterClientConfigs lists the API server endpoints of the managed
	// cluster. Empty means the hub has no address to reach the cluster with.
	// +optional
	ManagedClusterClientConfigs []ClientConfig `json:"managedClusterClientConfigs,omitempty"`

	// hubAcceptsClient is the hub side of the double opt-in. Setting it to true
	// requires UPDATE on the virtual subresource managedclusters/accept; the hub
	// then creates the cluster namespace and the agent's RBAC. Setting it back to
	// false removes them again.
	// +optional
	HubAcceptsClient bool `json:"hubAcceptsClient"`

	// leaseDurationSeconds is how often the agent renews its lease on the hub.
	// Zero means the default of 60 seconds.
	// +optional
	// +kubebuilder:default=60
	LeaseDurationSeconds int32 `json:"leaseDurationSeconds,omitempty"`

	// taints repel placements that do not tolerate them. The unavailable and
	// unreachable taints are owned by the hub; an agent may not add or remove them.
	// +optional
	Taints []Taint `json:"taints,omitempty"`
}

// ClientConfig is one API server endpoint of a managed cluster.
type ClientConfig struct {
	// url of the managed cluster's API server.
	// +required
	URL string `json:"url"`

	// caBundle verifies the API server's certificate; system roots are used when empty.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// Taint marks a managed cluster so that placements not tolerating it are
// affected according to its effect.
type Taint struct {
	// key of the taint, e.g. "gpu" or "example.com/maintenance"; an optional
	// DNS-subdomain prefix followed by a qualified name.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`

	// value of the taint; may be empty.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Value string `json:"value,omitempty"`

	// effect on placements that do not tolerate the taint.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum:=NoSelect;PreferNoSelect;NoSelectIfNew
	// +required
	Effect TaintEffect `json:"effect"`

	// timeAdded is when the taint was put on the cluster; toleration seconds count from here.
	// +nullable
	// +optional
	TimeAdded metav1.Time `json:"timeAdded"`
}

// TaintEffect says how a taint treats placements that do not tolerate it.
type TaintEffect string

const (
	// TaintEffectNoSelect keeps non-tolerating placements from selecting the
	// cluster and evicts it from decisions they already made.
	TaintEffectNoSelect TaintEffect = "NoSelect"
	// TaintEffectPreferNoSelect asks the scheduler to avoid the cluster without forbidding it.
	TaintEffectPreferNoSelect TaintEffect = "PreferNoSelect"
	// TaintEffectNoSelectIfNew keeps non-tolerating placements from newly
	// selecting the cluster but leaves existing decisions alone.
	TaintEffectNoSelectIfNew TaintEffect = "NoSelectIfNew"
)

// ManagedClusterStatus is what the agent reports about its cluster.
type ManagedClusterStatus struct {
	// conditions of the cluster (joined, accepted, available, clock synced, ...).
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions"`

	// capacity is the sum of the nodes' capacity.
	Capacity ResourceList `json:"capacity,omitempty"`

	// allocatable is the sum of the nodes' allocatable resources.
	Allocatable ResourceList `json:"allocatable,omitempty"`

	// version of the managed cluster's software.
	Version ManagedClusterVersion `json:"version,omitempty"`

	// clusterClaims are the ClusterClaims collected from the managed cluster,
	// such as id.k8s.io or kubeversion.open-cluster-management.io.
	// +optional
	ClusterClaims []ManagedClusterClaim `json:"clusterClaims,omitempty"`

	// managedNamespaces are the namespaces that the cluster sets this cluster
	// belongs to ask to be managed on it.
	// +optional
	// +listType=map
	// +listMapKey=clusterSet
	// +listMapKey=name
	ManagedNamespaces []ClusterSetManagedNamespaceConfig `json:"managedNamespaces,omitempty"`
}

// ManagedClusterVersion carries version information about a managed cluster.
type ManagedClusterVersion struct {
	// kubernetes version of the managed cluster, e.g. v1.36.3.
	// +optional
	Kubernetes string `json:"kubernetes,omitempty"`
}

// ManagedClusterClaim is one ClusterClaim as collected into the hub's status.
type ManagedClusterClaim struct {
	// name of the ClusterClaim on the managed cluster.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name,omitempty"`

	// value of the claim.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:MinLength=1
	Value string `json:"value,omitempty"`
}

// ManagedNamespaceConfig names a namespace a cluster set manages on its member clusters.
type ManagedNamespaceConfig struct {
	// name of the namespace; a DNS-1123 label.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// ClusterSetManagedNamespaceConfig is a managed namespace as reported on a
// ManagedCluster: which cluster set asked for it and how it is doing.
type ClusterSetManagedNamespaceConfig struct {
	ManagedNamespaceConfig `json:",inline"`

	// clusterSet is the ManagedClusterSet that asked for the namespace.
	// +required
	ClusterSet string `json:"clusterSet"`

	// conditions of the namespace on the managed cluster.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceName names a resource in a ResourceList.
type ResourceName string

const (
	// ResourceCPU is CPU in cores (500m = half a core).
	ResourceCPU ResourceName = "cpu"
	// ResourceMemory is memory in bytes.
	ResourceMemory ResourceName = "memory"
)

// ResourceList maps resource names to quantities, like core/v1 ResourceList.
type ResourceList map[ResourceName]resource.Quantity

// ManagedClusterList is a list of ManagedClusters.
//
// +kubebuilder:object:root=true
type ManagedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the managed clusters.
	Items []ManagedCluster `json:"items"`
}
