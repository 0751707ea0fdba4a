package klusterlet_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// A hub (in-process, on its own control plane) and one managed cluster, for the klusterlet's
// runtime: leader election between replicas, metrics and health endpoints.
var (
	suiteCtx     context.Context
	fleet        *environment.Fleet
	logger       logr.Logger
	hubClient    client.Client
	hubKube      kubernetes.Interface
	managedAdmin client.Client
	managedKube  kubernetes.Interface
	// bootstrapKubeconfig is the hub's bootstrap identity the klusterlets register with.
	bootstrapKubeconfig []byte
)

func TestKlusterletRuntime(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Klusterlet runtime suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	logger = envfleettest.Logger()
	fleet = envfleettest.Start(ctx, environment.Options{ManagedClusters: 1})

	var scheme *runtime.Scheme
	hubClient, scheme = envfleettest.Admin(fleet)
	hubKube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	var err error
	managedAdmin, err = client.New(fleet.Managed[0].Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managedKube = kubernetes.NewForConfigOrDie(fleet.Managed[0].Config)

	// The hub's controllers make the accepted cluster's namespace and the agents' RBAC; no
	// admission is needed here.
	hub, err := manager.New(manager.Options{Config: fleet.Hub.Config, SkipCRDInstall: true,
		Webhook: webhook.Options{Disabled: true}, Logger: logger.WithName("hub")})
	Expect(err).NotTo(HaveOccurred())
	Expect(hub.Prepare(ctx)).To(Succeed())
	hubCtx, stopHub := context.WithCancel(suiteCtx)
	hubDone := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(hubDone)
		Expect(hub.Run(hubCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		stopHub()
		<-hubDone
	})
	bootstrapKubeconfig, err = bootstrap.Kubeconfig(ctx, fleet.Hub.Config, time.Hour)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*time.Minute))
