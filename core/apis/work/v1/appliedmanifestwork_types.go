package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=appliedmanifestworks,scope=Cluster
// +kubebuilder:subresource:status

// AppliedManifestWork is the managed-cluster record of a ManifestWork the agent
// applied. It anchors the applied resources for garbage collection, so deleting
// it (for instance after the agent was removed) deletes them too. Its name is
// "<hub hash>-<manifestwork name>", the hub hash identifying the hub's first
// kube-apiserver URL.
type AppliedManifestWork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec links the record to its hub and ManifestWork.
	Spec AppliedManifestWorkSpec `json:"spec,omitempty"`

	// Status lists what was applied.
	// +optional
	Status AppliedManifestWorkStatus `json:"status,omitempty"`
}

// AppliedManifestWorkSpec links an AppliedManifestWork to its origin.
type AppliedManifestWorkSpec struct {
	// HubHash identifies the hub by a hash of its first kube-apiserver URL.
	// +required
	HubHash string `json:"hubHash"`

	// AgentID is the ID of the work agent responsible for this record. Not
	// required by the schema, as in OCM.
	// +optional
	AgentID string `json:"agentID"`

	// ManifestWorkName is the name of the ManifestWork on the hub.
	// +required
	ManifestWorkName string `json:"manifestWorkName"`
}

// AppliedManifestWorkStatus records the applied resources.
type AppliedManifestWorkStatus struct {
	// AppliedResources are the resources of the work that were applied. An entry is
	// removed once its manifest leaves the ManifestWork (and the resource is
	// deleted) or by the finalizer; a resource still terminating may outlive its
	// entry, which is safe because it is never recreated.
	// +optional
	AppliedResources []AppliedManifestResourceMeta `json:"appliedResources,omitempty"`

	// EvictionStartTime is when eviction of this record began: it is deleted after
	// a grace period when its ManifestWork is gone from the hub or its hub hash no
	// longer matches the agent's hub.
	// +optional
	EvictionStartTime *metav1.Time `json:"evictionStartTime,omitempty"`
}

// AppliedManifestResourceMeta identifies an applied resource. Applied resources
// always have a known group, version, resource, namespace and name.
type AppliedManifestResourceMeta struct {
	ResourceIdentifier `json:",inline"`

	// Version is the API version the resource was applied with.
	// +kubebuilder:validation:Required
	// +required
	Version string `json:"version"`

	// UID is set once the controller deleted the resource; the resource may still
	// be visible while its finalizers run. Clients do not set it.
	// +optional
	UID string `json:"uid,omitempty"`
}

// +kubebuilder:object:root=true

// AppliedManifestWorkList is a list of AppliedManifestWorks.
type AppliedManifestWorkList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the AppliedManifestWorks.
	Items []AppliedManifestWork `json:"items"`
}
