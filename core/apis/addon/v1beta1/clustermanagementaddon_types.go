package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clustermanagementaddons,scope=Cluster,shortName=cma;cmas
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="DISPLAY NAME",type=string,JSONPath=`.spec.addOnMeta.displayName`

// ClusterManagementAddOn registers an add-on with the hub. Its name is the name of
// every ManagedClusterAddOn enabling the add-on on a cluster, and deleting it
// uninstalls the add-on everywhere.
type ClusterManagementAddOn struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the add-on, its default configurations and where it is installed.
	// +required
	Spec ClusterManagementAddOnSpec `json:"spec"`

	// Status reports the configurations in effect and install progress.
	// +optional
	Status ClusterManagementAddOnStatus `json:"status,omitempty"`
}

// ClusterManagementAddOnSpec describes an add-on.
type ClusterManagementAddOnSpec struct {
	// AddOnMeta is display metadata.
	// +optional
	AddOnMeta AddOnMeta `json:"addOnMeta,omitempty"`

	// DefaultConfigs are the configuration kinds the add-on accepts, each with the
	// object used where nothing more specific is set. A kind without a default object
	// names ReservedNoDefaultConfigName.
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	DefaultConfigs []AddOnConfig `json:"defaultConfigs,omitempty"`

	// InstallStrategy says on which clusters ManagedClusterAddOns are created
	// automatically.
	// +optional
	// +kubebuilder:default={type: Manual}
	InstallStrategy InstallStrategy `json:"installStrategy,omitempty"`
}

// AddOnMeta is display metadata of an add-on.
type AddOnMeta struct {
	// DisplayName is the human-readable add-on name.
	// +optional
	DisplayName string `json:"displayName,omitempty"`

	// Description describes the add-on.
	// +optional
	Description string `json:"description,omitempty"`
}

// ConfigGroupResource is the group and resource of a configuration kind.
type ConfigGroupResource struct {
	// Group of the configuration kind; empty for the core group.
	// +optional
	// +kubebuilder:default=""
	Group string `json:"group"`

	// Resource is the plural resource name of the configuration kind.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Resource string `json:"resource"`
}

// ConfigReferent is the namespace and name of a configuration object.
type ConfigReferent struct {
	// Namespace of the configuration; empty for cluster-scoped configurations.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the configuration.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ConfigSpecHash is a configuration object together with the hash of its spec.
type ConfigSpecHash struct {
	ConfigReferent `json:",inline"`

	// SpecHash is the hash of the configuration's spec.
	SpecHash string `json:"specHash"`
}

// AddOnConfig references one configuration object by kind, namespace and name.
type AddOnConfig struct {
	ConfigGroupResource `json:",inline"`

	ConfigReferent `json:",inline"`
}

// Install strategy types.
const (
	// AddonInstallStrategyManual creates no ManagedClusterAddOn automatically.
	AddonInstallStrategyManual = "Manual"
	// AddonInstallStrategyPlacements creates a ManagedClusterAddOn for every cluster
	// selected by the strategy's placements.
	AddonInstallStrategyPlacements = "Placements"
)

// InstallStrategy says where an add-on is installed automatically.
type InstallStrategy struct {
	// Type is Manual or Placements.
	// +kubebuilder:validation:Enum=Manual;Placements
	// +kubebuilder:default:=Manual
	// +optional
	Type string `json:"type"`

	// Placements select the clusters for type Placements. A cluster selected by
	// several placements follows the last one listed.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	Placements []PlacementStrategy `json:"placements,omitempty"`
}

// PlacementRef is the namespace and name of a Placement.
type PlacementRef struct {
	// Namespace of the Placement.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`

	// Name of the Placement.
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PlacementStrategy installs the add-on on the clusters of one Placement, with the
// configurations and rollout strategy to use there.
type PlacementStrategy struct {
	PlacementRef `json:",inline"`

	// Configs override the default configurations for these clusters; a
	// ManagedClusterAddOn's own configs override them in turn.
	// +optional
	Configs []AddOnConfig `json:"configs,omitempty"`

	// RolloutStrategy is how a change of these configurations reaches the clusters.
	// +kubebuilder:default={type: All}
	// +optional
	RolloutStrategy clusterv1alpha1.RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// ClusterManagementAddOnStatus reports configurations and install progress.
type ClusterManagementAddOnStatus struct {
	// DefaultConfigReferences are the default configurations and their spec hashes.
	// +optional
	DefaultConfigReferences []DefaultConfigReference `json:"defaultConfigReferences,omitempty"`

	// InstallProgressions report, per placement, the configurations in effect and
	// the rollout state.
	// +optional
	InstallProgressions []InstallProgression `json:"installProgressions,omitempty"`
}

// InstallProgression is the rollout state of one placement.
type InstallProgression struct {
	PlacementRef `json:",inline"`

	// ConfigReferences are the configurations of this placement.
	// +optional
	ConfigReferences []InstallConfigReference `json:"configReferences,omitempty"`

	// Conditions describe the rollout, e.g. Progressing.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// DefaultConfigReference is a default configuration with its desired spec hash.
type DefaultConfigReference struct {
	ConfigGroupResource `json:",inline"`

	// DesiredConfig is the configuration and the spec hash to roll out.
	DesiredConfig *ConfigSpecHash `json:"desiredConfig"`
}

// InstallConfigReference tracks one configuration of a placement through a rollout.
type InstallConfigReference struct {
	ConfigGroupResource `json:",inline"`

	// DesiredConfig is the configuration and spec hash to roll out.
	DesiredConfig *ConfigSpecHash `json:"desiredConfig"`

	// LastKnownGoodConfig is the last configuration that rolled out successfully.
	LastKnownGoodConfig *ConfigSpecHash `json:"lastKnownGoodConfig"`

	// LastAppliedConfig is the configuration applied on every cluster of the
	// placement.
	LastAppliedConfig *ConfigSpecHash `json:"lastAppliedConfig"`
}

// +kubebuilder:object:root=true

// ClusterManagementAddOnList is a list of ClusterManagementAddOns.
type ClusterManagementAddOnList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the ClusterManagementAddOns.
	Items []ClusterManagementAddOn `json:"items"`
}
