package v1alpha1

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=addontemplates,scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="ADDON NAME",type=string,JSONPath=`.spec.addonName`

// AddOnTemplate describes an add-on without an add-on manager of its own: the
// manifests of the agent and how the agent registers with the hub. A
// ClusterManagementAddOn uses it by listing addontemplates in supportedConfigs.
// It is cluster-scoped and only used on the hub.
type AddOnTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec is the agent's manifests and registrations.
	// +kubebuilder:validation:Required
	// +required
	Spec AddOnTemplateSpec `json:"spec"`
}

// AddOnTemplateSpec is the agent of a template add-on.
type AddOnTemplateSpec struct {
	// AddonName is the add-on the template belongs to.
	// +kubebuilder:validation:Required
	// +required
	AddonName string `json:"addonName"`

	// AgentSpec is the ManifestWork spec deploying the agent on a managed cluster.
	// +kubebuilder:validation:Required
	// +required
	AgentSpec workv1.ManifestWorkSpec `json:"agentSpec"`

	// Registration lists the hub credentials the agent obtains.
	// +optional
	Registration []RegistrationSpec `json:"registration"`
}

// RegistrationType is the kind of hub credential an agent registers for.
type RegistrationType string

const (
	// RegistrationTypeKubeClient: a kube-apiserver client certificate (signer
	// kubernetes.io/kube-apiserver-client), optionally bound to hub permissions.
	RegistrationTypeKubeClient RegistrationType = "KubeClient"
	// RegistrationTypeCustomSigner: a certificate from a custom signer, for
	// endpoints other than the kube-apiserver.
	RegistrationTypeCustomSigner RegistrationType = "CustomSigner"
)

// HubPermissionsBindingType is where hub permissions of an agent are bound.
type HubPermissionsBindingType string

const (
	// HubPermissionsBindingSingleNamespace binds in one given hub namespace.
	HubPermissionsBindingSingleNamespace HubPermissionsBindingType = "SingleNamespace"
	// HubPermissionsBindingCurrentCluster binds in the managed cluster's namespace
	// on the hub.
	HubPermissionsBindingCurrentCluster HubPermissionsBindingType = "CurrentCluster"
)

// RegistrationSpec is one hub credential of a template add-on's agent. A CSR is
// created and approved for it, and the result is stored in the install namespace
// as "<addon>-hub-kubeconfig" (KubeClient) or "<addon>-<signer>-client-cert"
// (CustomSigner).
type RegistrationSpec struct {
	// Type is KubeClient or CustomSigner.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum:=KubeClient;CustomSigner
	Type RegistrationType `json:"type"`

	// KubeClient configures a KubeClient registration.
	// +optional
	KubeClient *KubeClientRegistrationConfig `json:"kubeClient,omitempty"`

	// CustomSigner configures a CustomSigner registration; required for that type.
	CustomSigner *CustomSignerRegistrationConfig `json:"customSigner,omitempty"`
}

// KubeClientRegistrationConfig configures a kube-apiserver client registration.
type KubeClientRegistrationConfig struct {
	// HubPermissions are the hub roles granted to the agent.
	// +optional
	HubPermissions []HubPermissionConfig `json:"hubPermissions,omitempty"`
}

// HubPermissionConfig grants the agent a hub role through a RoleBinding for the
// group system:open-cluster-management:cluster:<cluster>:addon:<addon>.
type HubPermissionConfig struct {
	// Type is CurrentCluster (bind in the cluster's namespace) or SingleNamespace
	// (bind in the namespace given by singleNamespace).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum:=CurrentCluster;SingleNamespace
	Type HubPermissionsBindingType `json:"type"`

	// CurrentCluster configures type CurrentCluster.
	CurrentCluster *CurrentClusterBindingConfig `json:"currentCluster,omitempty"`

	// SingleNamespace configures type SingleNamespace.
	SingleNamespace *SingleNamespaceBindingConfig `json:"singleNamespace,omitempty"`
}

// CurrentClusterBindingConfig binds a ClusterRole in each cluster namespace.
type CurrentClusterBindingConfig struct {
	// ClusterRoleName is the ClusterRole to bind; it must exist on the hub.
	// +kubebuilder:validation:Required
	ClusterRoleName string `json:"clusterRoleName"`
}

// SingleNamespaceBindingConfig binds a Role or ClusterRole in one hub namespace.
type SingleNamespaceBindingConfig struct {
	// Namespace is where the RoleBinding is created.
	// +kubebuilder:validation:Required
	Namespace string `json:"namespace"`

	// RoleRef is the Role or ClusterRole to bind; it must exist on the hub.
	// +kubebuilder:validation:Required
	RoleRef rbacv1.RoleRef `json:"roleRef"`
}

// CustomSignerRegistrationConfig configures a custom-signer registration.
type CustomSignerRegistrationConfig struct {
	// SignerName is the CSR signer.
	// +required
	// +kubebuilder:validation:MaxLength=571
	// +kubebuilder:validation:MinLength=5
	// +kubebuilder:validation:Pattern=^([a-z0-9][a-z0-9-]*[a-z0-9]\.)+[a-z]+\/[a-z0-9-\.]+$
	SignerName string `json:"signerName"`

	// Subject is the certificate subject; see RegistrationConfig for the default.
	Subject *Subject `json:"subject,omitempty"`

	// SigningCA is the kubernetes.io/tls secret that signs the CSRs (by default in the
	// add-on manager's namespace). The add-on manager must be granted access to it.
	// +kubebuilder:validation:Required
	SigningCA SigningCARef `json:"signingCA"`
}

// SigningCARef names the signing CA secret.
type SigningCARef struct {
	// Name of the secret.
	// +kubebuilder:validation:Required
	Name string `json:"name"`

	// Namespace of the secret; empty means the add-on manager's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// +kubebuilder:object:root=true

// AddOnTemplateList is a list of AddOnTemplates.
type AddOnTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the AddOnTemplates.
	Items []AddOnTemplate `json:"items"`
}
