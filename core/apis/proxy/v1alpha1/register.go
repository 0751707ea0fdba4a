package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "proxy.open-cluster-management.io", Version: "v1alpha1"}

	// SchemeBuilder collects the kinds of this package for a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme registers ManagedProxyConfiguration and ManagedProxyServiceResolver with a
	// scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(
		&ManagedProxyConfiguration{}, &ManagedProxyConfigurationList{},
		&ManagedProxyServiceResolver{}, &ManagedProxyServiceResolverList{},
	)
}

// Resource returns the group-qualified resource for name, e.g. "managedproxyconfigurations".
func Resource(name string) schema.GroupResource {
	return GroupVersion.WithResource(name).GroupResource()
}
