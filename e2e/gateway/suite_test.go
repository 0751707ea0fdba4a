// Package gateway is the end-to-end suite of reaching managed clusters from the hub (issue 23,
// the seeds' scenario 8): a real hub and two real managed clusters (e2e/internal/fleettest),
// the hub serving the built-in add-ons cluster-proxy, managed-serviceaccount and
// cluster-gateway, and in-process klusterlets running their agents. Requests go through the
// hub API server: the aggregator, the hub's gateway, the cluster-proxy tunnel, the managed
// API server as the ServiceAccount cluster-gateway.
package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/e2e/internal/testproxy"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Cluster gateway e2e")
}

const (
	cluster1 = "cluster1"
	cluster2 = "cluster2"
	// addonLeaseSeconds: an add-on whose Lease is not renewed is unavailable 5 s later.
	addonLeaseSeconds = 1
)

var (
	suiteCtx  context.Context
	env       *fleettest.Env
	hubClient client.Client
	hubKube   kubernetes.Interface
	agents    = map[string]*fleettest.Klusterlet{}
	// klusterletOpts are what each klusterlet was started with, to start it again.
	klusterletOpts = map[string]klusterlet.Options{}
	// proxy is the HTTP CONNECT proxy cluster2's klusterlet, and so its add-on agents, reach
	// the hub through (its bootstrap kubeconfig's proxy-url).
	proxy *testproxy.Proxy
)

// On a failed spec, the add-ons' status on the hub goes to the report.
var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() || hubClient == nil {
		return
	}
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := hubClient.List(suiteCtx, list); err == nil {
		for i := range list.Items {
			b, _ := yaml.Marshal(list.Items[i].Status)
			AddReportEntry("ManagedClusterAddOn "+list.Items[i].Namespace+"/"+list.Items[i].Name, string(b))
		}
	}
	services := &unstructured.UnstructuredList{}
	services.SetAPIVersion("apiregistration.k8s.io/v1")
	services.SetKind("APIServiceList")
	if err := hubClient.List(suiteCtx, services); err == nil {
		for _, s := range services.Items {
			if group, _, _ := unstructured.NestedString(s.Object, "spec", "group"); group != "" && !strings.HasSuffix(group, ".k8s.io") {
				st, _ := yaml.Marshal(s.Object["status"])
				AddReportEntry("APIService "+s.GetName(), string(st))
			}
		}
	}
})

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithTimeout(context.Background(), 25*time.Minute)
	DeferCleanup(cancel)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)

	env = fleettest.Start(suiteCtx, fleettest.Options{
		// A simulated Node per cluster, KWOK answering exec, logs and port-forward of its Pods
		// as a kubelet would (upgrade_test.go).
		Environment: environment.Options{ManagedClusters: 2, SimulatedNodes: 1, PodDebugging: true},
		// The ProxyService frontend too, for konnectivity clients (resolver_test.go).
		Hub: manager.Options{Addons: builtin.Names(), ClusterProxyBindAddress: "127.0.0.1:0"},
	})
	hubClient, hubKube = env.HubClient, env.HubKube
	proxy = testproxy.Start()
	DeferCleanup(proxy.Close)
	names := []string{}
	for i, cp := range env.Fleet.Managed {
		name := environment.ManagedClusterName(i)
		opts := klusterlet.Options{
			Registration: registration.Config{ClusterName: name, ManagedConfig: cp.Config, LeaseDurationSeconds: 2},
			AddOn:        klusterlet.AddOnOptions{LeaseDurationSeconds: addonLeaseSeconds},
		}
		if name == cluster2 {
			opts.Registration.BootstrapKubeconfig = withProxy(env.BootstrapKubeconfig, proxy.URL)
		}
		klusterletOpts[name] = opts
		agents[name] = env.StartKlusterlet(opts)
		names = append(names, name)
	}
	Eventually(func(g Gomega) {
		_, err := admin.Accept(suiteCtx, hubClient, hubKube, names)
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "clusters %v accepted", names)
	for _, name := range names {
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed(), "cluster %s Joined", name)
	}
	// As `flotilla addon enable cluster-proxy managed-serviceaccount cluster-gateway
	// --clusters cluster1,cluster2` does, once the hub has created the add-ons.
	Eventually(func() error {
		_, err := admin.EnableAddons(suiteCtx, hubClient, admin.AddonEnable{Names: builtin.Names(), Clusters: names})
		return err
	}).Should(Succeed(), "add-ons %v enabled on %v", builtin.Names(), names)
}, NodeTimeout(6*time.Minute))

// ---- helpers ----

// gatewayConfig is a client config for cluster's API server through the hub's gateway, made
// as `flotilla kubeconfig --cluster` makes it from the hub's kubeconfig.
func gatewayConfig(cluster string) *rest.Config {
	GinkgoHelper()
	hub, err := clientcmd.LoadFromFile(env.Fleet.Hub.KubeconfigPath)
	Expect(err).NotTo(HaveOccurred())
	kc, err := admin.GatewayKubeconfig(hub, cluster)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 20 * time.Second
	return cfg
}

// healthz GETs cluster's /healthz through the hub API server and the gateway, as the seeds'
// `kubectl get --raw=".../clustergateways/<cluster>/proxy/healthz"`.
// An error is the Status the server answered (DoRaw would not decode it).
func healthz(ctx context.Context, cluster string) (string, error) {
	res := hubKube.Discovery().RESTClient().Get().AbsPath(admin.GatewayPath(cluster) + "/healthz").Do(ctx)
	if err := res.Error(); err != nil {
		return "", err
	}
	b, err := res.Raw()
	return string(b), err
}

// mcaAvailable is a function for Eventually: cluster's add-on name's Available status.
func mcaAvailable(ctx context.Context, cluster, name string) func(g Gomega) metav1.ConditionStatus {
	return func(g Gomega) metav1.ConditionStatus {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, m)).To(Succeed())
		c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
		g.Expect(c).NotTo(BeNil(), "condition Available of %s/%s", cluster, name)
		return c.Status
	}
}

// withProxy is kubeconfig with proxyURL as every cluster's proxy-url.
func withProxy(kubeconfig []byte, proxyURL string) []byte {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.ProxyURL = proxyURL
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// rawJSON marshals o for a ManifestWork's manifests.
func rawJSON(o any) runtime.RawExtension {
	b, err := json.Marshal(o)
	Expect(err).NotTo(HaveOccurred())
	return runtime.RawExtension{Raw: b}
}

// stopKlusterlet stops cluster's klusterlet and returns what starts it again; a spec that
// fails before calling it has the klusterlet started by its cleanup.
func stopKlusterlet(cluster string) (restart func()) {
	agents[cluster].Stop()
	restarted := false
	restart = func() {
		agents[cluster] = env.StartKlusterlet(klusterletOpts[cluster])
		restarted = true
	}
	DeferCleanup(func(ctx SpecContext) {
		if !restarted {
			restart()
		}
	}, NodeTimeout(time.Minute))
	return restart
}
