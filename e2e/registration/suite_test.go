// Package registration is the end-to-end suite of cluster registration: a real hub and two real
// managed clusters (etcd + kube-apiserver + kube-controller-manager each), the hub controllers
// and one in-process klusterlet per managed cluster, brought up by e2e/internal/fleettest.
package registration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func TestRegistration(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Registration e2e")
}

const (
	// leaseSeconds keeps lease-expiry tests short: the hub's grace period is 5× this.
	leaseSeconds = 2
	// signingDuration makes the agents rotate their certificates during the suite.
	// The signer backdates certificates by five minutes, so the lifetime the agent sees is
	// this plus five minutes and rotation (at 20% remaining) starts about half a minute in.
	signingDuration = 2 * time.Minute
)

var (
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	env         *fleettest.Env
	fleet       *environment.Fleet
	hubClient   client.Client
	hubKube     kubernetes.Interface
	hub         *manager.Hub
	// hubGates is the running hub's feature gate; a spec may switch a gate for its duration,
	// which the CSR controller honours from its next decision on.
	hubGates    featuregate.MutableFeatureGate
	engine      *wasm.Engine
	rulesWasm   []byte
	bootstrapKC []byte
	agents      = map[string]*runningAgent{}
	logger      logr.Logger
	// conflictErrors counts "Reconciler error"s that are optimistic-concurrency conflicts.
	conflictErrors atomic.Int32
	cleanupHook    = &recordingHook{calls: map[string]int{}}
)

// recordingHook stands in for the work cleanup a later issue adds: it makes the first
// deletion attempt of each cluster wait, and counts calls.
type recordingHook struct {
	mu    sync.Mutex
	calls map[string]int
}

func (h *recordingHook) run(_ context.Context, cluster string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[cluster]++
	return h.calls[cluster] > 1, nil
}

func (h *recordingHook) count(cluster string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[cluster]
}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Requests on suiteCtx (helpers, cleanups) end before go test's -timeout 40m (Makefile) kills
	// the binary, so a blocked one fails naming what it waited for; specs bound theirs tighter.
	suiteCtx, suiteCancel = context.WithTimeout(context.Background(), 35*time.Minute)
	DeferCleanup(suiteCancel)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	logger = funcr.New(func(prefix, args string) {
		if strings.Contains(args, `"msg"="Reconciler error"`) && strings.Contains(args, "the object has been modified") {
			conflictErrors.Add(1)
		}
		fmt.Fprintln(GinkgoWriter, prefix, args)
	}, funcr.Options{Verbosity: 0})
	// Writers racing on a ManagedCluster is normal; a controller reporting it as a failure is not.
	DeferCleanup(func(ctx SpecContext) {
		Expect(conflictErrors.Load()).To(BeZero(), "controllers logged write conflicts as reconcile errors")
	}, NodeTimeout(2*time.Minute))

	var err error
	engine, err = wasm.NewEngine(suiteCtx, wasm.EngineOptions{Logger: logger.WithName("wasm")})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { Expect(engine.Close(context.Background())).To(Succeed()) }, NodeTimeout(2*time.Minute))
	rulesWasm = buildRules()

	hubGates, err = manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	env = fleettest.Start(suiteCtx, fleettest.Options{
		Environment: environment.Options{ManagedClusters: 2, SigningDuration: signingDuration},
		Logger:      logger,
		// The hub installs its own plugins: csr-renewal always, csr-autoapprove for clusters named auto*.
		Hub: manager.Options{
			FeatureGates:   hubGates,
			PluginCacheDir: filepath.Join(os.TempDir(), "flotilla-e2e-registration-wasm-cache"),
			AutoApprove:    plugininstall.AutoApprove{ClusterNamePatterns: []string{"auto*"}},
			CleanupHooks:   []managedcluster.CleanupHook{cleanupHook.run},
		},
	})
	fleet, hubClient, hubKube, hub, bootstrapKC = env.Fleet, env.HubClient, env.HubKube, env.Hub, env.BootstrapKubeconfig
	for i, m := range fleet.Managed {
		startAgent(environment.ManagedClusterName(i), m.Config, "", 0)
	}
}, NodeTimeout(5*time.Minute))

// buildRules compiles testdata/rules for wasip1.
func buildRules() []byte {
	out := filepath.Join(GinkgoT().TempDir(), "rules.wasm")
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", out, "./testdata/rules")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	b, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building the rules test plugin: %s", b)
	wasmBytes, err := os.ReadFile(out)
	Expect(err).NotTo(HaveOccurred())
	return wasmBytes
}

// loadPlugin makes the rules test module with config serve as CSRApproval plugin name, loaded
// straight into the hub's registry (the WasmPlugin path is covered by the hub's own plugins).
func loadPlugin(name, config string) {
	m, err := engine.Load(suiteCtx, wasm.ModuleSpec{
		Name: name, Type: abi.TypeCSRApproval, Wasm: rulesWasm, Config: []byte(config),
		Limits: wasm.Limits{CallTimeout: 5 * time.Second},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(hub.Registry().Set(suiteCtx, m)).To(Succeed())
}

func unloadPlugin(name string) {
	_, err := hub.Registry().Remove(suiteCtx, name)
	Expect(err).NotTo(HaveOccurred())
}

type runningAgent struct {
	*fleettest.Klusterlet
	name, namespace string
	managed         *rest.Config
}

func (a *runningAgent) stop() { a.Stop() }

// startAgent runs a klusterlet for cluster name against the managed API server managed, its
// secrets in namespace ns (default when empty), until stopped.
func startAgent(name string, managed *rest.Config, ns string, maxClaims int) *runningAgent {
	a := &runningAgent{name: name, namespace: ns, managed: managed}
	if a.namespace == "" {
		a.namespace = "open-cluster-management-agent"
	}
	a.Klusterlet = env.StartKlusterlet(klusterlet.Options{Registration: registration.Config{
		ClusterName:            name,
		ManagedConfig:          managed,
		AgentNamespace:         a.namespace,
		LeaseDurationSeconds:   leaseSeconds,
		MaxCustomClusterClaims: maxClaims,
	}})
	agents[fmt.Sprintf("%s/%s", name, a.namespace)] = a
	return a
}
