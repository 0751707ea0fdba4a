// Package v1alpha1 holds the flotilla.dev/v1alpha1 API: Flotilla's own additions to the
// OCM API surface. WasmPlugin registers a sandboxed Wasm module for one extension point
// (placement prioritizer, CSR approval, status feedback extraction, add-on template);
// ManifestWorkReplicaSetOverride shapes a ManifestWorkReplicaSet's work per cluster.
//
// +kubebuilder:object:generate=true
// +groupName=flotilla.dev
package v1alpha1
