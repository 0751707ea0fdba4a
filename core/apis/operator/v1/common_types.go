package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// FeatureGate switches one feature of a component on or off.
type FeatureGate struct {
	// feature is the name of the gate, e.g. ManifestWorkReplicaSet. Names the
	// component does not know are ignored.
	// +kubebuilder:validation:Required
	// +required
	Feature string `json:"feature"`

	// mode is Enable (--feature-gates=<feature>=true) or Disable (=false, the default).
	// +kubebuilder:default:=Disable
	// +kubebuilder:validation:Enum:=Enable;Disable
	// +optional
	Mode FeatureGateModeType `json:"mode,omitempty"`
}

// FeatureGateModeType is the mode of a FeatureGate.
type FeatureGateModeType string

const (
	// FeatureGateModeTypeEnable turns the feature on.
	FeatureGateModeTypeEnable FeatureGateModeType = "Enable"
	// FeatureGateModeTypeDisable turns the feature off.
	FeatureGateModeTypeDisable FeatureGateModeType = "Disable"
)

// NodePlacement says where the Pods of the deployed components may be scheduled.
type NodePlacement struct {
	// nodeSelector the Nodes must match; empty means any Node.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations the Pods carry; empty means none.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// InstallMode is how a cluster manager or klusterlet is deployed.
type InstallMode string

const (
	// InstallModeDefault deploys the cluster manager on the hub and the klusterlet on the
	// managed cluster it serves.
	InstallModeDefault InstallMode = "Default"
	// InstallModeHosted runs the controllers on a separate management cluster; only the
	// CRDs and configuration live on the hub or managed cluster, reached through the
	// external-hub-kubeconfig or external-managed-kubeconfig secret.
	InstallModeHosted InstallMode = "Hosted"
	// InstallModeSingleton runs the klusterlet's registration and work agents as one
	// deployment.
	InstallModeSingleton InstallMode = "Singleton"
	// InstallModeSingletonHosted is Singleton with the deployment on a management cluster.
	InstallModeSingletonHosted InstallMode = "SingletonHosted"
)

// ResourceRequirement sets the resources of every container of the deployed components.
type ResourceRequirement struct {
	// type chooses the QoS class: Default (the components' own requests, no limits),
	// BestEffort (no requests or limits) or ResourceRequirement (resourceRequirements).
	// +kubebuilder:validation:Enum=Default;BestEffort;ResourceRequirement
	// +kubebuilder:default:=Default
	Type ResourceQosClass `json:"type"`

	// resourceRequirements are the requests and limits used when type is ResourceRequirement.
	// +optional
	ResourceRequirements *corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
}

// ResourceQosClass is the type of a ResourceRequirement.
type ResourceQosClass string

const (
	// ResourceQosClassDefault keeps the requests of the components' manifests, without limits.
	ResourceQosClassDefault ResourceQosClass = "Default"
	// ResourceQosClassBestEffort sets neither requests nor limits.
	ResourceQosClassBestEffort ResourceQosClass = "BestEffort"
	// ResourceQosClassResourceRequirement uses ResourceRequirement.ResourceRequirements.
	ResourceQosClassResourceRequirement ResourceQosClass = "ResourceRequirement"
)

// RelatedResourceMeta names one object the operator manages for a ClusterManager or Klusterlet.
type RelatedResourceMeta struct {
	// group of the object's resource.
	// +required
	Group string `json:"group"`

	// version of the object's resource.
	// +required
	Version string `json:"version"`

	// resource is the object's resource (plural, lower case).
	// +required
	Resource string `json:"resource"`

	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace"`

	// name of the object.
	// +required
	Name string `json:"name"`
}

// GenerationStatus records the generation of an object the operator last applied, so
// that it can tell when the object was changed behind its back. It has the shape of
// OpenShift's GenerationStatus.
type GenerationStatus struct {
	// group of the object's resource.
	// +required
	Group string `json:"group"`

	// version of the object's resource.
	// +required
	Version string `json:"version"`

	// resource is the object's resource (plural, lower case).
	// +required
	Resource string `json:"resource"`

	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace"`

	// name of the object.
	// +required
	Name string `json:"name"`

	// lastGeneration is the object's metadata.generation after the operator last applied it.
	// +required
	LastGeneration int64 `json:"lastGeneration"`
}
