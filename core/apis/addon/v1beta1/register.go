package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "addon.open-cluster-management.io", Version: "v1beta1"}

	// SchemeBuilder collects the kinds of this package for a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme registers the add-on kinds with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(
		&ClusterManagementAddOn{}, &ClusterManagementAddOnList{},
		&ManagedClusterAddOn{}, &ManagedClusterAddOnList{},
		&AddOnDeploymentConfig{}, &AddOnDeploymentConfigList{},
		&AddOnTemplate{}, &AddOnTemplateList{},
	)
}

// Resource returns the group-qualified resource for name, e.g. "managedclusteraddons".
func Resource(name string) schema.GroupResource {
	return GroupVersion.WithResource(name).GroupResource()
}
