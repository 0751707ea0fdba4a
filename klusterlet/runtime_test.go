package klusterlet_test

import (
	"context"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	hublease "github.com/flotilla-dev/flotilla/hub/registration/lease"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// replica is one running klusterlet.
type replica struct {
	agent  *klusterlet.Agent
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed
}

// stop stops the replica and returns Run's error.
func (r *replica) stop() error {
	r.cancel()
	Eventually(r.done).Should(BeClosed())
	return r.err
}

// get GETs path from the replica's endpoint at addr and returns the status and body.
func get(addr func() string, path string) func(g Gomega) (int, string) {
	return func(g Gomega) (int, string) {
		a := addr()
		g.Expect(a).NotTo(BeEmpty(), "the endpoint listens")
		resp, err := http.Get("http://" + a + path)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
}

func (r *replica) probe(path string) func(g Gomega) (int, string) {
	return get(func() string {
		if a := r.agent.HealthProbeAddr(); a != nil {
			return a.String()
		}
		return ""
	}, path)
}

func (r *replica) metrics() func(g Gomega) (int, string) {
	return get(func() string {
		if a := r.agent.MetricsAddr(); a != nil {
			return a.String()
		}
		return ""
	}, "/metrics")
}

func statusOf(f func(g Gomega) (int, string)) func(g Gomega) int {
	return func(g Gomega) int {
		code, _ := f(g)
		return code
	}
}

// startReplica runs a klusterlet with opts, its endpoints on free loopback ports.
func startReplica(opts klusterlet.Options) *replica {
	GinkgoHelper()
	r := &opts.Registration
	r.ManagedConfig = fleet.Managed[0].Config
	r.RetryInitial, r.RetryMax = 200*time.Millisecond, 2*time.Second
	r.Logger = logger.WithName(opts.LeaderElection.Identity).WithValues("cluster", r.ClusterName)
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "127.0.0.1:0", "127.0.0.1:0"
	a, err := klusterlet.New(opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(suiteCtx)
	rep := &replica{agent: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(rep.done)
		rep.err = a.Run(ctx)
	}()
	DeferCleanup(func() { _ = rep.stop() })
	return rep
}

// electedOptions are a replica's for cluster, with leader election on short timings.
func electedOptions(cluster, identity string) klusterlet.Options {
	return klusterlet.Options{
		Registration: registration.Config{ClusterName: cluster, BootstrapKubeconfig: bootstrapKubeconfig, LeaseDurationSeconds: 2},
		LeaderElection: klusterlet.LeaderElection{Enabled: true, Identity: identity,
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 300 * time.Millisecond},
	}
}

func electionLease(g Gomega) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{}
	g.Expect(managedAdmin.Get(suiteCtx, client.ObjectKey{Namespace: registration.DefaultAgentNamespace, Name: klusterlet.DefaultLeaderElectionName}, lease)).To(Succeed())
	return lease
}

func holder(g Gomega) string {
	return ptr.Deref(electionLease(g).Spec.HolderIdentity, "")
}

// clusterCSRs are the registration CSRs of cluster on the hub.
func clusterCSRs(g Gomega, cluster string) []certificatesv1.CertificateSigningRequest {
	list := &certificatesv1.CertificateSigningRequestList{}
	g.Expect(hubClient.List(suiteCtx, list, client.MatchingLabels{clusterv1.ClusterNameLabelKey: cluster})).To(Succeed())
	return list.Items
}

func managedCluster(g Gomega, name string) *clusterv1.ManagedCluster {
	mc := &clusterv1.ManagedCluster{}
	g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
	return mc
}

var _ = Describe("klusterlet replicas with leader election", Ordered, func() {
	const cluster = "cluster1"
	var a, b *replica

	BeforeAll(func() {
		// Started here, the replicas outlive each spec (until the container ends).
		a = startReplica(electedOptions(cluster, "replica-a"))
		Eventually(a.agent.Leading).Should(BeTrue())
		b = startReplica(electedOptions(cluster, "replica-b"))
	})

	It("run the agents in the Lease's holder only, and serve health and metrics on every replica", func() {
		Eventually(holder).Should(Equal("replica-a"))
		Eventually(statusOf(a.probe("/readyz"))).Should(Equal(http.StatusOK), "the leader has read its bootstrap kubeconfig")
		Eventually(statusOf(b.probe("/readyz"))).Should(Equal(http.StatusOK), "a standby is ready")
		Eventually(statusOf(b.probe("/healthz"))).Should(Equal(http.StatusOK))
		Consistently(b.agent.Leading, "2s").Should(BeFalse(), "the standby waits while the leader holds the Lease")
		Expect(holder(Default)).To(Equal("replica-a"))

		Eventually(func(g Gomega) {
			_, err := admin.Accept(suiteCtx, hubClient, hubKube, []string{cluster})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(managedCluster(g, cluster).Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed())
		csrs := clusterCSRs(Default, cluster)
		Expect(csrs).To(HaveLen(1), "only the leader registered")
		Expect(a.agent.Registration.State().AgentName).NotTo(BeEmpty())
		Expect(b.agent.Registration.State().AgentName).To(BeEmpty(), "the standby's registration agent never ran")

		By("the leader's metrics: Go's runtime, the election, and the work agent's controllers")
		Eventually(func(g Gomega) {
			code, body := a.metrics()(g)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("go_goroutines "))
			g.Expect(body).To(ContainSubstring("process_start_time_seconds "))
			// Its value is not checked: both replicas of this process share the gauge.
			g.Expect(body).To(ContainSubstring(`leader_election_master_status{name="open-cluster-management-agent/klusterlet-agent-lock"}`))
			g.Expect(body).To(MatchRegexp(`controller_runtime_reconcile_total\{controller="work-manifestwork"`))
		}).Should(Succeed())
		code, body := b.metrics()(Default)
		Expect(code).To(Equal(http.StatusOK), "the standby serves metrics too")
		Expect(body).To(ContainSubstring("go_goroutines "))
	})

	It("hands over when the leader stops: the standby reuses the hub kubeconfig secret and the cluster stays joined", func() {
		stored, err := registration.ReadHubSecret(suiteCtx, managedKube.CoreV1(), registration.DefaultAgentNamespace, registration.DefaultHubKubeconfigSecret)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.AgentName).To(Equal(a.agent.Registration.State().AgentName))
		uid := managedCluster(Default, cluster).UID

		Expect(a.stop()).To(Succeed(), "a clean stop is no error")
		stopped := time.Now()
		Expect(a.agent.Leading()).To(BeFalse())
		// Released on stop: the takeover does not wait out the lease duration.
		Eventually(b.agent.Leading, "3s").Should(BeTrue())
		Expect(holder(Default)).To(Equal("replica-b"))

		Eventually(func(g Gomega) {
			st := b.agent.Registration.State()
			g.Expect(st.Phase).To(Equal(registration.PhaseConnected))
			g.Expect(st.Joined).To(BeTrue())
			g.Expect(st.AgentName).To(Equal(stored.AgentName), "the stored identity, not a new one")
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: hublease.Name}, lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
			g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", stopped), "the new leader renews the cluster's heartbeat")
		}).Should(Succeed())
		mc := managedCluster(Default, cluster)
		Expect(mc.UID).To(Equal(uid), "the same ManagedCluster")
		Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		Expect(clusterCSRs(Default, cluster)).To(HaveLen(1), "no new registration")
		Eventually(statusOf(b.probe("/readyz"))).Should(Equal(http.StatusOK))
	})

	It("stops the agents and fails when the leader cannot renew its Lease", func() {
		// Another holder takes the Lease over, as after a partition outlasting the lease.
		Eventually(func(g Gomega) {
			lease := electionLease(g)
			lease.Spec.HolderIdentity = ptr.To("intruder")
			lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			g.Expect(managedAdmin.Update(suiteCtx, lease)).To(Succeed())
		}).Should(Succeed())
		Eventually(b.done, "10s").Should(BeClosed())
		Expect(b.err).To(MatchError(klusterlet.ErrLeaderElectionLost))
		Expect(b.agent.Leading()).To(BeFalse())
		Expect(holder(Default)).To(Equal("intruder"))
	})
})

var _ = Describe("klusterlet readiness", func() {
	It("waits until registration has read a bootstrap kubeconfig", func() {
		const ns = "readiness-agent"
		// No bootstrap kubeconfig given: the agent reads the secret, missing so far.
		r := startReplica(klusterlet.Options{Registration: registration.Config{ClusterName: "cluster-readiness", AgentNamespace: ns}})
		Eventually(statusOf(r.probe("/healthz"))).Should(Equal(http.StatusOK))
		Eventually(func(g Gomega) string {
			code, body := r.probe("/readyz?verbose")(g)
			g.Expect(code).To(Equal(http.StatusInternalServerError))
			return body
		}).Should(ContainSubstring("[-]klusterlet failed"))
		Consistently(statusOf(r.probe("/readyz")), "2s").Should(Equal(http.StatusInternalServerError))

		Eventually(func() error {
			return managedAdmin.Get(suiteCtx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		}).Should(Succeed(), "the agent makes its namespace")
		Expect(managedAdmin.Create(suiteCtx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: registration.DefaultBootstrapKubeconfigSecret},
			Data:       map[string][]byte{registration.KubeconfigKey: bootstrapKubeconfig},
		})).To(Succeed())
		Eventually(statusOf(r.probe("/readyz"))).Should(Equal(http.StatusOK))
		Expect(r.stop()).To(Succeed())
	})

	It("rejects leader election timings client-go would refuse", func() {
		_, err := klusterlet.New(klusterlet.Options{
			Registration:   registration.Config{ClusterName: "x", ManagedConfig: fleet.Managed[0].Config},
			LeaderElection: klusterlet.LeaderElection{Enabled: true, LeaseDuration: 2 * time.Second, RenewDeadline: 3 * time.Second},
		})
		Expect(err).To(MatchError(ContainSubstring("must exceed the renew deadline")))
	})
})
