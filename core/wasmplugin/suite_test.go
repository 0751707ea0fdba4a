package wasmplugin_test

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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
)

func TestWasmPluginController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "WasmPlugin controller")
}

const hubNamespace = "open-cluster-management-hub"

var (
	cfg      *rest.Config
	k8s      client.Client
	scheme   *runtime.Scheme
	engine   *wasm.Engine
	registry *wasm.Registry
	// maxModuleBytes is small so a decompression bomb is cheap to build.
	maxModuleBytes = 8 << 20
)

var _ = BeforeSuite(func(ctx SpecContext) {
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1})
	ctrl.SetLogger(logger)

	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{
		Name: "hub",
		CRDs: []string{"wasmplugins.flotilla.dev"},
		Log:  GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	cfg = cp.Config

	scheme = runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(flotillav1alpha1.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubNamespace}})).To(Succeed())

	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	engine, err = wasm.NewEngine(ctx, wasm.EngineOptions{
		CacheDir:       filepath.Join(cacheDir, "flotilla", "wasm-test-compile"),
		MaxModuleBytes: maxModuleBytes,
		Logger:         logger,
	})
	Expect(err).NotTo(HaveOccurred())
	registry = wasm.NewRegistry()

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  logger,
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(wasmplugin.SetupWithManager(mgr, engine, registry)).To(Succeed())

	mgrCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mgrCtx)).To(Succeed())
	}()
	DeferCleanup(func(ctx SpecContext) {
		cancel()
		<-done
		Expect(engine.Close(ctx)).To(Succeed())
	})
}, NodeTimeout(5*time.Minute))
