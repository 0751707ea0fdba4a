package hosted

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// cli runs the flotilla CLI in-process as a user would type it and returns its standard
// output; its standard error goes to the spec's output.
func cli(ctx context.Context, args ...string) (string, error) {
	root := commands.NewRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(GinkgoWriter)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// joinArgs issues a join token on hub with `flotilla get token` and returns the join command
// it prints, as arguments, without its --cluster-name placeholder.
func joinArgs(ctx context.Context, hub *environment.ControlPlane) []string {
	GinkgoHelper()
	out, err := cli(ctx, "get", "token", "--kubeconfig", hub.KubeconfigPath)
	Expect(err).NotTo(HaveOccurred(), "flotilla get token on %s", hub.Name)
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "flotilla" && f[1] == "join" {
			i := slices.Index(f, "--cluster-name")
			Expect(i).To(BeNumerically(">", 0), "--cluster-name in %q", line)
			return append(f[1:i], f[i+2:]...)
		}
	}
	Fail(fmt.Sprintf("no join command in the output of flotilla get token on %s: %q", hub.Name, out))
	return nil
}

// agentLogs are the log files of the agent processes runAgents started.
var agentLogs struct {
	sync.Mutex
	paths []string
}

// runAgents runs the Deployments of the Klusterlet's agent namespace on the management
// cluster as processes, as a kubelet would, until the Deployments go or the calling
// container ends; only that namespace, so the other specs' Klusterlets (which have no hub)
// stay Deployments.
func runAgents(namespace string) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		_ = management.RunDeploymentsIn(ctx, namespace, flotillaBin, []string{"flotilla-klusterlet"}, "", func(format string, args ...any) {
			GinkgoWriter.Printf("management: "+format+"\n", args...)
			if strings.HasPrefix(format, "started ") && len(args) == 2 {
				if path, ok := args[1].(string); ok {
					agentLogs.Lock()
					agentLogs.paths = append(agentLogs.paths, path)
					agentLogs.Unlock()
				}
			}
		})
	}()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		Eventually(ctx, done).Should(BeClosed(), "the processes of %s to stop", namespace)
	}, NodeTimeout(time.Minute))
}

// dumpAgentLogs prints the last lines of every agent process's log.
func dumpAgentLogs() {
	agentLogs.Lock()
	defer agentLogs.Unlock()
	for _, path := range agentLogs.paths {
		data, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(GinkgoWriter, "---- last of %s ----\n%s\n", path, strings.Join(lines[max(0, len(lines)-60):], "\n"))
	}
}

// clusterCondition is condition typ of hub's ManagedCluster name.
func clusterCondition(ctx context.Context, hub client.Client, name, typ string) func(Gomega) metav1.ConditionStatus {
	return func(g Gomega) metav1.ConditionStatus {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		return c.Status
	}
}

// feedbackWork is ManifestWork name in namespace cluster, applying ConfigMap default/name
// with data color=value and reporting .data.color back as feedback "color".
func feedbackWork(cluster, name, value string) *workv1.ManifestWork {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"color": value}}
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: cm}}}},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "default", Name: name},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "color", Path: ".data.color"}}}},
			}},
		}}
}

// feedback is the String value of feedback name of the work's first manifest ("" while none).
func feedback(ctx context.Context, hub client.Client, cluster, work, name string) func(Gomega) string {
	return func(g Gomega) string {
		w := &workv1.ManifestWork{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: work}, w)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "ManifestWork %s/%s Applied: %v", cluster, work, w.Status.Conditions)
		for _, m := range w.Status.ResourceStatus.Manifests {
			for _, v := range m.StatusFeedbacks.Values {
				if v.Name == name && v.Value.String != nil {
					return *v.Value.String
				}
			}
		}
		return ""
	}
}

// workloads lists the Deployments and Pods of a cluster, all namespaces.
func workloads(ctx context.Context, cfg *environment.ControlPlane) []string {
	GinkgoHelper()
	dyn := dynamic.NewForConfigOrDie(cfg.Config)
	var out []string
	for _, gvr := range []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}, {Version: "v1", Resource: "pods"}} {
		l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range l.Items {
			out = append(out, gvr.Resource+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out
}

var appliedManifestWorks = workv1.GroupVersion.WithResource("appliedmanifestworks")

// appliedWorkNames lists the AppliedManifestWorks on the managed cluster (none when their CRD
// is gone).
func appliedWorkNames(ctx context.Context) func(Gomega) []string {
	return func(g Gomega) []string {
		l, err := dynamic.NewForConfigOrDie(managed.Config).Resource(appliedManifestWorks).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, o := range l.Items {
			out = append(out, o.GetName())
		}
		return out
	}
}

var _ = Describe("hosted agents as processes, on two hubs", Ordered, func() {
	const (
		cluster = "managed"
		// klA and klB are the Klusterlets (and agent namespaces) of hub A and hub B.
		klA, klB = "klusterlet-managed", "klusterlet-managed-hubb"
	)
	var mgmtBefore, managedBefore []string
	var once sync.Once

	BeforeAll(func(ctx SpecContext) {
		mgmtBefore, managedBefore = snapshot(ctx, management.Config), snapshot(ctx, managed.Config)
		runAgents(klA)
		runAgents(klB)
		// The management cluster's own klusterlet, the hosting cluster of the hosted add-on.
		runAgents(install.AgentNamespace)
	}, NodeTimeout(time.Minute))
	ReportAfterEach(func(r SpecReport) {
		if r.Failed() {
			once.Do(dumpAgentLogs)
		}
	})

	// join joins the managed cluster Hosted to hub as Klusterlet kl, runs its agents and
	// accepts it, and waits until the hub has it Joined and Available.
	join := func(ctx context.Context, hub *environment.ControlPlane, hubClient client.Client, kl string) {
		GinkgoHelper()
		args := append(joinArgs(ctx, hub), "--cluster-name", cluster, "--kubeconfig", management.KubeconfigPath,
			"--mode", "Hosted", "--managed-cluster-kubeconfig", managed.KubeconfigPath, "--klusterlet-name", kl, "--wait=false")
		_, err := cli(ctx, args...)
		Expect(err).NotTo(HaveOccurred(), "flotilla %s", strings.Join(args, " "))
		Eventually(ctx, func(g Gomega) []string {
			return deploymentNames(ctx, mgmtClient, kl)
		}).WithTimeout(waitTimeout).Should(Equal([]string{kl + "-registration-agent", kl + "-work-agent"}),
			"the operator renders the Hosted agents' Deployments in %s on the management cluster", kl)
		// Accepted again until Joined: the agent's CSR may come after its ManagedCluster.
		Eventually(ctx, func(g Gomega) {
			_, err := cli(ctx, "accept", "--clusters", cluster, "--kubeconfig", hub.KubeconfigPath)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(clusterCondition(ctx, hubClient, cluster, clusterv1.ManagedClusterConditionJoined)(g)).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(2*waitTimeout).WithPolling(2*time.Second).Should(Succeed(),
			"flotilla accept --clusters %s on %s, and ManagedCluster %s Joined", cluster, hub.Name, cluster)
		Eventually(ctx, clusterCondition(ctx, hubClient, cluster, clusterv1.ManagedClusterConditionAvailable)).WithTimeout(waitTimeout).
			Should(Equal(metav1.ConditionTrue), "ManagedCluster %s on %s Available", cluster, hub.Name)
		waitCondition(ctx, kl, operatorv1.ConditionReadyToApply, metav1.ConditionTrue, operatorv1.ReasonKlusterletPrepared)
	}

	It("joins the managed cluster to hub A in Hosted mode: Joined and Available, with nothing of Flotilla running on it", func(ctx SpecContext) {
		join(ctx, hubA, hubAClient, klA)
		Expect(workloads(ctx, managed)).To(BeEmpty(), "no Deployment or Pod on the managed cluster")
		_, err := mgmtKube.CoreV1().Secrets(klA).Get(ctx, registration.DefaultHubKubeconfigSecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the hub kubeconfig secret is on the management cluster, in %s", klA)
	}, SpecTimeout(specTimeout))

	It("applies hub A's ManifestWork on the managed cluster and reports its status feedback", func(ctx SpecContext) {
		Expect(hubAClient.Create(ctx, feedbackWork(cluster, "hosted-a", "blue"))).To(Succeed())
		Eventually(ctx, feedback(ctx, hubAClient, cluster, "hosted-a", "color")).WithTimeout(waitTimeout).
			Should(Equal("blue"), "ManifestWork %s/hosted-a Applied on hub A with feedback color=blue", cluster)
		_, err := managedKube.CoreV1().ConfigMaps("default").Get(ctx, "hosted-a", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the ConfigMap on the managed cluster")
		_, err = mgmtKube.CoreV1().ConfigMaps("default").Get(ctx, "hosted-a", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing applied on the management cluster: %v", err)
	}, SpecTimeout(specTimeout))

	It("reports a ClusterClaim created on the managed cluster and renews the lease on hub A", func(ctx SpecContext) {
		claims := dynamic.NewForConfigOrDie(managed.Config).Resource(schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1alpha1", Resource: "clusterclaims"})
		claim := map[string]any{"apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "ClusterClaim",
			"metadata": map[string]any{"name": "hosted.e2e.example.com"}, "spec": map[string]any{"value": "on-managed"}}
		Eventually(ctx, func() error {
			_, err := claims.Create(ctx, &unstructured.Unstructured{Object: claim}, metav1.CreateOptions{})
			return err
		}).WithTimeout(waitTimeout).Should(Succeed(), "creating ClusterClaim hosted.e2e.example.com on the managed cluster")
		DeferCleanup(func(ctx SpecContext) { _ = claims.Delete(ctx, "hosted.e2e.example.com", metav1.DeleteOptions{}) }, NodeTimeout(30*time.Second))
		Eventually(ctx, func(g Gomega) []clusterv1.ManagedClusterClaim {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubAClient.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
			return mc.Status.ClusterClaims
		}).WithTimeout(waitTimeout).Should(ContainElement(clusterv1.ManagedClusterClaim{Name: "hosted.e2e.example.com", Value: "on-managed"}),
			"the claim on ManagedCluster %s on hub A", cluster)

		renewed := func(g Gomega) time.Time {
			l := &coordinationv1.Lease{}
			g.Expect(hubAClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: registration.LeaseName}, l)).To(Succeed())
			g.Expect(l.Spec.RenewTime).NotTo(BeNil())
			return l.Spec.RenewTime.Time
		}
		var first time.Time
		Eventually(ctx, func(g Gomega) { first = renewed(g) }).Should(Succeed(), "the lease %s/%s on hub A", cluster, registration.LeaseName)
		Eventually(ctx, renewed).WithTimeout(2*waitTimeout).Should(BeTemporally(">", first), "the agent renews lease %s/%s on hub A", cluster, registration.LeaseName)
	}, SpecTimeout(specTimeout))

	It("runs a hosted add-on of the managed cluster on the management cluster (its hosting cluster, joined to hub A itself)", func(ctx SpecContext) {
		hostedAddOnSpec(ctx, cluster, klA)
	}, SpecTimeout(2*specTimeout))

	It("joins the same managed cluster to hub B under another Klusterlet: both hubs' works applied, no name shared", func(ctx SpecContext) {
		join(ctx, hubB, hubBClient, klB)
		waitCondition(ctx, klA, operatorv1.ConditionReadyToApply, metav1.ConditionTrue, operatorv1.ReasonKlusterletPrepared)
		Expect(hubBClient.Create(ctx, feedbackWork(cluster, "hosted-b", "green"))).To(Succeed())
		Eventually(ctx, feedback(ctx, hubBClient, cluster, "hosted-b", "color")).WithTimeout(waitTimeout).
			Should(Equal("green"), "ManifestWork %s/hosted-b Applied on hub B with feedback color=green", cluster)
		Expect(feedback(ctx, hubAClient, cluster, "hosted-a", "color")(Default)).To(Equal("blue"), "hub A's work stays applied")

		// Each hub's AppliedManifestWork carries its own hub's hash.
		var amws []string
		Eventually(ctx, func(g Gomega) []string {
			amws = appliedWorkNames(ctx)(g)
			return amws
		}).Should(ConsistOf(HaveSuffix("-hosted-a"), HaveSuffix("-hosted-b")), "an AppliedManifestWork per hub on the managed cluster")
		Expect(strings.TrimSuffix(amws[0], "-hosted-a")).NotTo(Equal(strings.TrimSuffix(amws[1], "-hosted-b")))
		for _, cfg := range []*environment.ControlPlane{management, managed} {
			ofA, ofB := labelled(ctx, cfg.Config, klA), labelled(ctx, cfg.Config, klB)
			Expect(ofA).NotTo(BeEmpty(), "objects of Klusterlet %s on %s", klA, cfg.Name)
			Expect(ofB).NotTo(BeEmpty(), "objects of Klusterlet %s on %s", klB, cfg.Name)
			shared := slices.DeleteFunc(slices.Clone(ofA), func(o string) bool { return !slices.Contains(ofB, o) })
			Expect(shared).To(BeEmpty(), "objects on %s that are both %s's and %s's", cfg.Name, klA, klB)
		}
		Expect(workloads(ctx, managed)).To(BeEmpty(), "still no Deployment or Pod on the managed cluster")
	}, SpecTimeout(specTimeout))

	It("unjoins each hub's Klusterlet and leaves both clusters as they were before the first join", func(ctx SpecContext) {
		for _, h := range []struct {
			c    client.Client
			work string
		}{{hubAClient, "hosted-a"}, {hubBClient, "hosted-b"}} {
			Expect(h.c.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: h.work}})).To(Succeed())
			Eventually(ctx, func() bool {
				_, err := managedKube.CoreV1().ConfigMaps("default").Get(ctx, h.work, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithTimeout(waitTimeout).Should(BeTrue(), "ConfigMap default/%s removed from the managed cluster with its work", h.work)
		}
		for _, kl := range []string{klA, klB} {
			out, err := cli(ctx, "unjoin", "--klusterlet-name", kl, "--kubeconfig", management.KubeconfigPath)
			Expect(err).NotTo(HaveOccurred(), "flotilla unjoin --klusterlet-name %s", kl)
			Expect(out).To(ContainSubstring("klusterlet "+kl+" removed"), "flotilla unjoin --klusterlet-name %s output", kl)
		}
		for _, kl := range []string{klA, klB} {
			Eventually(ctx, func(g Gomega) []appsv1.Deployment {
				l := &appsv1.DeploymentList{}
				g.Expect(mgmtClient.List(ctx, l, client.InNamespace(kl))).To(Succeed())
				return l.Items
			}).Should(BeEmpty(), "the agents' Deployments gone from %s", kl)
		}
		Expect(appliedWorkNames(ctx)(Default)).To(BeEmpty(), "no AppliedManifestWork on the managed cluster")
		expectSnapshot(ctx, managed.Config, managedBefore, "the managed cluster as before the first hosted join")
		expectSnapshot(ctx, management.Config, mgmtBefore, "the management cluster as before the first hosted join")
	}, SpecTimeout(specTimeout))
})
