package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WasmPluginType names the extension point a plugin implements. It decides which
// exports the module must define (see sdk/abi).
// +kubebuilder:validation:Enum=Prioritizer;CSRApproval;FeedbackExtractor;AddOnTemplate;ManifestTransformer
type WasmPluginType string

const (
	// PluginTypePrioritizer scores candidate clusters for Placements (exports declare_inputs, score).
	PluginTypePrioritizer WasmPluginType = "Prioritizer"
	// PluginTypeCSRApproval decides on cluster registration CSRs (export review_csr).
	PluginTypeCSRApproval WasmPluginType = "CSRApproval"
	// PluginTypeFeedbackExtractor extracts ManifestWork status feedback (export extract_feedback).
	PluginTypeFeedbackExtractor WasmPluginType = "FeedbackExtractor"
	// PluginTypeAddOnTemplate renders add-on manifests per cluster (export render_addon).
	PluginTypeAddOnTemplate WasmPluginType = "AddOnTemplate"
	// PluginTypeManifestTransformer transforms ManifestWorkReplicaSet manifests per cluster
	// for override rules (export transform_manifest).
	PluginTypeManifestTransformer WasmPluginType = "ManifestTransformer"
)

// FailurePolicy says what users of a plugin do when it is not Ready or a call fails.
// +kubebuilder:validation:Enum=Fail;Ignore
type FailurePolicy string

const (
	// FailurePolicyFail makes the operation that needed the plugin fail (and retry later).
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore skips the plugin, as if it were not configured.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// Source keys accepted in a ConfigMap; the suffix selects the decompressor.
const (
	SourceKeyWasm     = "plugin.wasm"
	SourceKeyWasmZstd = "plugin.wasm.zst"
	SourceKeyWasmGzip = "plugin.wasm.gz"
)

// WasmPluginSource says where the module bytes come from. Exactly one member is set;
// today that is configMap, and remote sources (oci, https) are meant to become further
// members, which the one-property rule already accommodates.
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:MaxProperties=1
type WasmPluginSource struct {
	// configMap reads the module from a key of a ConfigMap on the hub (binaryData or data).
	// +optional
	ConfigMap *ConfigMapSource `json:"configMap,omitempty"`
}

// ConfigMapSource references a module stored in a ConfigMap. A ConfigMap holds at most
// 1 MiB, so larger modules should be stored zstd-compressed (plugin.wasm.zst).
type ConfigMapSource struct {
	// namespace of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Namespace string `json:"namespace"`
	// name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// key holding the module. The suffix selects the encoding: .wasm (raw),
	// .wasm.zst (zstd) or .wasm.gz (gzip).
	// +kubebuilder:default=plugin.wasm
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]*\.wasm(\.zst|\.gz)?$`
	// +optional
	Key string `json:"key,omitempty"`
}

// WasmPluginLimits bounds one plugin's resources. Values above the hub-wide maxima are
// clamped to them; the Ready condition's message says so.
type WasmPluginLimits struct {
	// memory is the most linear memory one instance may use (e.g. 64Mi). A call that
	// needs more fails with MemoryLimit. Defaults to the hub default (64Mi).
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// timeout bounds one call (e.g. 500ms). Defaults to the hub default (2s).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// WasmPluginSpec is the desired plugin.
type WasmPluginSpec struct {
	// type is the extension point this plugin implements.
	// +required
	Type WasmPluginType `json:"type"`
	// source of the module.
	// +required
	Source WasmPluginSource `json:"source"`
	// sha256 is the hex SHA-256 of the uncompressed module. When set, a module with any
	// other digest is refused (Ready=False, reason DigestMismatch).
	// +kubebuilder:validation:Pattern=`^[a-fA-F0-9]{64}$`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// pluginConfig is free-form JSON handed to the plugin as the Extism config key
	// "pluginConfig" and, when the module exports validate_config, validated at load.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	PluginConfig *apiextensionsv1.JSON `json:"pluginConfig,omitempty"`
	// failurePolicy says what users do when the plugin is not Ready or a call fails:
	// Fail (the default) fails the operation, Ignore skips the plugin. ManifestTransformer
	// plugins do not use it: a failed transform always fails the cluster's render.
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// limits on memory and call time, bounded by hub-wide maxima.
	// +optional
	Limits *WasmPluginLimits `json:"limits,omitempty"`
}

// ConditionReady is true while a module loaded from the current spec serves calls.
const ConditionReady = "Ready"

// Reasons of the Ready condition. They match core/wasm's LoadReason values.
const (
	ReasonLoaded         = "Loaded"
	ReasonSourceNotFound = "SourceNotFound"
	ReasonDigestMismatch = "DigestMismatch"
	ReasonInvalidModule  = "InvalidModule"
	ReasonMissingExport  = "MissingExport"
	ReasonConfigRejected = "ConfigRejected"
	ReasonTooLarge       = "TooLarge"
	ReasonInvalidSpec    = "InvalidSpec"
)

// WasmPluginStatus is what the hub loaded.
type WasmPluginStatus struct {
	// conditions: Ready, with one of the reasons above.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// digest is the hex SHA-256 of the uncompressed module that is loaded.
	// +optional
	Digest string `json:"digest,omitempty"`
	// shortDigest is the first 12 characters of digest, for display.
	// +optional
	ShortDigest string `json:"shortDigest,omitempty"`
	// size of the uncompressed module in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// abiVersion the module reported through flotilla_abi_version (1 when it has none).
	// +optional
	ABIVersion int32 `json:"abiVersion,omitempty"`
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// WasmPlugin registers a sandboxed Wasm module for one Flotilla extension point.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wp,categories=flotilla
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Digest",type=string,JSONPath=`.status.shortDigest`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WasmPlugin struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WasmPluginSpec `json:"spec"`
	// +optional
	Status WasmPluginStatus `json:"status,omitempty"`
}

// WasmPluginList is a list of WasmPlugins.
// +kubebuilder:object:root=true
type WasmPluginList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WasmPlugin `json:"items"`
}
