package seeds

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

func TestSeeds(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Seed examples e2e")
}

// cluster is one API server the suite talks to.
type cluster struct {
	name    string
	config  *rest.Config
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

var (
	fleet   *environment.Fleet
	hub     *cluster
	managed *cluster
	// agentKinds are the kinds served on managed clusters (ClusterClaim,
	// AppliedManifestWork); their seeds are applied there, everything else on the hub.
	agentKinds map[schema.GroupKind]bool
)

var _ = BeforeSuite(func(ctx SpecContext) {
	fleet = fleettest.Start(ctx, environment.Options{ManagedClusters: 1})
	hub = newCluster(fleet.Hub)
	managed = newCluster(fleet.Managed[0])

	all, err := crds.Objects()
	Expect(err).NotTo(HaveOccurred())
	agentKinds = map[schema.GroupKind]bool{}
	for _, crd := range all {
		for _, name := range environment.ManagedClusterCRDs {
			if crd.Name == name {
				agentKinds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = true
			}
		}
	}
	Expect(agentKinds).To(HaveLen(len(environment.ManagedClusterCRDs)))
}, NodeTimeout(5*time.Minute))

func newCluster(cp *environment.ControlPlane) *cluster {
	GinkgoHelper()
	httpClient, err := rest.HTTPClientFor(cp.Config)
	Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(cp.Config, httpClient)
	Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfigAndClient(cp.Config, httpClient)
	Expect(err).NotTo(HaveOccurred())
	return &cluster{name: cp.Name, config: cp.Config, dynamic: dyn, mapper: mapper}
}

// forKind returns the cluster that serves gk.
func forKind(gk schema.GroupKind) *cluster {
	if agentKinds[gk] {
		return managed
	}
	return hub
}

// suiteContext is for cleanups that must run even after the spec's context ended.
func suiteContext() context.Context { return context.Background() }
