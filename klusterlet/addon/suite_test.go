package addon_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/wasm"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/registration/csr"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// One control plane is both the hub and the managed cluster: the add-on's Secrets and Leases
// are in install namespaces, the hub's objects in the cluster namespace.
const (
	cluster = "cluster1"
	agent   = "agent1"
	// signingDuration makes certificates live 7 minutes (kube-controller-manager backdates them
	// by 5), so the agent renews them 15 to 36 seconds after they are issued.
	signingDuration = 2 * time.Minute
	// leaseSeconds makes an add-on unavailable 10 seconds after its Lease's last renewal.
	leaseSeconds = 2
)

var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	admin    client.Client
	kube     kubernetes.Interface
	// perms are the add-ons' hub permissions (all template add-ons), fixed for the suite.
	perms = map[string][]addonv1alpha1.HubPermissionConfig{
		"hello": {{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "hello-reader"}}},
		"custom": nil,
		"leasy":  nil,
		// restart_test.go's
		"gone":  nil,
		"stays": nil,
	}
)

func TestAddonAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Add-on agent (klusterlet) suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{SigningDuration: signingDuration})
	var scheme *runtime.Scheme
	admin, scheme = envfleettest.Admin(fleet)
	kube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	logger := envfleettest.Logger()

	// The hub: the accepted cluster with its agents' RBAC, CSR approval with the shipped
	// csr-addon module, and the add-ons' hub permissions.
	for _, o := range []client.Object{
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
	} {
		Expect(admin.Create(suiteCtx, o)).To(Succeed())
	}
	for _, o := range []client.Object{rbac.ClusterRole(cluster, true), rbac.ClusterRoleBinding(cluster), rbac.RegistrationClusterRole(), rbac.RegistrationRoleBinding(cluster)} {
		Expect(rbac.Apply(suiteCtx, admin, o)).To(Succeed())
	}
	engine, err := wasm.NewEngine(suiteCtx, wasm.EngineOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = engine.Close(context.Background()) })
	registry := wasm.NewRegistry()
	p, err := dist.Get("csr-addon")
	Expect(err).NotTo(HaveOccurred())
	mod, err := p.Wasm()
	Expect(err).NotTo(HaveOccurred())
	m, err := engine.Load(suiteCtx, wasm.ModuleSpec{Name: p.Name, Type: abi.TypeCSRApproval, Wasm: mod, Limits: wasm.Limits{CallTimeout: 10 * time.Second}})
	Expect(err).NotTo(HaveOccurred())
	Expect(registry.Set(suiteCtx, m)).To(Succeed())
	skip := true
	mgr, err := ctrl.NewManager(fleet.Hub.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger.WithName("hub"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&csr.Reconciler{Client: mgr.GetClient(), Kube: kube, Reviewers: csr.RegistryReviewers{Registry: registry},
		Recorder: mgr.GetEventRecorder("csr")}).SetupWithManager(mgr)).To(Succeed())
	Expect((&hubaddon.Reconciler{Client: mgr.GetClient(), Permissions: func(_ context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]addonv1alpha1.HubPermissionConfig, bool, error) {
		pcs, ok := perms[mca.Name]
		return pcs, ok, nil
	}}).SetupWithManager(mgr)).To(Succeed())
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()

	// The klusterlet's add-on agent, with the identity registration gives the cluster's agent.
	agentCfg, err := fleet.Hub.UserConfig("system:open-cluster-management:"+cluster+":"+agent,
		"system:open-cluster-management:"+cluster, clusterv1.ManagedClustersGroup)
	Expect(err).NotTo(HaveOccurred())
	a, err := addon.New(addon.Config{
		ClusterName: cluster, AgentName: agent, HubConfig: agentCfg,
		HubEndpoint:   registration.HubEndpoint{Server: fleet.Hub.Config.Host, CAData: fleet.Hub.Config.CAData, ProxyURL: ""},
		ManagedConfig: fleet.Hub.Config, LeaseDurationSeconds: leaseSeconds, RetryMax: 2 * time.Second,
		Logger: logger.WithName("klusterlet"),
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

func ensureNamespace(name string) {
	GinkgoHelper()
	err := admin.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}
