package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	coreapply "github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/operator"
)

func TestHubOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Hub operator suite")
}

// The hub's Deployment, as the chart names it. The hub's control plane runs the workload
// controllers, kube-scheduler and KWOK with one simulated Node, so the Deployment's status
// is the one kube-controller-manager writes. It starts with a nodeSelector no Node matches:
// its Pod stays Pending, the Deployment rolling, until a spec lifts it (unschedulable).
var deployment = types.NamespacedName{Namespace: "open-cluster-management-hub", Name: "flotilla-hub"}

// unschedulable is the nodeSelector that keeps the hub's Pod Pending.
var unschedulable = map[string]string{"flotilla.dev/test-node": "none"}

// specTimeout bounds each spec (and node), so a wait that never ends fails the spec,
// naming it, instead of hanging the suite until go test's timeout.
const specTimeout = 4 * time.Minute

var (
	hubClient client.WithWatch
	// hubConfig reaches the control plane (the hub operator's specs run an operator on it).
	hubConfig *rest.Config
	logs      *operatorruntest.Logs
	// runHubDone closes when RunHub returns.
	runHubDone chan struct{}
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger, l := operatorruntest.NewLogger(GinkgoWriter)
	logs = l
	ctrllog.SetLogger(logger)
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true,
		Workloads: true, SimulatedNodes: 1, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	hubConfig = cp.Config
	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubClient, err = client.NewWithWatch(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deployment.Namespace}})).To(Succeed())
	labels := map[string]string{"app": "flotilla-hub"}
	Expect(hubClient.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: unschedulable, Containers: []corev1.Container{{Name: "hub", Image: "ghcr.io/flotilla-dev/flotilla:0.1.0"}}}},
		},
	})).To(Succeed())

	// The flags: the replica set controller is on by default; the suite's cluster sets are its own.
	gates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	Expect(gates.Set("DefaultClusterSet=false")).To(Succeed())
	// Restarts compile the built-in plugins once. The temporary directory is made here, in the
	// node: Ginkgo refuses it from the goroutine once the node is over.
	pluginCache := GinkgoT().TempDir()
	runCtx, stop := context.WithCancel(context.Background())
	runHubDone = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(runHubDone)
		Expect(operator.RunHub(runCtx, operator.Options{
			Hub: manager.Options{
				Config: cp.Config, FeatureGates: gates, Logger: logger.WithName("hub"),
				// The hub installs the CRDs, as it does in production (status.relatedResources lists
				// them).
				PluginCacheDir: pluginCache,
			},
			ClusterManagerName: "cluster-manager",
			Deployment:         deployment,
			MinBackoff:         100 * time.Millisecond,
			MaxBackoff:         time.Second,
		})).To(Succeed())
	}()
	DeferCleanup(func() {
		stop()
		Eventually(runHubDone).Should(BeClosed())
	})
}, NodeTimeout(3*time.Minute))

// ---- objects ----

// create creates the YAML objects. It tries again while the hub's webhooks do not answer: a
// hub restarting leaves them down for a moment.
func create(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Eventually(func() error {
			return client.IgnoreAlreadyExists(hubClient.Create(ctx, u.DeepCopy()))
		}).Should(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
	}
}

// fleet creates namespace ns with a cluster set bound to it, simulated clusters of that set
// (accepted, Available, their namespaces made) and a Placement "all" of them, and waits
// until the placement decided every cluster.
func fleet(ctx context.Context, ns string, clusters ...string) {
	GinkgoHelper()
	create(ctx, fmt.Sprintf(`{apiVersion: v1, kind: Namespace, metadata: {name: %s}}`, ns),
		fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta2, kind: ManagedClusterSet, metadata: {name: %s}}`, ns),
		fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta2, kind: ManagedClusterSetBinding, metadata: {name: %s, namespace: %s}, spec: {clusterSet: %s}}`, ns, ns, ns))
	for _, name := range clusters {
		Expect(client.IgnoreAlreadyExists(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: ns}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		Expect(hubClient.Create(ctx, mc)).To(Succeed())
		Expect(coreapply.Fields(ctx, hubClient, mc, "e2e-agent", true, map[string]any{"status": map[string]any{
			"conditions": []any{metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue,
				Reason: "Simulated", Message: "simulated agent", LastTransitionTime: metav1.Now()}},
		}})).To(Succeed())
	}
	create(ctx, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {name: all, namespace: %s}, spec: {clusterSets: [%s]}}`, ns, ns))
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cluster.open-cluster-management.io/v1beta1")
		u.SetKind("Placement")
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "all"}, u)).To(Succeed())
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "numberOfSelectedClusters")
		g.Expect(n).To(BeEquivalentTo(len(clusters)))
	}).Should(Succeed())
}

// replicaSet creates ManifestWorkReplicaSet ns/name of placement "all", rolled out to all
// clusters at once.
func replicaSet(ctx context.Context, ns, name string) {
	GinkgoHelper()
	create(ctx, fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: %s, namespace: %s}
spec:
  placementRefs: [{name: all, rolloutStrategy: {type: All}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default}, data: {a: b}}
`, name, ns, name))
}

// workClusters returns the clusters with a work of replica set ns/name.
func workClusters(ctx context.Context, ns, name string) []string {
	GinkgoHelper()
	list := &workv1.ManifestWorkList{}
	Expect(hubClient.List(ctx, list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ns + "." + name})).To(Succeed())
	out := []string{}
	for _, w := range list.Items {
		out = append(out, w.Namespace)
	}
	return out
}
