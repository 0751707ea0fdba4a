package clusterproxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	coreclusterproxy "github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/clusterproxy"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// TestTunnelAPI runs the specs against a real kube-apiserver: agents reach the Server through
// the hub API server's aggregated tunnel API.
func TestTunnelAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cluster-proxy tunnel through the hub API server")
}

// tunnelRole may open tunnels (what hub/addon grants the agent group in its cluster's namespace).
const tunnelRole = "open-cluster-management:cluster-proxy:tunnel"

var (
	hubCP  *environment.ControlPlane
	kube   kubernetes.Interface
	server *clusterproxy.Server
	log    logr.Logger
)

var _ = BeforeSuite(func(ctx SpecContext) {
	log = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1})
	var err error
	hubCP, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hubCP.Stop)
	kube = kubernetes.NewForConfigOrDie(hubCP.Config)

	server, err = clusterproxy.NewServer(clusterproxy.Options{Logger: log.WithName("clusterproxy")})
	Expect(err).NotTo(HaveOccurred())
	web, err := webhook.New(hubCP.Config, webhook.Options{ConfigurationName: "cluster-proxy-test", SecretName: "cluster-proxy-test-certs", Logger: log.WithName("webhook")})
	Expect(err).NotTo(HaveOccurred())
	Expect(web.RegisterAPIService(server.APIService())).To(Succeed())
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { defer GinkgoRecover(); Expect(server.Start(runCtx)).To(Succeed()) })
	wg.Go(func() { defer GinkgoRecover(); Expect(web.Start(runCtx)).To(Succeed()) })
	DeferCleanup(func() { cancel(); wg.Wait() })
	Eventually(web.Ready()).WithTimeout(time.Minute).Should(BeClosed(), "waiting for the webhook server to be ready")

	_, err = kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: tunnelRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{coreclusterproxy.TunnelAPIGroup}, Resources: []string{"tunnels/proxy"},
			ResourceNames: []string{coreclusterproxy.TunnelName}, Verbs: []string{"create", "get"}}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	dyn := dynamic.NewForConfigOrDie(hubCP.Config)
	name := coreclusterproxy.TunnelAPIVersion + "." + coreclusterproxy.TunnelAPIGroup
	Eventually(func(g Gomega, ctx context.Context) {
		obj, err := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))), "conditions: %v", conds)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "waiting for APIService %s to become Available", name)
})

// clusterNamespace creates the hub namespace of cluster with the tunnel Role bound to groups.
func clusterNamespace(ctx context.Context, cluster string, groups ...string) {
	GinkgoHelper()
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(kube.CoreV1().Namespaces().Delete(ctx, cluster, metav1.DeleteOptions{})).To(Succeed())
	})
	bindTunnel(ctx, cluster, groups...)
}

// bindTunnel binds the tunnel role to groups in namespace ns.
func bindTunnel(ctx context.Context, ns string, groups ...string) {
	GinkgoHelper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-proxy-tunnel", Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tunnelRole}}
	for _, g := range groups {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// forwarder forwards TCP connections to target until killed: a network path the specs can cut.
type forwarder struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func startForwarder(target string) *forwarder {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	f := &forwarder{l: l, target: target}
	DeferCleanup(func() { _ = l.Close(); f.kill() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return f
}

// kill closes every forwarded connection and reports how many there were.
func (f *forwarder) kill() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	n := len(f.conns) / 2
	f.conns = nil
	return n
}

// metricValue is the value of the series of metric name with labels, 0 if absent.
func metricValue(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
