package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedProxyServiceResolver exposes a Service of every managed cluster in a
// ManagedClusterSet to the hub through the cluster-proxy tunnel, at the host
// cluster-proxy-<hash> of the cluster, namespace and Service.
//
// cluster-proxy v0.11.0 removed this kind; it is served as in v0.10.0, and its version
// carries upstream's deprecation warning, which clients print on every request.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:deprecatedversion:warning="ManagedProxyServiceResolver is deprecated and will be removed in the next release"
type ManagedProxyServiceResolver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedProxyServiceResolverSpec   `json:"spec,omitempty"`
	Status ManagedProxyServiceResolverStatus `json:"status,omitempty"`
}

// ManagedProxyServiceResolverList is a list of ManagedProxyServiceResolvers.
//
// +kubebuilder:object:root=true
type ManagedProxyServiceResolverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedProxyServiceResolver `json:"items"`
}

// ManagedProxyServiceResolverSpec says which Service of which clusters to expose.
type ManagedProxyServiceResolverSpec struct {
	// managedClusterSelector chooses the clusters.
	// +required
	ManagedClusterSelector ManagedClusterSelector `json:"managedClusterSelector"`
	// serviceSelector chooses the Service.
	// +required
	ServiceSelector ServiceSelector `json:"serviceSelector"`
}

// ManagedClusterSelectorType is how a resolver chooses clusters.
// +kubebuilder:validation:Enum=ManagedClusterSet
type ManagedClusterSelectorType string

const (
	// ManagedClusterSelectorTypeClusterSet chooses the members of managedClusterSet, which
	// must then be set.
	ManagedClusterSelectorTypeClusterSet ManagedClusterSelectorType = "ManagedClusterSet"
)

// ManagedClusterSelector chooses clusters.
type ManagedClusterSelector struct {
	// type of selector; only ManagedClusterSet.
	// +optional
	// +kubebuilder:default=ManagedClusterSet
	Type ManagedClusterSelectorType `json:"type,omitempty"`
	// managedClusterSet whose members expose the Service.
	// +optional
	ManagedClusterSet *ManagedClusterSet `json:"managedClusterSet,omitempty"`
}

// ManagedClusterSet names a ManagedClusterSet.
type ManagedClusterSet struct {
	// name of the set.
	// +required
	Name string `json:"name"`
}

// ServiceSelectorType is how a resolver chooses the Service.
// +kubebuilder:validation:Enum=ServiceRef
type ServiceSelectorType string

const (
	// ServiceSelectorTypeServiceRef chooses the Service serviceRef names, which must then
	// be set.
	ServiceSelectorTypeServiceRef ServiceSelectorType = "ServiceRef"
)

// ServiceSelector chooses a Service.
type ServiceSelector struct {
	// type of selector; only ServiceRef.
	// +optional
	// +kubebuilder:default=ServiceRef
	Type ServiceSelectorType `json:"type,omitempty"`
	// serviceRef names the Service.
	// +optional
	ServiceRef *ServiceRef `json:"serviceRef,omitempty"`
}

// ServiceRef names a Service.
type ServiceRef struct {
	// namespace of the Service.
	// +required
	Namespace string `json:"namespace"`
	// name of the Service.
	// +required
	Name string `json:"name"`
}

// ManagedProxyServiceResolverStatus is the observed state of a resolver. Its conditions
// are required (as upstream's schema has it): a status write must carry them.
type ManagedProxyServiceResolverStatus struct {
	// conditions: ConditionTypeServiceResolverAvaliable.
	Conditions []metav1.Condition `json:"conditions"`
}
