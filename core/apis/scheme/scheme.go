// Package scheme assembles the runtime.Scheme every Flotilla client and
// controller uses: the built-in Kubernetes kinds plus all Flotilla API groups.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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

// groups lists every API group version Flotilla serves, with its AddToScheme.
var groups = []struct {
	name string
	add  func(*runtime.Scheme) error
}{
	{"client-go kubernetes", clientgoscheme.AddToScheme},
	{"cluster.open-cluster-management.io/v1", clusterv1.AddToScheme},
	{"cluster.open-cluster-management.io/v1beta1", clusterv1beta1.AddToScheme},
	{"cluster.open-cluster-management.io/v1beta2", clusterv1beta2.AddToScheme},
	{"cluster.open-cluster-management.io/v1alpha1", clusterv1alpha1.AddToScheme},
	{"work.open-cluster-management.io/v1", workv1.AddToScheme},
	{"work.open-cluster-management.io/v1alpha1", workv1alpha1.AddToScheme},
	{"addon.open-cluster-management.io/v1alpha1", addonv1alpha1.AddToScheme},
	{"addon.open-cluster-management.io/v1beta1", addonv1beta1.AddToScheme},
	{"operator.open-cluster-management.io/v1", operatorv1.AddToScheme},
	{"proxy.open-cluster-management.io/v1alpha1", proxyv1alpha1.AddToScheme},
	{"authentication.open-cluster-management.io/v1beta1", authenticationv1beta1.AddToScheme},
	{"authentication.open-cluster-management.io/v1alpha1", authenticationv1alpha1.AddToScheme},
	{"cluster.core.oam.dev/v1alpha1", clustergatewayv1alpha1.AddToScheme},
	{"flotilla.dev/v1alpha1", flotillav1alpha1.AddToScheme},
}

// AddToScheme registers the Kubernetes built-in kinds and every Flotilla API
// group version with s. Where a group has two versions, the storage version, which the
// controllers use, is preferred: add-on v1alpha1 over v1beta1, ManagedServiceAccount
// v1beta1 over the deprecated v1alpha1.
func AddToScheme(s *runtime.Scheme) error {
	for _, g := range groups {
		if err := g.add(s); err != nil {
			return fmt.Errorf("adding %s to scheme: %w", g.name, err)
		}
	}
	if err := s.SetVersionPriority(addonv1alpha1.GroupVersion, addonv1beta1.GroupVersion); err != nil {
		return err
	}
	return s.SetVersionPriority(authenticationv1beta1.GroupVersion, authenticationv1alpha1.GroupVersion)
}

// New returns a fresh scheme holding everything AddToScheme registers.
// Registration of these static types cannot fail short of a programming error
// (two packages claiming the same kind), so New panics in that case.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
