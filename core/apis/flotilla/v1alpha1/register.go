package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "flotilla.dev", Version: "v1alpha1"}

	// SchemeBuilder collects the kinds of this package for a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme registers WasmPlugin and ManifestWorkReplicaSetOverride with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func init() {
	SchemeBuilder.Register(&WasmPlugin{}, &WasmPluginList{},
		&ManifestWorkReplicaSetOverride{}, &ManifestWorkReplicaSetOverrideList{})
}

// Resource returns the group-qualified resource for name, e.g. "wasmplugins".
func Resource(name string) schema.GroupResource {
	return GroupVersion.WithResource(name).GroupResource()
}
