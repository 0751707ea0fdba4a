package msa_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon/msa"
)

// One control plane is both the hub (cluster namespaces, ManagedServiceAccounts, token
// Secrets) and the managed cluster (install namespaces, ServiceAccounts, TokenReviews). Each
// spec has its own cluster namespace, install namespace and agent.

var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	admin    client.Client
	kube     kubernetes.Interface
)

func TestManagedServiceAccountAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "managed-serviceaccount agent suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{})
	admin, _ = envfleettest.Admin(fleet)
	kube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	envfleettest.Logger()
	// The agent's hub rules, as the hub grants them to the built-in add-on.
	a, _ := builtin.Lookup(builtin.ManagedServiceAccount)
	for _, cr := range a.ClusterRoles {
		Expect(admin.Create(suiteCtx, cr.DeepCopy())).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))

// agentRun is one running agent of a spec.
type agentRun struct {
	cluster, namespace string
	healthy            atomic.Bool
	stop               func()
}

// startAgent creates the spec's cluster and install namespaces (once) and runs an agent for
// them with the agent's own hub identity, bound to the built-in's ClusterRole in the cluster
// namespace, until the spec ends or stop is called.
func startAgent(ctx context.Context, cluster, ns string, clk clock.PassiveClock) *agentRun {
	GinkgoHelper()
	for _, n := range []string{cluster, ns} {
		err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "msa-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builtin.MSAAgentClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName,
			Name: hubaddon.ClusterAddonGroup(cluster, builtin.ManagedServiceAccount)}},
	})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	hubCfg, err := fleet.Hub.UserConfig(hubaddon.DefaultUser(cluster, builtin.ManagedServiceAccount, authv1beta1.AgentName),
		hubaddon.DefaultGroups(cluster, builtin.ManagedServiceAccount)...)
	Expect(err).NotTo(HaveOccurred())
	r := &agentRun{cluster: cluster, namespace: ns}
	runCtx, cancel := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		err := (&msa.Agent{Clock: clk}).Run(runCtx, addon.BuiltinEnv{
			ClusterName: cluster, InstallNamespace: ns, HubConfig: hubCfg, ManagedConfig: rest.CopyConfig(fleet.Hub.Config),
			Healthy: r.healthy.Store, Logger: funcr.New(func(prefix, args string) { GinkgoWriter.Println(cluster, prefix, args) }, funcr.Options{}),
		})
		Expect(err).NotTo(HaveOccurred())
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	DeferCleanup(r.stop)
	return r
}

func newMSA(cluster, name string, validity time.Duration) *authv1beta1.ManagedServiceAccount {
	return &authv1beta1.ManagedServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec:       authv1beta1.ManagedServiceAccountSpec{Rotation: authv1beta1.ManagedServiceAccountRotation{Enabled: true, Validity: metav1.Duration{Duration: validity}}},
	}
}
