package builtin_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/wasm"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/msa"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// One control plane is the hub and cluster1. The hub runs the add-on manager serving all
// three built-ins and CSR approval with the shipped csr-addon module; cluster1's klusterlet
// runs its add-on agent with the managed-serviceaccount agent built in. Specs that only look
// at the hub use cluster namespaces of their own, without a klusterlet.
const (
	cluster = "cluster1"
	agent   = "agent1"
	// leaseSeconds makes an add-on unavailable 10 seconds after its Lease's last renewal.
	leaseSeconds = 2
)

var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	admin    client.Client
	kube     kubernetes.Interface
)

func TestBuiltinAddons(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Built-in add-ons suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{})
	var scheme *runtime.Scheme
	admin, scheme = envfleettest.Admin(fleet)
	kube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	logger := envfleettest.Logger()

	Expect(admin.Create(suiteCtx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}})).To(Succeed())
	Expect(admin.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}})).To(Succeed())
	for _, o := range []client.Object{rbac.ClusterRole(cluster, true), rbac.ClusterRoleBinding(cluster), rbac.RegistrationClusterRole(), rbac.RegistrationRoleBinding(cluster)} {
		Expect(rbac.Apply(suiteCtx, admin, o)).To(Succeed())
	}
	engine, err := wasm.NewEngine(suiteCtx, wasm.EngineOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = engine.Close(context.Background()) })
	csrModules := wasm.NewRegistry()
	p, err := dist.Get("csr-addon")
	Expect(err).NotTo(HaveOccurred())
	mod, err := p.Wasm()
	Expect(err).NotTo(HaveOccurred())
	m, err := engine.Load(suiteCtx, wasm.ModuleSpec{Name: p.Name, Type: abi.TypeCSRApproval, Wasm: mod, Limits: wasm.Limits{CallTimeout: 10 * time.Second}})
	Expect(err).NotTo(HaveOccurred())
	Expect(csrModules.Set(suiteCtx, m)).To(Succeed())
	skip := true
	mgr, err := ctrl.NewManager(fleet.Hub.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger.WithName("hub"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&csr.Reconciler{Client: mgr.GetClient(), Kube: kube, Reviewers: csr.RegistryReviewers{Registry: csrModules},
		Recorder: mgr.GetEventRecorder("csr")}).SetupWithManager(mgr)).To(Succeed())
	Expect((&hubaddon.Manager{Client: mgr.GetClient(), Registry: wasm.NewRegistry(), MaxWorkSize: 500 * 1024,
		Builtins: builtin.Names()}).SetupWithManager(mgr)).To(Succeed())
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()

	// cluster1's klusterlet add-on agent, with the identity registration gives the cluster's
	// agent, and the managed-serviceaccount agent built in.
	agentCfg, err := fleet.Hub.UserConfig("system:open-cluster-management:"+cluster+":"+agent,
		"system:open-cluster-management:"+cluster, clusterv1.ManagedClustersGroup)
	Expect(err).NotTo(HaveOccurred())
	a, err := addon.New(addon.Config{
		ClusterName: cluster, AgentName: agent, HubConfig: agentCfg,
		HubEndpoint:   registration.HubEndpoint{Server: fleet.Hub.Config.Host, CAData: fleet.Hub.Config.CAData},
		ManagedConfig: fleet.Hub.Config, LeaseDurationSeconds: leaseSeconds, RetryMax: 2 * time.Second,
		Builtins: map[string]addon.BuiltinAgent{builtin.ManagedServiceAccount: &msa.Agent{}},
		Logger:   logger.WithName("klusterlet"),
	})
	Expect(err).NotTo(HaveOccurred())
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		defer GinkgoRecover()
		Expect(a.Run(suiteCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-agentDone
		<-hubDone
	})
}, NodeTimeout(5*time.Minute))
