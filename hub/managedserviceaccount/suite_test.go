package managedserviceaccount_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/managedserviceaccount"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/msa"
)

// One control plane is both the hub (cluster namespaces, ManagedServiceAccounts, token
// Secrets, whose garbage collector is its kube-controller-manager) and the managed cluster
// (install namespaces, ServiceAccounts). Each spec runs its own managed-serviceaccount agent,
// which writes the hub Secret as on a real fleet, and its own hub TTL controller with the
// gate as the spec needs, in a cluster namespace of its own.

var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	admin    client.Client
	kube     kubernetes.Interface
	scheme   *runtime.Scheme
	logger   logr.Logger
)

func TestManagedServiceAccountHub(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "managed-serviceaccount hub suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{})
	admin, scheme = envfleettest.Admin(fleet)
	kube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	logger = envfleettest.Logger()
	// The agent's hub rules, as the hub grants them to the built-in add-on.
	a, _ := builtin.Lookup(builtin.ManagedServiceAccount)
	for _, cr := range a.ClusterRoles {
		Expect(admin.Create(suiteCtx, cr.DeepCopy())).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))

// startAgent creates the spec's cluster and install namespaces and runs a
// managed-serviceaccount agent for them, with its own hub identity, until the spec ends.
func startAgent(ctx context.Context, cluster, ns string) {
	GinkgoHelper()
	for _, n := range []string{cluster, ns} {
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "msa-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builtin.MSAAgentClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName,
			Name: hubaddon.ClusterAddonGroup(cluster, builtin.ManagedServiceAccount)}},
	})).To(Succeed())
	hubCfg, err := fleet.Hub.UserConfig(hubaddon.DefaultUser(cluster, builtin.ManagedServiceAccount, authv1beta1.AgentName),
		hubaddon.DefaultGroups(cluster, builtin.ManagedServiceAccount)...)
	Expect(err).NotTo(HaveOccurred())
	var healthy atomic.Bool
	runCtx, cancel := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		Expect((&msa.Agent{}).Run(runCtx, addon.BuiltinEnv{
			ClusterName: cluster, InstallNamespace: ns, HubConfig: hubCfg, ManagedConfig: rest.CopyConfig(fleet.Hub.Config),
			Healthy: healthy.Store, Logger: logger.WithName(cluster),
		})).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-done
	})
	Eventually(ctx, healthy.Load).WithTimeout(30*time.Second).Should(BeTrue(), "managed-serviceaccount agent of %s healthy", cluster)
}

// startTTLController runs the hub's TTL controller, with the gate EphemeralIdentity on or
// off, in a manager of its own until the spec ends.
func startTTLController(ephemeralIdentity bool) {
	GinkgoHelper()
	gates, err := featuregates.NewGate(featuregates.DefaultHubRegistrationFeatureGates())
	Expect(err).NotTo(HaveOccurred())
	Expect(gates.SetFromMap(map[string]bool{string(featuregates.EphemeralIdentity): ephemeralIdentity})).To(Succeed())
	skip := true
	mgr, err := ctrl.NewManager(fleet.Hub.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger.WithName("hub"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&managedserviceaccount.TTLReconciler{Client: mgr.GetClient(), Gates: gates,
		Recorder: mgr.GetEventRecorder("flotilla-" + managedserviceaccount.ControllerName)}).SetupWithManager(mgr)).To(Succeed())
	runCtx, cancel := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		Expect(mgr.Start(runCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-done
	})
}
