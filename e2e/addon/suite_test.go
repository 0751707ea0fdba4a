// Package addon is the end-to-end suite of add-on management: a real hub and two real
// managed clusters (etcd + kube-apiserver + kube-controller-manager each, a KWOK Node each so
// Deployments become Available), the hub with its add-on manager, and one in-process
// klusterlet per managed cluster (registration, add-on registration and health, work),
// brought up by e2e/internal/fleettest.
package addon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/e2e/internal/testproxy"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestAddOn(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Add-on e2e")
}

const (
	cluster1 = "cluster1"
	cluster2 = "cluster2"
	// statusSync keeps work status and feedback quick.
	statusSync   = time.Second
	leaseSeconds = 2
	// addonLeaseSeconds: an add-on whose Lease is not renewed is unavailable 5 s later.
	addonLeaseSeconds = 1
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	fleet       *environment.Fleet
	hubClient   client.Client
	scheme      *runtime.Scheme
	managed     = map[string]clusterClients{}
	proxy       *testproxy.Proxy
)

type clusterClients struct {
	client client.Client
	kube   kubernetes.Interface
}

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
})

var _ = BeforeSuite(func(ctx SpecContext) {
	// Requests on suiteCtx (helpers, cleanups) end before go test's -timeout 40m (Makefile) kills
	// the binary, so a blocked one fails naming what it waited for; specs bound theirs tighter.
	suiteCtx, suiteCancel = context.WithTimeout(context.Background(), 35*time.Minute)
	DeferCleanup(suiteCancel)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)

	// cluster2 reaches the hub through an HTTP CONNECT proxy named in its bootstrap
	// kubeconfig (seeds, scenarios §9): its add-ons' hub kubeconfigs must carry it too.
	proxy = testproxy.Start()
	DeferCleanup(proxy.Close)
	env := fleettest.Start(suiteCtx, fleettest.Options{
		Environment: environment.Options{ManagedClusters: 2, SimulatedNodes: 1},
		Hub:         manager.Options{PluginCacheDir: filepath.Join(os.TempDir(), "flotilla-e2e-addon-wasm-cache")},
		Klusterlet: func(string, *environment.ControlPlane) klusterlet.Options {
			return klusterlet.Options{
				Registration: registration.Config{LeaseDurationSeconds: leaseSeconds},
				Work:         klusterlet.WorkOptions{StatusSyncInterval: statusSync, EvictionGracePeriod: 5 * time.Second},
				AddOn:        klusterlet.AddOnOptions{LeaseDurationSeconds: addonLeaseSeconds},
			}
		},
		BootstrapKubeconfig: func(name string, kubeconfig []byte) []byte {
			if name == cluster2 {
				return withProxy(kubeconfig, proxy.URL)
			}
			return kubeconfig
		},
	})
	fleet, hubClient, scheme = env.Fleet, env.HubClient, env.Scheme
	for i, m := range fleet.Managed {
		c, err := client.New(m.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		managed[environment.ManagedClusterName(i)] = clusterClients{client: c, kube: kubernetes.NewForConfigOrDie(m.Config)}
	}
}, NodeTimeout(5*time.Minute))

// ---- helpers ----

// create creates objects on the hub (from YAML documents or typed), deleted after the spec.
func create(objs ...client.Object) {
	GinkgoHelper()
	for _, o := range objs {
		Expect(hubClient.Create(suiteCtx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(o) }, NodeTimeout(2*time.Minute))
	}
}

// deleteAndWait deletes o on the hub and waits until it is gone.
func deleteAndWait(o client.Object) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(hubClient.Delete(suiteCtx, o))).To(Succeed())
	Eventually(func() bool {
		cp := o.DeepCopyObject().(client.Object)
		return isNotFound(hubClient.Get(suiteCtx, client.ObjectKeyFromObject(o), cp))
	}).Should(BeTrue(), "%T %s is deleted", o, o.GetName())
}

func isNotFound(err error) bool { return err != nil && client.IgnoreNotFound(err) == nil }

// createFile creates the object of a YAML file of testdata (or of e2e/testdata/seeds with
// prefix seeds/) on the hub as written (unstructured: fields it leaves out stay out, for the
// API server to default), deleted after the spec.
func createFile(path string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	b, err := os.ReadFile(dataPath(path))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(b, &u.Object)).To(Succeed(), path)
	create(u)
	return u
}

func dataPath(path string) string {
	if rest, ok := cutPrefix(path, "seeds/"); ok {
		return filepath.Join("..", "testdata", "seeds", rest)
	}
	return filepath.Join("testdata", path)
}

// fromFile decodes a YAML file of testdata (or of e2e/testdata/seeds with prefix seeds/)
// into obj.
func fromFile(path string, obj client.Object) client.Object {
	GinkgoHelper()
	path = dataPath(path)
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(b, obj)).To(Succeed(), path)
	return obj
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

// mca reads ManagedClusterAddOn cluster/name.
func mca(g Gomega, cluster, name string) *addonv1alpha1.ManagedClusterAddOn {
	m := &addonv1alpha1.ManagedClusterAddOn{}
	g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: name}, m)).To(Succeed())
	return m
}

// mcaCondition is a function for Eventually returning condition t of cluster/name.
func mcaCondition(cluster, name, t string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		c := meta.FindStatusCondition(mca(g, cluster, name).Status.Conditions, t)
		g.Expect(c).NotTo(BeNil(), "condition %s of %s/%s", t, cluster, name)
		return c
	}
}

// cond matches a condition by status and reason.
func cond(status metav1.ConditionStatus, reason string) types.GomegaMatcher {
	return And(HaveField("Status", status), HaveField("Reason", reason))
}

// mcaGone waits until cluster/name does not exist.
func mcaGone(cluster, name string) func() bool {
	return func() bool {
		return isNotFound(hubClient.Get(suiteCtx, client.ObjectKey{Namespace: cluster, Name: name}, &addonv1alpha1.ManagedClusterAddOn{}))
	}
}

// onManaged reports whether obj (name/namespace set) exists on cluster.
func onManaged(cluster string, obj client.Object) func() bool {
	return func() bool {
		return managed[cluster].client.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj) == nil
	}
}

// enable creates ManagedClusterAddOn name in cluster's namespace (Manual install).
func enable(cluster, name string, configs ...addonv1alpha1.AddOnConfig) *addonv1alpha1.ManagedClusterAddOn {
	GinkgoHelper()
	m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: configs}}
	create(m)
	return m
}

// labelCluster sets (value != "") or removes a label of ManagedCluster cluster.
func labelCluster(cluster, key, value string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
		if value == "" {
			delete(mc.Labels, key)
		} else {
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels[key] = value
		}
		g.Expect(hubClient.Update(suiteCtx, mc)).To(Succeed())
	}).Should(Succeed())
}

// placement creates namespace ns with a binding to the default cluster set and a Placement
// selecting the clusters labelled key (any value), grouped by the label's values when
// groups are given.
func placement(ns, name, key string, groups ...string) {
	GinkgoHelper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	Expect(client.IgnoreAlreadyExists(hubClient.Create(suiteCtx, nsObj))).To(Succeed())
	Expect(client.IgnoreAlreadyExists(hubClient.Create(suiteCtx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"}}))).To(Succeed())
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1beta1.PlacementSpec{
			Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}}}},
			Tolerations: []clusterv1beta1.Toleration{{Key: "cluster.open-cluster-management.io/unreachable", Operator: clusterv1beta1.TolerationOpExists}},
		}}
	for _, g := range groups {
		p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = append(p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups, clusterv1beta1.DecisionGroup{
			GroupName:       g,
			ClusterSelector: clusterv1beta1.GroupClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: g}}},
		})
	}
	create(p)
}

// withProxy returns kubeconfig with proxy-url set on its clusters.
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
