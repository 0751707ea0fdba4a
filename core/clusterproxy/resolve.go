package clusterproxy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
)

// ServicesConfigMapName is the ConfigMap the hub keeps in each cluster's namespace (where the
// cluster-proxy add-on is enabled) listing the Services that ManagedProxyServiceResolvers
// expose on that cluster: one key per ServiceHost, valued "<namespace>/<name>". The hub
// computes it, so the cluster's agent needs read on this one ConfigMap only, not on every
// resolver and cluster set of the fleet.
const ServicesConfigMapName = "cluster-proxy-services"

// ResolverProblem says why r is not a legal resolver (naming the field), or "" when it is.
// Upstream's legality (a selector type other than ManagedClusterSet/ServiceRef, or an unset
// managedClusterSet/serviceRef), plus names that no Service or set can have.
func ResolverProblem(r *proxyv1alpha1.ManagedProxyServiceResolver) string {
	mcs, svc := r.Spec.ManagedClusterSelector, r.Spec.ServiceSelector
	switch {
	case mcs.Type != proxyv1alpha1.ManagedClusterSelectorTypeClusterSet:
		return fmt.Sprintf("spec.managedClusterSelector.type %q is not supported (only %s)", mcs.Type, proxyv1alpha1.ManagedClusterSelectorTypeClusterSet)
	case mcs.ManagedClusterSet == nil:
		return "spec.managedClusterSelector.managedClusterSet is required"
	case mcs.ManagedClusterSet.Name == "":
		return "spec.managedClusterSelector.managedClusterSet.name is required"
	case svc.Type != proxyv1alpha1.ServiceSelectorTypeServiceRef:
		return fmt.Sprintf("spec.serviceSelector.type %q is not supported (only %s)", svc.Type, proxyv1alpha1.ServiceSelectorTypeServiceRef)
	case svc.ServiceRef == nil:
		return "spec.serviceSelector.serviceRef is required"
	}
	if errs := validation.IsDNS1123Label(svc.ServiceRef.Namespace); len(errs) > 0 {
		return fmt.Sprintf("spec.serviceSelector.serviceRef.namespace %q: %s", svc.ServiceRef.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(svc.ServiceRef.Name); len(errs) > 0 {
		return fmt.Sprintf("spec.serviceSelector.serviceRef.name %q: %s", svc.ServiceRef.Name, strings.Join(errs, "; "))
	}
	return ""
}

// ServicesData is the ServicesConfigMapName data for cluster exposing services.
func ServicesData(cluster string, services []types.NamespacedName) map[string]string {
	data := make(map[string]string, len(services))
	for _, s := range services {
		data[ServiceHost(cluster, s.Namespace, s.Name)] = s.Namespace + "/" + s.Name
	}
	return data
}

// ExposedService is the Service that data (a ServicesConfigMapName ConfigMap's) exposes at
// host, if any.
func ExposedService(data map[string]string, host string) (types.NamespacedName, bool) {
	v, ok := data[host]
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
