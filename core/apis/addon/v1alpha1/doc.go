// Package v1alpha1 holds the addon.open-cluster-management.io/v1alpha1 API:
// ClusterManagementAddOn (an add-on registered on the hub), ManagedClusterAddOn
// (the add-on enabled for one cluster), AddOnDeploymentConfig (per-deployment
// settings) and AddOnTemplate (an add-on described entirely by manifests).
//
// v1alpha1 is the storage version of every add-on kind and the version Flotilla's
// controllers use; addon.open-cluster-management.io/v1beta1 is served beside it through
// a conversion webhook (core/apis/addon/v1beta1, hub/webhook).
//
// Fields are optional in the CRD schema unless marked required, as in OCM's.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:Optional
// +groupName=addon.open-cluster-management.io
package v1alpha1
