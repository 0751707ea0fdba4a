package clusterproxy_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	coreclusterproxy "github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/tunnel"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	agentclusterproxy "github.com/flotilla-dev/flotilla/klusterlet/addon/clusterproxy"
)

// agentConfig is the hub identity of cluster's cluster-proxy agent (its add-on registration's
// default subject), reaching the hub API server at host.
func agentConfig(cluster string) *rest.Config {
	GinkgoHelper()
	cfg, err := hubCP.UserConfig("system:open-cluster-management:cluster:"+cluster+":addon:cluster-proxy:agent:proxy-agent",
		coreclusterproxy.AgentGroup(cluster), "system:open-cluster-management:addon:cluster-proxy")
	Expect(err).NotTo(HaveOccurred())
	return cfg
}

// healthLog records an agent's Healthy reports.
type healthLog struct {
	mu      sync.Mutex
	changes []bool
}

func (h *healthLog) set(v bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.changes); n == 0 || h.changes[n-1] != v {
		h.changes = append(h.changes, v)
	}
}

func (h *healthLog) get() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.changes...)
}

// runKlusterletAgent runs the klusterlet's cluster-proxy agent for cluster until the spec ends.
func runKlusterletAgent(cluster string, hubConfig *rest.Config) *healthLog {
	GinkgoHelper()
	h := &healthLog{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&agentclusterproxy.Agent{RetryInitial: 200 * time.Millisecond, RetryMax: time.Second}).Run(ctx, addon.BuiltinEnv{
			ClusterName: cluster, HubConfig: hubConfig, ManagedConfig: hubCP.Config, // the hub stands in for the managed cluster
			Healthy: h.set, Logger: log.WithName("agent").WithValues("cluster", cluster)})
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(20*time.Second).Should(Receive(BeNil()), "waiting for the agent of %s to stop", cluster)
	})
	return h
}

// managedClient reaches the managed API server through cluster's tunnel as the hub admin.
func managedClient(cluster string) kubernetes.Interface {
	cfg := rest.CopyConfig(hubCP.Config)
	cfg.Host = "https://" + cluster + ":443"
	cfg.ServerName = "kubernetes.default.svc"
	cfg.Dial = func(ctx context.Context, _, address string) (net.Conn, error) {
		return server.DialCluster(ctx, cluster, address)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

var _ = Describe("The cluster-proxy tunnel", func() {
	It("carries requests from the hub to the managed API server through the hub API server, and comes back after its stream is cut", SpecTimeout(3*time.Minute), func(ctx SpecContext) {
		const cluster = "tunnel-a"
		clusterNamespace(ctx, cluster, coreclusterproxy.AgentGroup(cluster))
		u, err := url.Parse(hubCP.URL)
		Expect(err).NotTo(HaveOccurred())
		fwd := startForwarder(u.Host)
		cfg := agentConfig(cluster)
		cfg.Host = "https://" + fwd.l.Addr().String()
		connects := metricValue(clusterproxy.AgentConnectsMetric, map[string]string{"cluster": cluster})
		health := runKlusterletAgent(cluster, cfg)

		Eventually(func() bool { ok, _ := server.Connected(cluster); return ok }).WithContext(ctx).WithTimeout(time.Minute).
			Should(BeTrue(), "waiting for the agent of %s to connect through the tunnel API", cluster)
		Eventually(health.get).WithContext(ctx).WithTimeout(10*time.Second).Should(Equal([]bool{true}), "waiting for the agent to report healthy")
		managed := managedClient(cluster)
		ns, err := managed.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "GET through the tunnel")
		Expect(ns.Name).To(Equal("default"))
		Expect(metricValue(clusterproxy.BytesMetric, map[string]string{"cluster": cluster, "direction": "from_cluster"})).To(BeNumerically(">", 0))
		Expect(metricValue(clusterproxy.AgentStreamsMetric, map[string]string{"cluster": cluster})).To(Equal(1.0))

		By("cutting the agent's connection to the hub API server")
		Expect(fwd.kill()).To(BeNumerically(">=", 1))
		Eventually(health.get).WithContext(ctx).WithTimeout(time.Minute).Should(And(ContainElement(false),
			WithTransform(func(c []bool) bool { return c[len(c)-1] }, BeTrue())),
			"waiting for the agent to report the cut stream and reconnect")
		Eventually(func() bool { ok, _ := server.Connected(cluster); return ok }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(metricValue(clusterproxy.AgentConnectsMetric, map[string]string{"cluster": cluster})).To(BeNumerically(">=", connects+2))
		Eventually(func(ctx context.Context) error {
			_, err := managedClient(cluster).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "GET through the tunnel after the reconnect")
	})

	It("does not let an agent of one cluster open another cluster's tunnel", SpecTimeout(2*time.Minute), func(ctx SpecContext) {
		const a, b = "tunnel-b1", "tunnel-b2"
		clusterNamespace(ctx, a, coreclusterproxy.AgentGroup(a))
		clusterNamespace(ctx, b, coreclusterproxy.AgentGroup(b))
		cfg := agentConfig(a)
		upgrade := func(cluster string) *tunnel.UpgradeError {
			GinkgoHelper()
			conn, err := tunnel.DialUpgrade(ctx, cfg, coreclusterproxy.TunnelPath(cluster))
			if err == nil {
				conn.Close()
			}
			var ue *tunnel.UpgradeError
			Expect(errors.As(err, &ue)).To(BeTrue(), "upgrading %s's tunnel as %s's agent: %v", cluster, a, err)
			return ue
		}

		By("hub RBAC refuses it when nothing grants it")
		ue := upgrade(b)
		Expect(ue.Status).To(Equal(http.StatusForbidden))
		Expect(ue.Body).To(ContainSubstring(`cannot create resource \"tunnels/proxy\" in API group \"proxy.flotilla.dev\" in the namespace \"tunnel-b2\"`))

		By("the tunnel API refuses it even when RBAC grants it")
		rb, err := kube.RbacV1().RoleBindings(b).Get(ctx, "cluster-proxy-tunnel", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		rb.Subjects = append(rb.Subjects, rb.Subjects[0])
		rb.Subjects[1].Name = coreclusterproxy.AgentGroup(a)
		_, err = kube.RbacV1().RoleBindings(b).Update(ctx, rb, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return upgrade(b).Status }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Equal(http.StatusForbidden))
		Eventually(func() string { return upgrade(b).Body }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(ContainSubstring("may not open the cluster-proxy tunnel of cluster "+b+": not in group "+coreclusterproxy.AgentGroup(b)),
				"waiting for RBAC to let the request through to the tunnel API's own check")

		By("an agent configured for the other cluster never connects")
		runKlusterletAgent(b, cfg)
		Consistently(func() bool { ok, _ := server.Connected(b); return ok }).WithContext(ctx).WithTimeout(3 * time.Second).Should(BeFalse())
	})
})
