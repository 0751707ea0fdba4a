package scheme

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	addonv1beta1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1beta1"
	authenticationv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1alpha1"
	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	proxyv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/proxy/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

func TestNewRegistersEveryGroup(t *testing.T) {
	s := New()
	for _, gv := range []schema.GroupVersion{
		corev1.SchemeGroupVersion,
		clusterv1.GroupVersion, clusterv1beta1.GroupVersion, clusterv1beta2.GroupVersion, clusterv1alpha1.GroupVersion,
		workv1.GroupVersion, workv1alpha1.GroupVersion,
		addonv1alpha1.GroupVersion, addonv1beta1.GroupVersion,
		operatorv1.GroupVersion,
		flotillav1alpha1.GroupVersion,
		proxyv1alpha1.GroupVersion,
		authenticationv1beta1.GroupVersion, authenticationv1alpha1.GroupVersion,
		clustergatewayv1alpha1.GroupVersion,
	} {
		if !s.IsVersionRegistered(gv) {
			t.Errorf("%s is not registered", gv)
		}
	}
}

func TestClusterKindsRoundTripThroughScheme(t *testing.T) {
	s := New()
	objs := []runtime.Object{
		&clusterv1.ManagedCluster{}, &clusterv1.ManagedClusterList{},
		&clusterv1beta1.Placement{}, &clusterv1beta1.PlacementList{},
		&clusterv1beta1.PlacementDecision{}, &clusterv1beta1.PlacementDecisionList{},
		&clusterv1beta2.ManagedClusterSet{}, &clusterv1beta2.ManagedClusterSetList{},
		&clusterv1beta2.ManagedClusterSetBinding{}, &clusterv1beta2.ManagedClusterSetBindingList{},
		&clusterv1alpha1.ClusterClaim{}, &clusterv1alpha1.ClusterClaimList{},
		&clusterv1alpha1.AddOnPlacementScore{}, &clusterv1alpha1.AddOnPlacementScoreList{},
	}
	for _, o := range objs {
		gvks, _, err := s.ObjectKinds(o)
		if err != nil {
			t.Errorf("%T: %v", o, err)
			continue
		}
		if len(gvks) != 1 || gvks[0].Group != "cluster.open-cluster-management.io" {
			t.Errorf("%T registered as %v, want exactly one cluster.open-cluster-management.io kind", o, gvks)
			continue
		}
		n, err := s.New(gvks[0])
		if err != nil {
			t.Errorf("%s: %v", gvks[0], err)
			continue
		}
		if got, want := typeName(n), typeName(o); got != want {
			t.Errorf("%s creates %s, want %s", gvks[0], got, want)
		}
	}
}

func TestNewReturnsIndependentSchemes(t *testing.T) {
	a, b := New(), New()
	extra := schema.GroupVersion{Group: "example.flotilla.dev", Version: "v1"}
	a.AddKnownTypes(extra, &corev1.ConfigMap{})
	if b.IsVersionRegistered(extra) {
		t.Fatal("registering a type in one scheme leaked into another")
	}
}

func TestAddToSchemeTwiceIsHarmless(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(s); err != nil {
		t.Fatalf("second AddToScheme: %v", err)
	}
}

func typeName(o runtime.Object) string {
	return fmt.Sprintf("%T", o)
}

// TestAddOnV1alpha1IsPreferred: both add-on versions are registered, and v1alpha1, the
// storage version the controllers use, comes first.
func TestAddOnV1alpha1IsPreferred(t *testing.T) {
	s := New()
	got := s.PrioritizedVersionsForGroup(addonv1alpha1.GroupVersion.Group)
	if len(got) != 2 || got[0] != addonv1alpha1.GroupVersion || got[1] != addonv1beta1.GroupVersion {
		t.Fatalf("add-on versions by priority: %v, want v1alpha1 then v1beta1", got)
	}
	for _, tc := range []struct {
		obj  runtime.Object
		want schema.GroupVersion
	}{
		{&addonv1alpha1.ManagedClusterAddOn{}, addonv1alpha1.GroupVersion},
		{&addonv1beta1.ManagedClusterAddOn{}, addonv1beta1.GroupVersion},
		{&addonv1beta1.AddOnTemplate{}, addonv1beta1.GroupVersion},
	} {
		gvks, _, err := s.ObjectKinds(tc.obj)
		if err != nil || len(gvks) != 1 || gvks[0].GroupVersion() != tc.want {
			t.Errorf("%T registered as %v (%v), want %s", tc.obj, gvks, err, tc.want)
		}
	}
}

// TestAddOnAPIKinds: the kinds of the cluster-proxy, managed-serviceaccount and
// cluster-gateway APIs are registered under their upstream group, version and kind, and
// ManagedServiceAccount v1beta1, the storage version, is preferred over the deprecated
// v1alpha1.
func TestAddOnAPIKinds(t *testing.T) {
	s := New()
	for _, tc := range []struct {
		obj  runtime.Object
		want schema.GroupVersionKind
	}{
		{&proxyv1alpha1.ManagedProxyConfiguration{}, proxyv1alpha1.GroupVersion.WithKind("ManagedProxyConfiguration")},
		{&proxyv1alpha1.ManagedProxyConfigurationList{}, proxyv1alpha1.GroupVersion.WithKind("ManagedProxyConfigurationList")},
		{&proxyv1alpha1.ManagedProxyServiceResolver{}, proxyv1alpha1.GroupVersion.WithKind("ManagedProxyServiceResolver")},
		{&proxyv1alpha1.ManagedProxyServiceResolverList{}, proxyv1alpha1.GroupVersion.WithKind("ManagedProxyServiceResolverList")},
		{&authenticationv1beta1.ManagedServiceAccount{}, authenticationv1beta1.GroupVersion.WithKind("ManagedServiceAccount")},
		{&authenticationv1beta1.ManagedServiceAccountList{}, authenticationv1beta1.GroupVersion.WithKind("ManagedServiceAccountList")},
		{&authenticationv1alpha1.ManagedServiceAccount{}, authenticationv1alpha1.GroupVersion.WithKind("ManagedServiceAccount")},
		{&clustergatewayv1alpha1.ClusterGateway{}, clustergatewayv1alpha1.GroupVersion.WithKind("ClusterGateway")},
		{&clustergatewayv1alpha1.ClusterGatewayList{}, clustergatewayv1alpha1.GroupVersion.WithKind("ClusterGatewayList")},
		{&clustergatewayv1alpha1.ClusterGatewayProxyOptions{}, clustergatewayv1alpha1.GroupVersion.WithKind("ClusterGatewayProxyOptions")},
	} {
		gvks, _, err := s.ObjectKinds(tc.obj)
		if err != nil || len(gvks) != 1 || gvks[0] != tc.want {
			t.Errorf("%T registered as %v (%v), want %s", tc.obj, gvks, err, tc.want)
		}
	}
	group := authenticationv1beta1.GroupVersion.Group
	got := s.PrioritizedVersionsForGroup(group)
	if len(got) != 2 || got[0] != authenticationv1beta1.GroupVersion || got[1] != authenticationv1alpha1.GroupVersion {
		t.Fatalf("%s versions by priority: %v, want v1beta1 then v1alpha1", group, got)
	}
}
