// Package work is the end-to-end suite of work distribution: a real hub and two real managed
// clusters (etcd + kube-apiserver + kube-controller-manager each), the hub controllers and
// one in-process klusterlet per managed cluster running registration and the work agent with
// the identity registration gave it.
package work

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestWork(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Work e2e")
}

const (
	cluster1 = "cluster1"
	cluster2 = "cluster2"
	// statusSync keeps availability and feedback polling quick.
	statusSync = 2 * time.Second
	// evictionGrace is the agents' grace period for AppliedManifestWorks without a ManifestWork.
	evictionGrace = 5 * time.Second
	// leaseSeconds makes a stopped agent's cluster unavailable quickly (the hub's grace is 5x).
	leaseSeconds = 2
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	fleet       *environment.Fleet
	hubClient   client.Client
	bootstrapKC []byte
	logger      logr.Logger
	agents      = map[string]*runningAgent{}
	// managed holds a client, a clientset and a dynamic client per managed cluster.
	managed = map[string]clusterClients{}
)

type clusterClients struct {
	client client.Client
	kube   kubernetes.Interface
	dyn    dynamic.Interface
}

var _ = BeforeSuite(func() {
	suiteCtx, suiteCancel = context.WithCancel(context.Background())
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1})

	var err error
	// One KWOK Node per managed cluster: Deployments get Pods that become Ready, Jobs complete.
	fleet, err = environment.Start(suiteCtx, environment.Options{ManagedClusters: 2, SimulatedNodes: 1, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })

	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubClient, err = client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	hubKube := kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	for i, m := range fleet.Managed {
		c, err := client.New(m.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		managed[environment.ManagedClusterName(i)] = clusterClients{
			client: c, kube: kubernetes.NewForConfigOrDie(m.Config), dyn: dynamic.NewForConfigOrDie(m.Config)}
	}

	// Completed works are deleted after their ttlSecondsAfterFinished (conditions_test.go).
	hubGates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	Expect(hubGates.Set(string(featuregates.CleanUpCompletedManifestWork) + "=true")).To(Succeed())
	hub, err := manager.New(manager.Options{
		Config: fleet.Hub.Config, SkipCRDInstall: true, Logger: logger.WithName("hub"), FeatureGates: hubGates,
		PluginCacheDir: filepath.Join(os.TempDir(), "flotilla-e2e-work-wasm-cache"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(hub.Prepare(suiteCtx)).To(Succeed())
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		defer GinkgoRecover()
		Expect(hub.Manager().Start(suiteCtx)).To(Succeed())
	}()

	bootstrapKC, err = bootstrap.Kubeconfig(suiteCtx, fleet.Hub.Config, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	for i, m := range fleet.Managed {
		startAgent(environment.ManagedClusterName(i), m)
	}
	Eventually(func(g Gomega) {
		_, err := admin.Accept(suiteCtx, hubClient, hubKube, []string{cluster1, cluster2})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	for _, name := range []string{cluster1, cluster2} {
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
			g.Expect(mc.Status.Conditions).To(ContainElement(And(
				HaveField("Type", clusterv1.ManagedClusterConditionJoined), HaveField("Status", BeEquivalentTo("True")))))
		}).Should(Succeed())
	}
	DeferCleanup(func() {
		for _, a := range agents {
			a.stop()
		}
		suiteCancel()
		<-hubDone
	})
})

type runningAgent struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (a *runningAgent) stop() {
	a.cancel()
	<-a.done
}

// startAgent runs the klusterlet (registration and work) for cluster name until stopped,
// with its secrets in the default agent namespace.
func startAgent(name string, cp *environment.ControlPlane) *runningAgent {
	return startAgentIn(name, cp, "")
}

// startAgentIn is startAgent with the agent's secrets in namespace ns ("" for the default),
// so a second cluster can be registered from the same managed API server.
func startAgentIn(name string, cp *environment.ControlPlane, ns string) *runningAgent {
	// cluster2's agent caches executor permission checks; cluster1's asks every time.
	return startAgentWith(name, cp, ns, klusterlet.WorkOptions{StatusSyncInterval: statusSync, EvictionGracePeriod: evictionGrace,
		ExecutorValidatingCaches: name == cluster2})
}

// startAgentWith is startAgentIn with the work agent's options.
func startAgentWith(name string, cp *environment.ControlPlane, ns string, work klusterlet.WorkOptions) *runningAgent {
	ctx, cancel := context.WithCancel(suiteCtx)
	a := &runningAgent{cancel: cancel, done: make(chan struct{})}
	opts := klusterlet.Options{
		Registration: registration.Config{
			ClusterName: name, ManagedConfig: cp.Config, BootstrapKubeconfig: bootstrapKC, AgentNamespace: ns,
			LeaseDurationSeconds: leaseSeconds,
			RetryInitial:         200 * time.Millisecond, RetryMax: 2 * time.Second,
			Logger: logger.WithName("klusterlet").WithValues("cluster", name),
		},
		Work: work,
	}
	go func() {
		defer close(a.done)
		defer GinkgoRecover()
		Expect(klusterlet.Run(ctx, opts)).To(Succeed())
	}()
	agents[name] = a
	return a
}
