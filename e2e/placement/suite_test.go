// Package placement is the end-to-end suite of the placement controller: a real hub API
// server, the hub in-process as flotilla hub runs it (with its Wasm prioritizers), and
// simulated clusters as plain ManagedCluster objects with their status set.
package placement

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestPlacementE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Placement e2e")
}

var (
	controlPlane *environment.ControlPlane
	scheme       *runtime.Scheme
	hubClient    client.Client
	hub          *manager.Hub
	logger       logr.Logger
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	var err error
	controlPlane, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(controlPlane.Stop)
	scheme, err = manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubClient, err = client.New(controlPlane.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	gates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	// The suite's sets are its own: no default set relabelling clusters.
	Expect(gates.Set("DefaultClusterSet=false")).To(Succeed())
	hub, err = manager.New(manager.Options{
		Config: controlPlane.Config, FeatureGates: gates, SkipCRDInstall: true,
		Logger: logger.WithName("hub"),
	})
	Expect(err).NotTo(HaveOccurred())
	hubCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(hub.Start(hubCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(BeClosed())
	})
	Eventually(hub.Webhooks().Ready()).Should(BeClosed())
})

// apply creates the YAML objects (separated by ---), deleted after the spec.
func apply(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Expect(hubClient.Create(ctx, u)).To(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, u))).To(Succeed())
		})
	}
}

// namespace creates a namespace for one spec.
func namespace(ctx context.Context, name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(hubClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(hubClient.Delete(ctx, ns)).To(Succeed()) })
}

// cluster creates a simulated ManagedCluster with labels, claims and allocatable resources,
// deleted after the spec.
func cluster(ctx context.Context, name string, labels map[string]string, claims map[string]string, allocatable clusterv1.ResourceList) *clusterv1.ManagedCluster {
	GinkgoHelper()
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	Expect(hubClient.Create(ctx, c)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	})
	for k, v := range claims {
		c.Status.ClusterClaims = append(c.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
	}
	sort.Slice(c.Status.ClusterClaims, func(i, j int) bool { return c.Status.ClusterClaims[i].Name < c.Status.ClusterClaims[j].Name })
	c.Status.Allocatable = allocatable
	c.Status.Capacity = allocatable
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated"})
	Expect(hubClient.Status().Update(ctx, c)).To(Succeed())
	return c
}

// decided returns the clusters of a placement's decisions, in decision order.
func decided(ctx context.Context, namespace, placement string) []string {
	GinkgoHelper()
	list := &clusterv1beta1.PlacementDecisionList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return decisionIndex(list.Items[i].Name) < decisionIndex(list.Items[j].Name) })
	out := []string{}
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	return out
}

func decisionIndex(name string) int {
	var n int
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '-' {
			fmt.Sscanf(name[i+1:], "%d", &n)
			break
		}
	}
	return n
}

// placementOf reads a placement.
func placementOf(ctx context.Context, namespace, name string) *clusterv1beta1.Placement {
	GinkgoHelper()
	p := &clusterv1beta1.Placement{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p)).To(Succeed())
	return p
}
