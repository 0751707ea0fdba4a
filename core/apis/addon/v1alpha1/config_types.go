package v1alpha1

// Types shared by ClusterManagementAddOn and ManagedClusterAddOn to point at add-on
// configuration objects (AddOnDeploymentConfig, AddOnTemplate or an add-on's own
// configuration kind).

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
	// +kubebuilder:validation:MinLength:=1
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
	// +kubebuilder:validation:MinLength:=1
	Name string `json:"name"`
}

// ConfigSpecHash is a configuration object together with the hash of its spec,
// which is how a configuration change is detected.
type ConfigSpecHash struct {
	ConfigReferent `json:",inline"`

	// SpecHash is the hash of the configuration's spec.
	SpecHash string `json:"specHash"`
}

// ConfigMeta is a configuration kind an add-on supports, with an optional default
// object used by every ManagedClusterAddOn that does not override it.
type ConfigMeta struct {
	ConfigGroupResource `json:",inline"`

	// DefaultConfig is the configuration used when nothing more specific is set.
	// +optional
	DefaultConfig *ConfigReferent `json:"defaultConfig,omitempty"`
}

// AddOnConfig references one configuration object by kind, namespace and name.
type AddOnConfig struct {
	ConfigGroupResource `json:",inline"`

	ConfigReferent `json:",inline"`
}

// ConfigCoordinates locate the CRD and object configuring an add-on.
//
// Deprecated: superseded by supportedConfigs and configs.
type ConfigCoordinates struct {
	// CRDName is the CRD whose objects configure the add-on.
	// +optional
	CRDName string `json:"crdName,omitempty"`

	// CRName is the configuration object's name when it is the same on every cluster.
	// +optional
	CRName string `json:"crName,omitempty"`

	// LastObservedGeneration is the observed generation of that object.
	// +optional
	LastObservedGeneration int64 `json:"lastObservedGeneration,omitempty"`
}
