// Package work is the end-to-end suite of work distribution: a real hub and two real managed
// clusters (etcd + kube-apiserver + kube-controller-manager each), the hub controllers and
// one in-process klusterlet per managed cluster running registration and the work agent with
// the identity registration gave it, brought up by e2e/internal/fleettest.
package work

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/hub/manager"
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
	env         *fleettest.Env
	fleet       *environment.Fleet
	hubClient   client.Client
	// managed holds a client, a clientset and a dynamic client per managed cluster.
	managed = map[string]clusterClients{}
)

type clusterClients struct {
	client client.Client
	kube   kubernetes.Interface
	dyn    dynamic.Interface
}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Requests on suiteCtx (helpers, cleanups) end before go test's -timeout 40m (Makefile) kills
	// the binary, so a blocked one fails naming what it waited for; specs bound theirs tighter.
	suiteCtx, suiteCancel = context.WithTimeout(context.Background(), 35*time.Minute)
	DeferCleanup(suiteCancel)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)

	// Completed works are deleted after their ttlSecondsAfterFinished (conditions_test.go).
	hubGates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	Expect(hubGates.Set(string(featuregates.CleanUpCompletedManifestWork) + "=true")).To(Succeed())
	env = fleettest.Start(suiteCtx, fleettest.Options{
		// One KWOK Node per managed cluster: Deployments get Pods that become Ready, Jobs complete.
		Environment: environment.Options{ManagedClusters: 2, SimulatedNodes: 1},
		Hub: manager.Options{FeatureGates: hubGates,
			PluginCacheDir: filepath.Join(os.TempDir(), "flotilla-e2e-work-wasm-cache")},
		Logger: funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1}),
		Klusterlet: func(name string, cp *environment.ControlPlane) klusterlet.Options {
			return agentOptions(name, cp, "", defaultWork(name))
		},
	})
	fleet, hubClient = env.Fleet, env.HubClient
	for i, m := range fleet.Managed {
		c, err := client.New(m.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		managed[environment.ManagedClusterName(i)] = clusterClients{
			client: c, kube: kubernetes.NewForConfigOrDie(m.Config), dyn: dynamic.NewForConfigOrDie(m.Config)}
	}
}, NodeTimeout(5*time.Minute))

// runningAgent is a klusterlet a spec started.
type runningAgent struct{ *fleettest.Klusterlet }

func (a *runningAgent) stop() { a.Stop() }

// defaultWork are the work agent's options: cluster2's agent caches executor permission
// checks; cluster1's asks every time.
func defaultWork(name string) klusterlet.WorkOptions {
	return klusterlet.WorkOptions{StatusSyncInterval: statusSync, EvictionGracePeriod: evictionGrace,
		ExecutorValidatingCaches: name == cluster2}
}

// agentOptions are the options of the klusterlet (registration and work) of cluster name on
// cp, with its secrets in namespace ns ("" for the default) and work as the work agent's.
func agentOptions(name string, cp *environment.ControlPlane, ns string, work klusterlet.WorkOptions) klusterlet.Options {
	return klusterlet.Options{
		Registration: registration.Config{ClusterName: name, ManagedConfig: cp.Config, AgentNamespace: ns, LeaseDurationSeconds: leaseSeconds},
		Work:         work,
	}
}

// startAgentIn runs the klusterlet (registration and work) for cluster name until stopped,
// with the agent's secrets in namespace ns ("" for the default), so a second cluster can be
// registered from the same managed API server.
func startAgentIn(name string, cp *environment.ControlPlane, ns string) *runningAgent {
	return startAgentWith(name, cp, ns, defaultWork(name))
}

// startAgentWith is startAgentIn with the work agent's options.
func startAgentWith(name string, cp *environment.ControlPlane, ns string, work klusterlet.WorkOptions) *runningAgent {
	return &runningAgent{env.StartKlusterlet(agentOptions(name, cp, ns, work))}
}
