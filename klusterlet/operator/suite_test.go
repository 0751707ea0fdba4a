package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
)

func TestKlusterletOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Klusterlet operator suite")
}

var (
	// managedConfig reaches the suite's cluster, where the operator runs in-process (in
	// place of its Deployment) and the agents are rendered; they do not run (no workloads).
	managedConfig *rest.Config
	managedClient client.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	ctrllog.SetLogger(GinkgoLogr)
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "managed",
		CRDs: []string{environment.KlusterletCRD, environment.WasmPluginCRD}, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	managedConfig = cp.Config
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(operatorv1.AddToScheme(scheme)).To(Succeed())
	managedClient, err = client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	opCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- kop.RunKlusterletOperator(opCtx, kop.OperatorOptions{Config: cp.Config, NotReadyRetry: 2 * time.Second, Logger: GinkgoLogr})
	}()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		Eventually(done).WithContext(ctx).Should(Receive(BeNil()), "the klusterlet operator to stop")
	}, NodeTimeout(30*time.Second))
}, NodeTimeout(3*time.Minute))
