package install

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/clusteradmview"
	"github.com/flotilla-dev/flotilla/e2e/internal/testproxy"
)

const (
	hubNS    = "open-cluster-management-hub"
	agentNS  = "open-cluster-management-agent"
	agentNS2 = "open-cluster-management-agent-hub2"
	addonNS  = "open-cluster-management-agent-addon"
	cluster  = "edge1"
)

// joinArgs turns the join command init or get token printed into CLI args for cluster.
func joinArgs(line, cluster string, extra ...string) []string {
	GinkgoHelper()
	line = strings.TrimSpace(line)
	Expect(line).To(HavePrefix("flotilla join "))
	Expect(line).To(ContainSubstring("--cluster-name <cluster_name>"))
	args := strings.Fields(strings.Replace(line, "<cluster_name>", cluster, 1))[2:]
	return append(args, extra...)
}

// apply creates or updates an object given as YAML.
func apply(c client.Client, doc string) {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	Expect(c.Patch(suiteCtx, u, client.Apply, client.FieldOwner("e2e-install"), client.ForceOwnership)).To(Succeed())
}

// replicaSet applies, in namespace default of a hub, the binding of the default cluster set,
// a Placement of it and a ManifestWorkReplicaSet of the same name whose template places a
// Namespace and a ConfigMap in it, both named configMap.
func replicaSet(hub client.Client, name, configMap string) {
	GinkgoHelper()
	apply(hub, `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: default}
spec: {clusterSet: default}`)
	apply(hub, fmt.Sprintf(`apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: %s, namespace: default}
spec: {clusterSets: [default]}`, name))
	apply(hub, fmt.Sprintf(`apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: %[1]s, namespace: default}
spec:
  placementRefs: [{name: %[1]s}]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: Namespace, metadata: {name: %[2]s}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: %[2]s, namespace: %[2]s}}
`, name, configMap))
}

func work(name, configMap string) string {
	return fmt.Sprintf(`apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: %[1]s, namespace: %[3]s}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: Namespace, metadata: {name: %[2]s}}
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: %[2]s, namespace: %[2]s}, data: {from: %[1]s}}
    - apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRole
      metadata: {name: %[2]s}
      rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`, name, configMap, cluster)
}

func configMapPresent(ns string) func() error {
	c := clientFor(spok)
	return func() error {
		return c.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: ns}, &corev1.ConfigMap{})
	}
}

func clusterCondition(hub client.Client, t string) func() metav1.ConditionStatus {
	return func() metav1.ConditionStatus {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(suiteCtx, client.ObjectKey{Name: cluster}, mc); err != nil {
			return "missing"
		}
		if c := meta.FindStatusCondition(mc.Status.Conditions, t); c != nil {
			return c.Status
		}
		return "none"
	}
}

var _ = Describe("Install and join", Ordered, func() {
	var (
		hub1Client, hub2Client, spokeClient client.Client
		joinLine1                           string
		hub1Deployments, spokeDeployments   *deploymentsLog
		hub2Procs                           []*process
		before                              struct{ hub1, spoke []string }
		proxy                               *testproxy.Proxy
	)
	BeforeAll(func(ctx SpecContext) {
		hub1Client, hub2Client, spokeClient = clientFor(hub1), clientFor(hub2), clientFor(spok)
		proxy = testproxy.Start()
		DeferCleanup(proxy.Close)
	}, NodeTimeout(5*time.Minute))

	It("the binary is static, as the distroless image needs", func(ctx SpecContext) {
		f, err := elf.Open(flotillaBin)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		for _, p := range f.Progs {
			Expect(p.Type).NotTo(BeElementOf(elf.PT_INTERP, elf.PT_DYNAMIC), "dynamically linked")
		}
		libs, err := f.ImportedLibraries()
		Expect(err).NotTo(HaveOccurred())
		Expect(libs).To(BeEmpty())
	}, SpecTimeout(5*time.Minute))

	It("flotilla init installs the hub operator, which deploys the Split hub, reports it ready and prints the join command", func(ctx SpecContext) {
		// Nothing runs the Deployments here: play the kubelet for the operator and the
		// components it deploys.
		hub1Deployments = runDeployments(hub1)
		joinFile := GinkgoT().TempDir() + "/join.sh"
		out, errOut, err := flotilla(ctx, "init", "--kubeconfig", hub1.KubeconfigPath, "--output-join-command-file", joinFile,
			"--set", "flags.plugin-cache-dir="+wasmCache, "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("The hub is ready"))
		joinLine1 = out
		Expect(joinLine1).To(HavePrefix("flotilla join --hub-token "))
		b, err := os.ReadFile(joinFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).To(Equal(joinLine1))

		cm := &operatorv1.ClusterManager{}
		Expect(hub1Client.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		Expect(cm.Status.ObservedGeneration).To(Equal(cm.Generation))
		Expect(meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied)).To(BeTrue())
		Expect(meta.IsStatusConditionFalse(cm.Status.Conditions, operatorv1.ConditionProgressing)).To(BeTrue())
		// What clusteradm get hub-info prints: the operator and each component (1/1) with
		// its image, the CRDs installed, and no error.
		expectHubInfo(ctx, hub1, false)
		// Running init again is an in-place upgrade.
		_, errOut, err = flotilla(ctx, "init", "--kubeconfig", hub1.KubeconfigPath, "--set", "flags.plugin-cache-dir="+wasmCache, "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), errOut)
	}, SpecTimeout(5*time.Minute))

	It("flotilla init with topology Single and two replicas runs them with leader election", func(ctx SpecContext) {
		_, errOut, err := flotilla(ctx, "init", "--kubeconfig", hub2.KubeconfigPath, "--wait=false", "--hub-topology", "Single",
			"--set", "replicas=2", "--set", "flags.plugin-cache-dir="+wasmCache,
			"--set", "flags.leader-elect-lease-duration=4s", "--set", "flags.leader-elect-renew-deadline=3s",
			"--set", "flags.leader-elect-retry-period=500ms")
		Expect(err).NotTo(HaveOccurred(), errOut)
		// The operator deploys the hub, one Deployment flotilla-hub.
		runDeployment(hub2, "open-cluster-management", "cluster-manager", 0, false)
		waitForDeployment(hub2, hubNS, "flotilla-hub")
		// The replicas share the webhook Service in a cluster; with no Service routing here and
		// a URL per replica they would take the webhook configuration from each other, so they
		// run without the webhook server (this spec is about the controllers).
		hub2Procs = []*process{runDeployment(hub2, hubNS, "flotilla-hub", 0, true), runDeployment(hub2, hubNS, "flotilla-hub", 1, true)}
		Expect(hub2Procs[0].Args).To(ContainElement("--leader-elect"))
		Eventually(func() string { return leaseHolder(hub2Client) }).ShouldNot(BeEmpty())
		Eventually(func() bool { return leads(hub2Procs[0]) != leads(hub2Procs[1]) }).Should(BeTrue(), "one leader")
		for _, p := range hub2Procs {
			Eventually(func() int { code, _ := get(p.health, "/readyz"); return code }).Should(Equal(200), "every replica serves")
		}
	}, SpecTimeout(5*time.Minute))

	It("join refuses an expired or revoked token with a clear error and installs nothing", func(ctx SpecContext) {
		before.hub1, before.spoke = snapshot(hub1), snapshot(spok)

		line, errOut, err := flotilla(ctx, "get", "token", "--kubeconfig", hub1.KubeconfigPath, "--use-bootstrap-token", "--duration", "2s")
		Expect(err).NotTo(HaveOccurred(), errOut)
		time.Sleep(3 * time.Second) // the token's life: nothing to watch but the clock
		_, errOut, err = flotilla(ctx, append([]string{"join", "--kubeconfig", spok.KubeconfigPath}, joinArgs(line, cluster)...)...)
		Expect(err).To(MatchError(ContainSubstring("expired or was revoked")), errOut)

		line, errOut, err = flotilla(ctx, "get", "token", "--kubeconfig", hub1.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		list, _, err := flotilla(ctx, "token", "list", "--kubeconfig", hub1.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred())
		id := strings.Fields(errOut)[1] // "token <id> (<kind>) expires ..."
		Expect(list).To(ContainSubstring(id))
		out, _, err := flotilla(ctx, "token", "revoke", id, "--kubeconfig", hub1.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("revoked"))
		_, errOut, err = flotilla(ctx, append([]string{"join", "--kubeconfig", spok.KubeconfigPath}, joinArgs(line, cluster)...)...)
		Expect(err).To(MatchError(ContainSubstring("expired or was revoked")), errOut)

		Expect(apierrors.IsNotFound(spokeClient.Get(ctx, client.ObjectKey{Name: agentNS}, &corev1.Namespace{}))).To(BeTrue(), "nothing installed")
	}, SpecTimeout(5*time.Minute))

	It("joins with a bootstrap token: join, the agent, accept, Joined and Available, work applied", func(ctx SpecContext) {
		line, errOut, err := flotilla(ctx, "get", "token", "--kubeconfig", hub1.KubeconfigPath, "--use-bootstrap-token")
		Expect(err).NotTo(HaveOccurred(), errOut)
		done := make(chan error, 1)
		var joinOut string
		go func() {
			defer GinkgoRecover()
			out, errOut, err := flotilla(ctx, append([]string{"join", "--kubeconfig", spok.KubeconfigPath, "--timeout", "2m"}, joinArgs(line, cluster)...)...)
			joinOut = out
			if err != nil {
				err = fmt.Errorf("%w: %s", err, errOut)
			}
			done <- err
		}()
		// join applies the klusterlet operator and the Klusterlet; the operator deploys the
		// agent. Nothing runs the Deployments here: play the kubelet for both.
		spokeDeployments = runChartDeployments(spok, "flotilla-klusterlet")
		waitForDeployment(spok, "open-cluster-management", "klusterlet")
		waitForDeployment(spok, agentNS, "klusterlet-agent")
		Eventually(done).WithTimeout(2 * time.Minute).Should(Receive(BeNil()))
		Expect(joinOut).To(ContainSubstring("flotilla accept --clusters " + cluster))
		Expect(spokeDeployments.count("started "+agentNS+"/klusterlet-agent-0")).To(Equal(1), "the agent runs as the operator deployed it")

		out, errOut, err := flotilla(ctx, "accept", "--clusters", cluster, "--kubeconfig", hub1.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring("cluster " + cluster + " accepted"))
		Eventually(clusterCondition(hub1Client, clusterv1.ManagedClusterConditionJoined)).Should(Equal(metav1.ConditionTrue))
		Eventually(clusterCondition(hub1Client, clusterv1.ManagedClusterConditionAvailable)).Should(Equal(metav1.ConditionTrue))

		apply(hub1Client, work("from-hub1", "from-hub1"))
		Eventually(configMapPresent("from-hub1")).Should(Succeed())
		// Least privilege: the agent may not apply workloads; the work agent
		// (klusterlet-work-sa) may, and may grant RBAC, but has no cluster-admin.
		for _, c := range []struct {
			sa      string
			attrs   authorizationv1.ResourceAttributes
			allowed bool
		}{
			{"klusterlet-agent", authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "create", Namespace: "default"}, false},
			{"klusterlet-agent", authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespace: agentNS, Name: "klusterlet-work-sa"}, true},
			{"klusterlet-agent", authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespace: "kube-system", Name: "default"}, false},
			{"klusterlet-work-sa", authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "create", Namespace: "default"}, true},
			{"klusterlet-work-sa", authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"}, true},
			{"klusterlet-work-sa", authorizationv1.ResourceAttributes{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "create"}, false},
			{"klusterlet-work-sa", authorizationv1.ResourceAttributes{Group: "cluster.x-k8s.io", Resource: "machines", Verb: "get", Namespace: "default"}, false},
		} {
			Expect(mayDo(agentNS, c.sa, c.attrs)).To(Equal(c.allowed), "%s %s %+v", c.sa, map[bool]string{true: "may", false: "may not"}[c.allowed], c.attrs)
		}

		k := &operatorv1.Klusterlet{}
		Expect(spokeClient.Get(ctx, client.ObjectKey{Name: "klusterlet"}, k)).To(Succeed())
		Expect(k.Spec.ClusterName).To(Equal(cluster))
		Eventually(func() bool {
			_ = spokeClient.Get(ctx, client.ObjectKey{Name: "klusterlet"}, k)
			c := meta.FindStatusCondition(k.Status.Conditions, operatorv1.ConditionHubConnectionDegraded)
			return c != nil && c.Status == metav1.ConditionFalse
		}).Should(BeTrue(), "the Klusterlet reports its hub connection")
		// What clusteradm get klusterlet-info reads: a Singleton klusterlet's agent Deployment
		// klusterlet-agent among the related resources.
		Expect(k.Spec.DeployOption.Mode).To(Equal(operatorv1.InstallModeSingleton))
		Eventually(func() []operatorv1.RelatedResourceMeta {
			_ = spokeClient.Get(ctx, client.ObjectKey{Name: "klusterlet"}, k)
			return k.Status.RelatedResources
		}).Should(ContainElement(operatorv1.RelatedResourceMeta{Group: "apps", Version: "v1", Resource: "deployments", Namespace: agentNS, Name: "klusterlet-agent"}))
		Eventually(func() bool {
			_ = spokeClient.Get(ctx, client.ObjectKey{Name: "klusterlet"}, k)
			return meta.IsStatusConditionTrue(k.Status.Conditions, operatorv1.ConditionKlusterletAvailable)
		}).Should(BeTrue(), "the operator reports the agent available (its /readyz answers)")
		// What clusteradm get klusterlet-info prints: the operator and the Singleton agent
		// klusterlet-agent (1/1), of the chart's image.
		op := &appsv1.Deployment{}
		Expect(spokeClient.Get(ctx, client.ObjectKey{Namespace: "open-cluster-management", Name: "klusterlet"}, op)).To(Succeed())
		Expect(op.Spec.Template.Spec.Containers[0].Name).To(Equal("klusterlet"))
		image := op.Spec.Template.Spec.Containers[0].Image
		want := clusteradmview.SingletonKlusterletInfo(image, image)
		Eventually(func(g Gomega) {
			info, err := clusteradmview.KlusterletInfo(ctx, spok.Config)
			g.Expect(err).NotTo(HaveOccurred(), "klusterlet-info:\n%s", info)
			g.Expect(info).To(ContainSubstring(want))
			g.Expect(info).To(ContainSubstring("    (installed) appliedmanifestworks.work.open-cluster-management.io [*v1]\n"))
			g.Expect(info).NotTo(ContainSubstring("(absent)"))
		}).WithTimeout(time.Minute).Should(Succeed(), "clusteradm get klusterlet-info on %s", spok.Name)
	}, SpecTimeout(5*time.Minute))

	It("joins the same cluster to a second hub through a forward proxy, each hub applying its own work", func(ctx SpecContext) {
		line, errOut, err := flotilla(ctx, "get", "token", "--kubeconfig", hub2.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, errOut, err := flotilla(ctx, append([]string{"join", "--kubeconfig", spok.KubeconfigPath, "--timeout", "2m"},
				joinArgs(line, cluster, "--klusterlet-name", "klusterlet-hub2", "--agent-namespace", agentNS2, "--proxy-url", proxy.URL)...)...)
			if err != nil {
				err = fmt.Errorf("%w: %s", err, errOut)
			}
			done <- err
		}()
		// The operator, running already, deploys the second Klusterlet's agent.
		waitForDeployment(spok, agentNS2, "klusterlet-hub2-agent")
		tunnels := proxy.Tunnels()
		Eventually(done).WithTimeout(2 * time.Minute).Should(Receive(BeNil()))
		_, errOut, err = flotilla(ctx, "accept", "--clusters", cluster, "--kubeconfig", hub2.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Eventually(clusterCondition(hub2Client, clusterv1.ManagedClusterConditionJoined)).Should(Equal(metav1.ConditionTrue))
		Expect(proxy.Tunnels()).To(BeNumerically(">", tunnels), "the second agent reaches its hub through the proxy")
		s := &corev1.Secret{}
		Eventually(func() error {
			return spokeClient.Get(ctx, client.ObjectKey{Namespace: agentNS2, Name: "hub-kubeconfig-secret"}, s)
		}).Should(Succeed())
		Expect(string(s.Data["kubeconfig"])).To(ContainSubstring("proxy-url: " + proxy.URL))

		apply(hub2Client, work("from-hub2", "from-hub2"))
		Eventually(configMapPresent("from-hub2")).Should(Succeed())
		Expect(configMapPresent("from-hub1")()).To(Succeed())
		Expect(clusterCondition(hub1Client, clusterv1.ManagedClusterConditionAvailable)()).To(Equal(metav1.ConditionTrue))
	}, SpecTimeout(5*time.Minute))

	It("a second hub replica takes over when the leader dies, with nothing lost", func(ctx SpecContext) {
		var leader, other *process
		Eventually(func() int {
			leader, other = nil, nil
			for _, p := range hub2Procs {
				if leads(p) {
					leader = p
				} else {
					other = p
				}
			}
			if leader == nil || other == nil {
				return 0
			}
			return 1
		}).Should(Equal(1), "exactly one replica leads")
		holder := leaseHolder(hub2Client)
		leader.Kill()
		// A replica set made while nobody leads needs the hub's controllers (placement and
		// ManifestWorkReplicaSet, leader only): its ConfigMap arrives once the other replica
		// has taken over.
		replicaSet(hub2Client, "failover", "during-failover")
		Eventually(func() bool { return leads(other) }).WithTimeout(time.Minute).Should(BeTrue())
		Expect(leaseHolder(hub2Client)).NotTo(Equal(holder))
		Eventually(configMapPresent("during-failover")).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("editing the ClusterManager rolls the work Deployments: ManifestWorkReplicaSet off, then on", func(ctx SpecContext) {
		setGate := func(mode string) {
			apply(hub1Client, `apiVersion: operator.open-cluster-management.io/v1
kind: ClusterManager
metadata: {name: cluster-manager}
spec:
  workConfiguration:
    featureGates: [{feature: ManifestWorkReplicaSet, mode: `+mode+`}]
`)
		}
		const workController = "cluster-manager-work-controller"
		restarted := "restarting " + hubNS + "/" + workController
		restarts := hub1Deployments.count(restarted)
		before := hubGenerations(hub1Client)
		setGate("Disable")
		rolledOut(hub1Client)
		after := hubGenerations(hub1Client)
		Expect(after[workController]).To(Equal(before[workController]+1), "the work-controller's generation +1")
		for _, n := range []string{"cluster-manager-registration-controller", "cluster-manager-placement-controller", "cluster-manager-addon-manager-controller"} {
			Expect(after[n]).To(Equal(before[n]), "Deployment %s unchanged", n)
		}
		Eventually(func() int { return hub1Deployments.count(restarted) }).Should(Equal(restarts+1), "the work-controller's process restarted")
		replicaSet(hub1Client, "rs", "from-rs")
		rsWork := func() error {
			return hub1Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "rs"}, &workv1.ManifestWork{})
		}
		Consistently(rsWork).WithTimeout(5*time.Second).ShouldNot(Succeed(), "the controller is off")
		setGate("Enable")
		rolledOut(hub1Client)
		Expect(hubGenerations(hub1Client)[workController]).To(Equal(after[workController] + 1))
		Eventually(func() int { return hub1Deployments.count(restarted) }).Should(Equal(restarts+2), "the work-controller's process restarted again")
		Eventually(rsWork).Should(Succeed())
		Eventually(configMapPresent("from-rs")).Should(Succeed())
		// clusteradm shows the work-controller once the ClusterManager enables the gate.
		expectHubInfo(ctx, hub1, true)
		// Running init again (an upgrade) keeps the edit: the install owns no field of the spec.
		_, errOut, err := flotilla(ctx, "init", "--kubeconfig", hub1.KubeconfigPath, "--wait=false", "--set", "flags.plugin-cache-dir="+wasmCache)
		Expect(err).NotTo(HaveOccurred(), errOut)
		cm := &operatorv1.ClusterManager{}
		Expect(hub1Client.Get(ctx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		Expect(cm.Spec.WorkConfiguration).NotTo(BeNil())
		Expect(cm.Spec.WorkConfiguration.FeatureGates).To(ConsistOf(HaveField("Feature", "ManifestWorkReplicaSet")))
		Expect(hub1Client.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "work.open-cluster-management.io/v1alpha1", "kind": "ManifestWorkReplicaSet",
			"metadata": map[string]any{"name": "rs", "namespace": "default"}}})).To(Succeed())
		Eventually(rsWork).ShouldNot(Succeed())
		for _, o := range []client.Object{
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement", "metadata": map[string]any{"name": "rs", "namespace": "default"}}},
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSetBinding", "metadata": map[string]any{"name": "default", "namespace": "default"}}},
		} {
			Expect(hub1Client.Delete(ctx, o)).To(Succeed())
		}
	}, SpecTimeout(5*time.Minute))

	It("unjoin of the second hub's klusterlet removes its work and keeps the first hub's", func(ctx SpecContext) {
		out, errOut, err := flotilla(ctx, "unjoin", "--kubeconfig", spok.KubeconfigPath, "--klusterlet-name", "klusterlet-hub2")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring("klusterlet-hub2 removed"))
		Expect(errOut).To(ContainSubstring("kept the klusterlet operator: Klusterlets klusterlet remain"))
		Eventually(func() int {
			return spokeDeployments.count("stopping " + agentNS2 + "/klusterlet-hub2-agent: the Deployment is gone")
		}).
			Should(Equal(1), "the second agent stopped with its Deployment")
		Expect(spokeClient.Get(ctx, client.ObjectKey{Namespace: "open-cluster-management", Name: "klusterlet"}, &appsv1.Deployment{})).To(Succeed(), "the operator stays")
		Expect(configMapPresent("from-hub2")()).NotTo(Succeed())
		Expect(configMapPresent("during-failover")()).NotTo(Succeed())
		Expect(apierrors.IsNotFound(spokeClient.Get(ctx, client.ObjectKey{Name: agentNS2}, &corev1.Namespace{}))).To(BeTrue())
		Expect(configMapPresent("from-hub1")()).To(Succeed())
		Consistently(clusterCondition(hub1Client, clusterv1.ManagedClusterConditionAvailable)).WithTimeout(3 * time.Second).Should(Equal(metav1.ConditionTrue))
	}, SpecTimeout(5*time.Minute))

	It("unjoin of the last klusterlet, running and serving an add-on, and deleting the cluster on the hub, leave nothing behind on either side", func(ctx SpecContext) {
		// An add-on with a hub identity: its client certificate Secret must go with the
		// klusterlet, deleted by unjoin itself (not only with the add-on namespace).
		apply(hub1Client, `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: probe}
spec:
  addonName: probe
  agentSpec:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: probe-agent, namespace: default}}
  registration:
  - type: KubeClient`)
		apply(hub1Client, `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: probe}
spec:
  supportedConfigs:
  - {group: addon.open-cluster-management.io, resource: addontemplates, defaultConfig: {name: probe}}
  installStrategy: {type: Manual}`)
		_, errOut, err := flotilla(ctx, "addon", "enable", "probe", "--clusters", cluster, "--kubeconfig", hub1.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		addonSecret := &corev1.Secret{}
		Eventually(func(g Gomega) {
			g.Expect(spokeClient.Get(ctx, client.ObjectKey{Namespace: addonNS, Name: "probe-hub-kubeconfig"}, addonSecret)).To(Succeed())
			g.Expect(addonSecret.Data).To(HaveKey("tls.crt"))
		}).Should(Succeed(), "the klusterlet wrote the add-on's hub kubeconfig")
		Expect(configMapPresent("from-hub1")()).To(Succeed())

		// The agent runs; the kubelet (played here) stops it once the operator's cleanup
		// deletes its Deployment, and the operator once unjoin deletes its own.
		_, errOut, err = flotilla(ctx, "unjoin", "--kubeconfig", spok.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("told the hub that the agent of cluster " + cluster + " is gone"))
		Expect(errOut).To(ContainSubstring("removing the klusterlet operator: no Klusterlet remains"))
		Eventually(func() int {
			return spokeDeployments.count("stopping " + agentNS + "/klusterlet-agent: the Deployment is gone")
		}).
			Should(Equal(1), "the agent stopped with its Deployment")
		Eventually(func() int {
			return spokeDeployments.count("stopping open-cluster-management/klusterlet: the Deployment is gone")
		}).
			Should(Equal(1), "the operator stopped with its Deployment")
		Expect(apierrors.IsNotFound(spokeClient.Get(ctx, client.ObjectKeyFromObject(addonSecret), &corev1.Secret{}))).To(BeTrue(),
			"the add-on's Secret is gone")
		for _, o := range []client.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "klusterlet-agent"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "open-cluster-management", Name: "klusterlet"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "klusterlet-agent"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "klusterlet-work-sa"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:klusterlet-work:execution-admin"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:klusterlet-work:aggregate"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:klusterlet-registration:agent"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNS}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe-agent"}},
		} {
			Expect(apierrors.IsNotFound(spokeClient.Get(ctx, client.ObjectKeyFromObject(o), o))).To(BeTrue(), "%T %s is gone", o, o.GetName())
		}
		// The hub's half: its admin deletes the cluster, its add-on still enabled (the hub
		// removes the cluster namespace with its works, add-ons, RBAC and lease; the add-on's
		// work is not rendered again meanwhile).
		Expect(hub1Client.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Succeed())
		Eventually(func() string {
			if apierrors.IsNotFound(hub1Client.Get(ctx, client.ObjectKey{Name: cluster}, &corev1.Namespace{})) {
				return ""
			}
			// What holds it up, for the failure message.
			mc := &clusterv1.ManagedCluster{}
			_ = hub1Client.Get(ctx, client.ObjectKey{Name: cluster}, mc)
			works := &workv1.ManifestWorkList{}
			_ = hub1Client.List(ctx, works, client.InNamespace(cluster))
			var ws []string
			for _, w := range works.Items {
				ws = append(ws, fmt.Sprintf("%s%v", w.Name, w.Finalizers))
			}
			return fmt.Sprintf("namespace %s remains; ManagedCluster finalizers %v conditions %v; works %v", cluster, mc.Finalizers, mc.Status.Conditions, ws)
		}).Should(BeEmpty())
		Eventually(func() []string { return diff(before.spoke, snapshot(spok)) }).Should(BeEmpty(), "the managed cluster as before the join")
		// Unjoin again, with nothing of Flotilla left (not even the CRDs), is harmless.
		_, errOut, err = flotilla(ctx, "unjoin", "--kubeconfig", spok.KubeconfigPath)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(diff(before.spoke, snapshot(spok))).To(BeEmpty())
		// The add-on's registration on the hub is the hub admin's to remove.
		for _, kind := range []string{"ClusterManagementAddOn", "AddOnTemplate"} {
			Expect(hub1Client.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": kind, "metadata": map[string]any{"name": "probe"}}})).To(Succeed())
		}
		Eventually(func() []string { return diff(withoutTokens(before.hub1), withoutTokens(snapshot(hub1))) }).Should(BeEmpty(), "the hub as before the join")
	}, SpecTimeout(5*time.Minute))
})

// mayDo asks the managed cluster whether ServiceAccount ns/sa may do attrs.
func mayDo(ns, sa string, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	r, err := kubernetes.NewForConfigOrDie(spok.Config).AuthorizationV1().SubjectAccessReviews().Create(suiteCtx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return r.Status.Allowed
}

// leaseHolder is the holder of the hub's leader election Lease.
func leaseHolder(c client.Client) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(suiteCtx, types.NamespacedName{Namespace: hubNS, Name: "flotilla-hub-lock"}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leads reports whether a hub replica holds the leader Lease, by its own metrics.
func leads(p *process) bool {
	_, body := get(p.metrics, "/metrics")
	return strings.Contains(body, `leader_election_master_status{name="flotilla-hub-lock"} 1`)
}

// diff lists what after has and before had not ("+ ...") and the other way round ("- ...").
func diff(before, after []string) []string {
	in := func(list []string, s string) bool { return slices.Contains(list, s) }
	var out []string
	for _, a := range after {
		if !in(before, a) {
			out = append(out, "+ "+a)
		}
	}
	for _, b := range before {
		if !in(after, b) {
			out = append(out, "- "+b)
		}
	}
	return out
}

// withoutTokens drops the join tokens' Secrets from a snapshot: the specs issue, revoke and
// let expire tokens after the first snapshot (an expired bootstrap token's Secret stays until
// kube-controller-manager's tokencleaner, off by default, removes it).
func withoutTokens(s []string) []string {
	var out []string
	for _, e := range s {
		if strings.Contains(e, "/secrets kube-system/bootstrap-token-") || strings.Contains(e, "/secrets open-cluster-management/join-token-") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// hubGenerations are the generations of the hub's Deployments, by name.
func hubGenerations(c client.Client) map[string]int64 {
	GinkgoHelper()
	list := &appsv1.DeploymentList{}
	Expect(c.List(suiteCtx, list, client.InNamespace(hubNS))).To(Succeed())
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out
}

// rolledOut waits until the hub operator reports ClusterManager cluster-manager Applied and
// not Progressing at its generation.
func rolledOut(c client.Client) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := &operatorv1.ClusterManager{}
		g.Expect(c.Get(suiteCtx, client.ObjectKey{Name: "cluster-manager"}, cm)).To(Succeed())
		g.Expect(cm.Status.ObservedGeneration).To(Equal(cm.Generation), "observedGeneration")
		g.Expect(meta.IsStatusConditionTrue(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied)).To(BeTrue(), "Applied: %v", cm.Status.Conditions)
		g.Expect(meta.IsStatusConditionFalse(cm.Status.Conditions, operatorv1.ConditionProgressing)).To(BeTrue(), "Progressing: %v", cm.Status.Conditions)
	}).WithTimeout(2*time.Minute).Should(Succeed(), "ClusterManager cluster-manager applied and rolled out")
}

// expectHubInfo checks what clusteradm get hub-info prints on cp's Split hub: the operator
// and every component (1/1) with the operator's image (the work-controller when the
// ClusterManager enables ManifestWorkReplicaSet, as clusteradm shows it), every CRD installed,
// and no error.
func expectHubInfo(ctx context.Context, cp *environment.ControlPlane, workController bool) {
	GinkgoHelper()
	op := &appsv1.Deployment{}
	Expect(clientFor(cp).Get(ctx, client.ObjectKey{Namespace: "open-cluster-management", Name: "cluster-manager"}, op)).To(Succeed())
	want := clusteradmview.SplitHubInfo(op.Spec.Template.Spec.Containers[0].Image, workController)
	var out string
	Eventually(func(g Gomega) {
		var err error
		out, err = clusteradmview.HubInfo(ctx, cp.Config)
		g.Expect(err).NotTo(HaveOccurred(), "hub-info:\n%s", out)
		g.Expect(out).To(HavePrefix(want))
	}).WithTimeout(time.Minute).Should(Succeed(), "clusteradm get hub-info on %s", cp.Name)
	crds := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, want), "\n"), "\n")
	Expect(len(crds)).To(BeNumerically(">=", 15), "the CRDs:\n%s", out)
	for _, l := range crds {
		Expect(l).To(HavePrefix("    (installed) "), "every CRD installed:\n%s", out)
	}
	fmt.Fprintf(GinkgoWriter, "clusteradm get hub-info on %s:\n%s", cp.Name, out)
}
