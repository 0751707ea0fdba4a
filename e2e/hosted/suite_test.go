// Package hosted is the end-to-end suite of the klusterlet operator (`flotilla operator
// klusterlet`) on two real control planes: a management cluster, where the operator runs
// in-process and the Klusterlets live, and a managed cluster, which Hosted Klusterlets reach
// through their external-managed-kubeconfig Secret.
package hosted

import (
	"context"
	"os"
	"testing"
	"time"

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
)

var _ = BeforeSuite(func(ctx SpecContext) {
	// Both control planes start at once.
	var g errgroup.Group
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
		for _, cp := range []*environment.ControlPlane{management, managed} {
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

	// The operator, in-process, in place of its Deployment.
	opCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logger := funcr.New(func(prefix, args string) { GinkgoWriter.Println(prefix, args) }, funcr.Options{})
	ctrllog.SetLogger(logger)
	go func() {
		done <- kop.RunKlusterletOperator(opCtx, kop.OperatorOptions{Config: management.Config, NotReadyRetry: 2 * time.Second, Logger: logger})
	}()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "the klusterlet operator to stop")
	}, NodeTimeout(30*time.Second))
}, NodeTimeout(4*time.Minute))
