// Package hosted is the end-to-end suite of the klusterlet operator (`flotilla operator
// klusterlet`) on two real control planes: a management cluster, where the operator runs
// in-process and the Klusterlets live, and a managed cluster, which Hosted Klusterlets reach
// through their external-managed-kubeconfig Secret. Two hub control planes, each with the
// hub in-process, and the flotilla binary serve the hosted agents' specs
// (hosted_agents_test.go), which run the agents' Deployments as processes.
package hosted

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
)

func TestHosted(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Klusterlet operator (hosted) e2e")
}

var (
	management, managed       *environment.ControlPlane
	mgmtClient, managedClient client.Client
	mgmtKube, managedKube     kubernetes.Interface
	managedKubeconfig         []byte

	// hubA and hubB are hub control planes, each with the hub running in-process; hubAClient
	// and hubBClient are their admin clients.
	hubA, hubB             *environment.ControlPlane
	hubAClient, hubBClient client.Client
	// flotillaBin is the binary the agents' Deployments run as processes.
	flotillaBin string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	// A wait that names no deadline of its own gets one that outlasts an agent process's
	// 30 s stop grace on a loaded machine (Gomega's default is 1 s).
	SetDefaultEventuallyTimeout(90 * time.Second)
	// The control planes start at once, and the binary builds beside them.
	var g errgroup.Group
	g.Go(func() error {
		var err error
		flotillaBin, err = hubtest.BuildFlotilla(ctx, GinkgoT().TempDir())
		return err
	})
	g.Go(func() (err error) {
		hubA, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub-a", AllCRDs: true, Log: GinkgoWriter})
		return err
	})
	g.Go(func() (err error) {
		hubB, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub-b", AllCRDs: true, Log: GinkgoWriter})
		return err
	})
	g.Go(func() (err error) {
		management, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "management",
			CRDs: []string{environment.KlusterletCRD, environment.WasmPluginCRD}, Log: GinkgoWriter})
		return err
	})
	g.Go(func() (err error) {
		managed, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "managed", Log: GinkgoWriter})
		return err
	})
	err := g.Wait()
	DeferCleanup(func(context.Context) {
		for _, cp := range []*environment.ControlPlane{management, managed, hubA, hubB} {
			if cp != nil {
				Expect(cp.Stop()).To(Succeed())
			}
		}
	}, NodeTimeout(time.Minute))
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(operatorv1.AddToScheme(scheme)).To(Succeed())
	mgmtClient, err = client.New(management.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managedClient, err = client.New(managed.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	mgmtKube = kubernetes.NewForConfigOrDie(management.Config)
	managedKube = kubernetes.NewForConfigOrDie(managed.Config)
	managedKubeconfig, err = os.ReadFile(managed.KubeconfigPath)
	Expect(err).NotTo(HaveOccurred())

	hubAClient, _ = envfleettest.Admin(&environment.Fleet{Hub: hubA})
	hubBClient, _ = envfleettest.Admin(&environment.Fleet{Hub: hubB})

	// The operator, in-process, in place of its Deployment.
	opCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logger := funcr.New(func(prefix, args string) { GinkgoWriter.Println(prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	for _, h := range []*environment.ControlPlane{hubA, hubB} {
		startHub(ctx, h, logger.WithName(h.Name))
	}
	go func() {
		done <- kop.RunKlusterletOperator(opCtx, kop.OperatorOptions{Config: management.Config, NotReadyRetry: 2 * time.Second, Logger: logger})
	}()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "the klusterlet operator to stop")
	}, NodeTimeout(30*time.Second))
}, NodeTimeout(10*time.Minute))

// startHub runs the hub on cp in-process until the suite ends: its controllers accept
// clusters, sign their certificates, make their namespaces and RBAC, and run the add-on
// manager; no admission webhooks.
func startHub(ctx context.Context, cp *environment.ControlPlane, logger logr.Logger) {
	GinkgoHelper()
	h, err := manager.New(manager.Options{Config: cp.Config, SkipCRDInstall: true,
		Webhook: webhook.Options{Disabled: true}, Logger: logger})
	Expect(err).NotTo(HaveOccurred())
	Expect(h.Prepare(ctx)).To(Succeed())
	hubCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(hubCtx) }()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "the hub on %s to stop", cp.Name)
	}, NodeTimeout(30*time.Second))
}
