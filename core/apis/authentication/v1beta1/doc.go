// Package v1beta1 holds the authentication.open-cluster-management.io/v1beta1 API of OCM's
// managed-serviceaccount add-on: ManagedServiceAccount, a ServiceAccount on one managed
// cluster (the one whose namespace on the hub holds the object) whose token the add-on
// agent projects back into a hub Secret of the same name and rotates before it expires.
//
// v1beta1 is the storage version and the version Flotilla's controllers use.
// authentication.open-cluster-management.io/v1alpha1 is served beside it, deprecated, with
// the same schema, so the API server converts between them by rewriting apiVersion
// (conversion None), as upstream does.
//
// Field names, JSON names, defaults and validation follow managed-serviceaccount v0.10.0.
// Unlike upstream's Go type, rotation.enabled is omitempty, so that objects built in Go get
// its default (true). rotation.validity cannot be: objects built in Go must set it, or "0s"
// is stored instead of the default.
//
// +kubebuilder:object:generate=true
// +groupName=authentication.open-cluster-management.io
package v1beta1
