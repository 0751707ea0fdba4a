// Package v1alpha1 holds the addon.open-cluster-management.io/v1alpha1 API:
// ClusterManagementAddOn (an add-on registered on the hub), ManagedClusterAddOn
// (the add-on enabled for one cluster), AddOnDeploymentConfig (per-deployment
// settings) and AddOnTemplate (an add-on described entirely by manifests).
//
// +kubebuilder:object:generate=true
// +groupName=addon.open-cluster-management.io
package v1alpha1
