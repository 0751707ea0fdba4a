// Package hubsplit runs the hub as several processes, each a subset of OCM's hub components
// (manager.Options.Run, `flotilla hub --components`), against one hub API server: together
// they do what the single-process hub does, and a stopped component stops only its own work.
package hubsplit

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestHubSplit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Split hub e2e")
}

var (
	suiteCtx context.Context
	env      *fleettest.Env
)

// The first process runs every component but the placement controller; the second (started
// and stopped by the specs) only that.
var others = sets.New(manager.RegistrationController, manager.RegistrationWebhook, manager.WorkWebhook,
	manager.WorkController, manager.AddonManager)

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithTimeout(context.Background(), 20*time.Minute)
	DeferCleanup(cancel)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	// One control plane (no managed clusters): the klusterlets run against the hub API server.
	env = fleettest.Start(suiteCtx, fleettest.Options{Hub: manager.Options{Run: others}})
	Eventually(env.Hub.Webhooks().Ready()).Should(BeClosed(), "the first process's webhooks serve")
}, NodeTimeout(5*time.Minute))

// process is a running hub process.
type process struct {
	hub    *manager.Hub
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *process) stop() {
	p.cancel()
	Eventually(p.done).Should(BeClosed(), "the hub process stops")
}

// startPlacement runs a hub process of the placement controller only, as
// `flotilla hub --components placement-controller` does (WaitForCRDs, New, Prepare, then the
// controllers).
func startPlacement() *process {
	GinkgoHelper()
	opts := manager.Options{
		Config: env.Fleet.Hub.Config, Run: sets.New(manager.PlacementController),
		Logger: env.Logger.WithName("placement-process"),
	}
	Expect(manager.WaitForCRDs(suiteCtx, opts)).To(Succeed())
	h, err := manager.New(opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(h.Webhooks()).To(BeNil(), "a placement-controller process serves no webhook")
	ctx, cancel := context.WithCancel(suiteCtx)
	p := &process{hub: h, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(p.done)
		Expect(h.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(p.stop)
	return p
}

// join runs a klusterlet for cluster name (its agent namespace its own, on the hub API
// server), accepts the cluster once it has registered and waits until it is Joined.
func join(name string) {
	GinkgoHelper()
	k := env.StartKlusterlet(klusterlet.Options{Registration: registration.Config{
		ClusterName: name, ManagedConfig: env.Fleet.Hub.Config, AgentNamespace: "agent-" + name,
	}})
	DeferCleanup(k.Stop)
	Eventually(func() error {
		_, err := admin.Accept(suiteCtx, env.HubClient, env.HubKube, []string{name})
		return err
	}).Should(Succeed(), "cluster %s registers and is accepted", name)
	Eventually(func(g Gomega) {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(env.HubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
	}).Should(Succeed(), "cluster %s is Joined", name)
}

// placementIn creates namespace ns bound to the default cluster set, and a Placement there.
func placementIn(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(env.HubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.HubClient.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterv1beta2.DefaultClusterSetName},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: clusterv1beta2.DefaultClusterSetName},
	})).To(Succeed())
	Expect(env.HubClient.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}})).To(Succeed())
}

// decided is the clusters of the decisions of Placement ns/all.
func decided(ctx context.Context, ns string) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &clusterv1beta1.PlacementDecisionList{}
		g.Expect(env.HubClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: "all"})).To(Succeed())
		out := []string{}
		for _, d := range list.Items {
			for _, cd := range d.Status.Decisions {
				out = append(out, cd.ClusterName)
			}
		}
		return out
	}
}

// work is a ManifestWork for cluster ns whose ConfigMap has a name, or not.
func work(ns, name string, named bool) *workv1.ManifestWork {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"split"}}`
	if !named {
		cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default"}}`
	}
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(cm)}}}}},
	}
}

var _ = Describe("a hub split into processes by component", func() {
	It("registers clusters, validates works and places across processes; without the placement process only placement stops", func(ctx SpecContext) {
		placementProcess := startPlacement()

		By("a cluster registers and is accepted, and a Placement gets its decision, the two processes working together")
		join("split-a")
		placementIn(ctx, "split-before")
		Eventually(decided(ctx, "split-before")).Should(ConsistOf("split-a"), "the placement process decides Placement split-before/all")

		By("with the placement process stopped, a new cluster still registers and ManifestWorks are still validated")
		placementProcess.stop()
		join("split-b")
		Expect(env.HubClient.Create(ctx, work("split-b", "valid", true))).To(Succeed())
		err := env.HubClient.Create(ctx, work("split-b", "unnamed", false))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the work webhook refuses a manifest without a name: %v", err)
		Expect(err).To(MatchError(ContainSubstring("spec.workload.manifests[0].metadata.name: Required value")))

		By("a new Placement gets no decision while no process runs the placement controller")
		placementIn(ctx, "split-after")
		Consistently(decided(ctx, "split-after"), "3s").Should(BeEmpty(), "no process decides Placement split-after/all")

		By("the placement process started again decides it")
		startPlacement()
		Eventually(decided(ctx, "split-after")).Should(ConsistOf("split-a", "split-b"), "the restarted placement process decides Placement split-after/all")
	}, SpecTimeout(5*time.Minute))
})
