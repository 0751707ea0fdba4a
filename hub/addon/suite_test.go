package addon_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon"
)

// One control plane is the hub, running the add-on manager and the WasmPlugin loader. No
// klusterlet runs: specs create their ManagedClusters (and namespaces) and play the work
// agent by writing the status of the ManifestWorks the manager creates.
var (
	suiteCtx context.Context
	fleet    *environment.Fleet
	admin    client.Client
)

func TestAddOnManager(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Add-on manager suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	fleet = envfleettest.Start(ctx, environment.Options{})
	var scheme *runtime.Scheme
	admin, scheme = envfleettest.Admin(fleet)
	logger := envfleettest.Logger()

	engine, err := wasm.NewEngine(suiteCtx, wasm.EngineOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = engine.Close(context.Background()) })
	registry := wasm.NewRegistry()
	skip := true
	mgr, err := ctrl.NewManager(fleet.Hub.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger.WithName("hub"),
	})
	Expect(err).NotTo(HaveOccurred())
	Expect((&hubaddon.Manager{Client: mgr.GetClient(), Registry: registry, MaxWorkSize: 500 * 1024}).SetupWithManager(mgr)).To(Succeed())
	Expect(wasmplugin.SetupWithManager(mgr, engine, registry)).To(Succeed())
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		<-hubDone
	})
}, NodeTimeout(5*time.Minute))
