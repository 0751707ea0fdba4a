// Package v1alpha1 holds authentication.open-cluster-management.io/v1alpha1
// ManagedServiceAccount, the deprecated version of
// authentication.open-cluster-management.io/v1beta1 (see that package). It is served, not
// stored; its schema equals v1beta1's, so the API server converts by rewriting apiVersion,
// and every request for this version gets upstream's deprecation warning.
//
// +kubebuilder:object:generate=true
// +groupName=authentication.open-cluster-management.io
package v1alpha1
