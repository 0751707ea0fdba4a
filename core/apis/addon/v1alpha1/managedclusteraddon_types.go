package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=managedclusteraddons,scope=Namespaced,shortName=mca;mcas
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`

// ManagedClusterAddOn enables an add-on on one managed cluster. It lives in the
// cluster's namespace on the hub, carries the name of its ClusterManagementAddOn,
// and its status is where the add-on reports its state on that cluster.
type ManagedClusterAddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec is how the add-on agent is installed on the cluster.
	// +kubebuilder:validation:Required
	// +required
	Spec ManagedClusterAddOnSpec `json:"spec"`

	// Status is the add-on's state on the cluster.
	// +optional
	Status ManagedClusterAddOnStatus `json:"status"`
}

// ManagedClusterAddOnSpec is the install configuration of an add-on agent.
type ManagedClusterAddOnSpec struct {
	// InstallNamespace is the managed-cluster namespace of the agent.
	// +optional
	// +kubebuilder:default=open-cluster-management-agent-addon
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
	InstallNamespace string `json:"installNamespace,omitempty"`

	// Configs override, by group and resource, the configurations the
	// ClusterManagementAddOn assigns to this cluster.
	// +optional
	Configs []AddOnConfig `json:"configs,omitempty"`
}

// RegistrationConfig is one client certificate the agent registers with: the
// klusterlet files a CSR for it and stores the signed result in a secret in the
// install namespace ("<addon>-hub-kubeconfig" for the kube-apiserver-client signer,
// "<addon>-<signer>-client-cert" otherwise).
type RegistrationConfig struct {
	// SignerName is the CSR signer.
	// +required
	// +kubebuilder:validation:MaxLength=571
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:Pattern=^([a-z0-9][a-z0-9-]*[a-z0-9]\.)+[a-z]+\/[a-z0-9-\.]+$
	SignerName string `json:"signerName"`

	// Subject is the certificate subject. When empty the agent gets user
	// system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>
	// and groups system:open-cluster-management:cluster:<cluster>:addon:<addon>,
	// system:open-cluster-management:addon:<addon> and system:authenticated.
	// +optional
	Subject Subject `json:"subject,omitempty"`
}

// Subject is the identity of an add-on agent on the hub.
type Subject struct {
	// User is the user name.
	User string `json:"user"`

	// Groups are the user's groups.
	// +optional
	Groups []string `json:"groups,omitempty"`

	// OrganizationUnits are the certificate OUs.
	// +optional
	OrganizationUnits []string `json:"organizationUnit,omitempty"`
}

// ManagedClusterAddOnStatus is the state of an add-on on one cluster.
type ManagedClusterAddOnStatus struct {
	// Conditions describe the add-on: Available, Degraded, Progressing and the
	// detail conditions listed with the ManagedClusterAddOnCondition* constants.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// RelatedObjects point at objects relevant to the add-on, such as its
	// ClusterManagementAddOn or namespaces it uses.
	// +optional
	RelatedObjects []ObjectReference `json:"relatedObjects,omitempty"`

	// AddOnMeta mirrors the ClusterManagementAddOn's addOnMeta.
	// +optional
	AddOnMeta AddOnMeta `json:"addOnMeta,omitempty"`

	// AddOnConfiguration locates the add-on's configuration.
	//
	// Deprecated: use ConfigReferences.
	// +optional
	AddOnConfiguration ConfigCoordinates `json:"addOnConfiguration,omitempty"`

	// SupportedConfigs are the configuration kinds this ManagedClusterAddOn may
	// override in its spec. Empty means none.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	SupportedConfigs []ConfigGroupResource `json:"supportedConfigs,omitempty"`

	// ConfigReferences are the configurations in effect after defaults,
	// install-strategy configs and this object's configs were merged.
	// +optional
	ConfigReferences []ConfigReference `json:"configReferences,omitempty"`

	// Namespace is the managed-cluster namespace holding the registration secret or
	// health lease; required with registrations or Lease health checks.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Registrations are set by the add-on's hub controller; each yields a CSR and a
	// client certificate secret. Signer names must be unique.
	// +optional
	Registrations []RegistrationConfig `json:"registrations,omitempty"`

	// HealthCheck is how the add-on's health is determined; Lease by default.
	// +optional
	HealthCheck HealthCheck `json:"healthCheck,omitempty"`

	// KubeClientDriver is how the agent authenticates for its registration with signer
	// kubernetes.io/kube-apiserver-client: csr (a client certificate) or token (a service
	// account token). The agent sets it to declare the driver it uses.
	// +optional
	// +kubebuilder:validation:Enum=csr;token
	KubeClientDriver string `json:"kubeClientDriver,omitempty"`
}

// Values of ManagedClusterAddOnStatus.KubeClientDriver.
const (
	// KubeClientDriverCSR: the agent gets a client certificate through a CSR.
	KubeClientDriverCSR = "csr"
	// KubeClientDriverToken: the agent uses a service account token.
	KubeClientDriverToken = "token"
)

// ObjectReference points at a related object.
type ObjectReference struct {
	// Group of the object.
	// +kubebuilder:validation:Required
	// +required
	Group string `json:"group"`

	// Resource of the object.
	// +kubebuilder:validation:Required
	// +required
	Resource string `json:"resource"`

	// Namespace of the object.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the object.
	// +kubebuilder:validation:Required
	// +required
	Name string `json:"name"`
}

// ConfigReference is one configuration in effect for the add-on on this cluster.
type ConfigReference struct {
	ConfigGroupResource `json:",inline"`

	// ConfigReferent is the configuration object.
	//
	// Deprecated: use DesiredConfig.
	ConfigReferent `json:",inline"`

	// LastObservedGeneration is the observed generation of the configuration.
	//
	// Deprecated: use LastAppliedConfig.
	LastObservedGeneration int64 `json:"lastObservedGeneration"`

	// DesiredConfig is the configuration and spec hash that should be in effect.
	// +optional
	DesiredConfig *ConfigSpecHash `json:"desiredConfig"`

	// LastAppliedConfig is the configuration and spec hash whose ManifestWork was
	// applied successfully.
	// +optional
	LastAppliedConfig *ConfigSpecHash `json:"lastAppliedConfig"`
}

// HealthCheckMode is how an add-on's health is determined.
// +kubebuilder:validation:Enum=Lease;Customized
type HealthCheckMode string

const (
	// HealthCheckModeLease: the agent renews a lease in its install namespace and
	// the registration agent derives health from it.
	HealthCheckModeLease HealthCheckMode = "Lease"
	// HealthCheckModeCustomized: the add-on reports its health itself.
	HealthCheckModeCustomized HealthCheckMode = "Customized"
)

// HealthCheck configures health checking of an add-on.
type HealthCheck struct {
	// Mode is Lease or Customized.
	// +optional
	// +kubebuilder:default=Lease
	Mode HealthCheckMode `json:"mode,omitempty"`
}

// +kubebuilder:object:root=true

// ManagedClusterAddOnList is a list of ManagedClusterAddOns.
type ManagedClusterAddOnList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items are the ManagedClusterAddOns.
	Items []ManagedClusterAddOn `json:"items"`
}
