package clusterproxy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
)

func resolver(set *proxyv1alpha1.ManagedClusterSet, ref *proxyv1alpha1.ServiceRef) *proxyv1alpha1.ManagedProxyServiceResolver {
	return &proxyv1alpha1.ManagedProxyServiceResolver{Spec: proxyv1alpha1.ManagedProxyServiceResolverSpec{
		ManagedClusterSelector: proxyv1alpha1.ManagedClusterSelector{Type: proxyv1alpha1.ManagedClusterSelectorTypeClusterSet, ManagedClusterSet: set},
		ServiceSelector:        proxyv1alpha1.ServiceSelector{Type: proxyv1alpha1.ServiceSelectorTypeServiceRef, ServiceRef: ref},
	}}
}

func TestResolverProblem(t *testing.T) {
	set := &proxyv1alpha1.ManagedClusterSet{Name: "default"}
	ref := &proxyv1alpha1.ServiceRef{Namespace: "ns", Name: "svc"}
	wrongSetType := resolver(set, ref)
	wrongSetType.Spec.ManagedClusterSelector.Type = "Placement"
	wrongSvcType := resolver(set, ref)
	wrongSvcType.Spec.ServiceSelector.Type = "Label"
	for name, tc := range map[string]struct {
		r    *proxyv1alpha1.ManagedProxyServiceResolver
		want string // a substring of the problem; "" for legal
	}{
		"legal":                {resolver(set, ref), ""},
		"no serviceRef":        {resolver(set, nil), "spec.serviceSelector.serviceRef is required"},
		"no managedClusterSet": {resolver(nil, ref), "spec.managedClusterSelector.managedClusterSet is required"},
		"empty set name":       {resolver(&proxyv1alpha1.ManagedClusterSet{}, ref), "spec.managedClusterSelector.managedClusterSet.name is required"},
		"set selector type":    {wrongSetType, `spec.managedClusterSelector.type "Placement" is not supported`},
		"service selector":     {wrongSvcType, `spec.serviceSelector.type "Label" is not supported`},
		"bad namespace":        {resolver(set, &proxyv1alpha1.ServiceRef{Namespace: "Bad_NS", Name: "svc"}), `spec.serviceSelector.serviceRef.namespace "Bad_NS"`},
		"bad name":             {resolver(set, &proxyv1alpha1.ServiceRef{Namespace: "ns", Name: "1svc"}), `spec.serviceSelector.serviceRef.name "1svc"`},
	} {
		got := ResolverProblem(tc.r)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: ResolverProblem = %q, want %q", name, got, tc.want)
		}
	}
}

func TestServicesData(t *testing.T) {
	svc := types.NamespacedName{Namespace: "ns", Name: "svc"}
	data := ServicesData("cluster1", []types.NamespacedName{svc, svc, {Namespace: "ns", Name: "other"}})
	if len(data) != 2 {
		t.Fatalf("ServicesData: %d hosts, want 2: %v", len(data), data)
	}
	host := ServiceHost("cluster1", "ns", "svc")
	if got, ok := ExposedService(data, host); !ok || got != svc {
		t.Errorf("ExposedService(%s) = %v, %v; want %v", host, got, ok, svc)
	}
	// Another cluster's host for the same Service is not exposed here.
	if got, ok := ExposedService(data, ServiceHost("cluster2", "ns", "svc")); ok {
		t.Errorf("cluster2's host is exposed as %v on cluster1", got)
	}
	if _, ok := ExposedService(map[string]string{host: "no-slash"}, host); ok {
		t.Error("a malformed value is exposed")
	}
}
