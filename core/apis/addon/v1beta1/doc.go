// Package v1beta1 holds the addon.open-cluster-management.io/v1beta1 API, served beside
// v1alpha1 as OCM serves it: ClusterManagementAddOn, ManagedClusterAddOn,
// AddOnDeploymentConfig and AddOnTemplate.
//
// v1alpha1 stays the storage version and the version Flotilla's controllers use; the API
// server converts between the two through the hub's conversion webhook (hub/webhook), which
// calls the functions in conversion.go. The differences to v1alpha1:
//
//   - ClusterManagementAddOn: spec.supportedConfigs (kinds with an optional defaultConfig)
//     became spec.defaultConfigs (kind, namespace and name); a kind without a default is
//     written with the reserved name ReservedNoDefaultConfigName. The deprecated
//     spec.addOnConfiguration is gone (carried in an annotation, see below);
//     status.defaultconfigReferences is spelled status.defaultConfigReferences.
//   - ManagedClusterAddOn: spec.installNamespace is gone and kept in the annotation
//     InstallNamespaceAnnotation; status.registrations say their type (kubeClient or
//     customSigner) instead of implying it by signer name, and a kubeClient registration
//     carries the driver v1alpha1 keeps in status.kubeClientDriver; the deprecated
//     status.addOnConfiguration and status.configReferences[].name/namespace are gone.
//   - AddOnDeploymentConfig and AddOnTemplate: unchanged.
//
// Conversion is lossless both ways: what one version cannot express travels in annotations
// of the other (ConversionAnnotationPrefix) and is restored, and the annotations removed,
// on the way back.
//
// Fields are optional in the CRD schema unless marked required, as in OCM's.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:Optional
// +groupName=addon.open-cluster-management.io
package v1beta1
