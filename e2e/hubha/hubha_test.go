// Package hubha checks that several hub replicas can run against one hub API server with
// leader election: one runs the controllers, and another takes over when it stops.
package hubha

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

func TestHubHA(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Hub replicas e2e")
}

var env *hubtest.Env

var _ = BeforeSuite(func(ctx SpecContext) {
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	env = hubtest.StartControlPlane(context.Background())
}, NodeTimeout(5*time.Minute))

// replica is one running hub.
type replica struct {
	hub    *manager.Hub
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *replica) stop() {
	r.cancel()
	Eventually(r.done).Should(BeClosed())
}

func (r *replica) elected() bool {
	select {
	case <-r.hub.Manager().Elected():
		return true
	default:
		return false
	}
}

func startReplica(name string) *replica {
	GinkgoHelper()
	h, err := manager.New(manager.Options{
		Config: env.ControlPlane.Config, SkipCRDInstall: true, Logger: env.Logger.WithName(name),
		// Webhooks are every replica's, not elected: this suite is about the controllers.
		Webhook:        webhook.Options{Disabled: true},
		LeaderElection: manager.LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond},
	})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{hub: h, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		Expect(h.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(r.stop)
	return r
}

// clusterNamespaced creates ManagedCluster name and reports whether the hub's controllers
// made its namespace.
func clusterNamespaced(name string) func() error {
	Expect(env.Client.Create(context.Background(), &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
	return func() error {
		return env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Namespace{})
	}
}

var _ = Describe("hub replicas with --leader-elect", func() {
	It("run the controllers in one replica at a time, and hand over when it stops", func(ctx SpecContext) {
		a := startReplica("hub-a")
		Eventually(a.elected).Should(BeTrue())
		b := startReplica("hub-b")
		Consistently(b.elected, "2s").Should(BeFalse(), "the second replica waits while the first leads")
		lease := &coordinationv1.Lease{}
		Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: manager.DefaultLeaderElectionNamespace, Name: manager.DefaultLeaderElectionName}, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		Eventually(clusterNamespaced("ha-cluster1")).Should(Succeed(), "the leader's controllers run")

		a.stop()
		Eventually(b.elected, "10s").Should(BeTrue(), "the other replica takes over")
		Eventually(clusterNamespaced("ha-cluster2")).Should(Succeed(), "the new leader's controllers run")
	}, SpecTimeout(5*time.Minute))
})
