package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion identifies this package's API group and version.
var GroupVersion = schema.GroupVersion{Group: "cluster.open-cluster-management.io", Version: "v1alpha1"}

// SchemeGroupVersion is an alias of GroupVersion for client-go style callers.
var SchemeGroupVersion = GroupVersion

var (
	// SchemeBuilder collects the functions that add this version's kinds to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this version's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource qualifies a bare resource name (for example "clusterclaims") with this group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

// addKnownTypes registers every kind of this version, together with the meta/v1
// option types (ListOptions, DeleteOptions, ...) the API machinery needs.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&ClusterClaim{},
		&ClusterClaimList{},
		&AddOnPlacementScore{},
		&AddOnPlacementScoreList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
