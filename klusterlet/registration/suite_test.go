package registration_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// signingDuration is the hub signer's certificate lifetime. kube-controller-manager
// backdates NotBefore by 5 minutes, so a certificate lives 7 minutes and the agent
// rotates it 20% to 25% (84s to 105s) before it expires: 15s to 36s after it was issued.
const signingDuration = 2 * time.Minute

var (
	fleet *environment.Fleet

	hubAdmin      client.Client
	hubKube       kubernetes.Interface
	managedAdmin  client.Client
	managedKube   kubernetes.Interface
	bootstrapData []byte // kubeconfig of the bootstrap identity on the hub
)

func TestRegistrationAgent(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Registration agent suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	fleet, err = environment.Start(ctx, environment.Options{
		ManagedClusters: 1,
		SigningDuration: signingDuration,
		Log:             GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })

	scheme, err := registration.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubAdmin, err = client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	hubKube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	managedAdmin, err = client.New(fleet.Managed[0].Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managedKube = kubernetes.NewForConfigOrDie(fleet.Managed[0].Config)

	Expect(grantBootstrapRole(ctx)).To(Succeed())
	bootCfg, err := fleet.Hub.UserConfig(bootstrapUser, bootstrapGroup)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "bootstrap.kubeconfig")
	Expect(environment.WriteKubeconfig(path, "hub", bootCfg)).To(Succeed())
	bootstrapData, err = os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())

	approverCtx, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	go approveRenewals(approverCtx)
}, NodeTimeout(5*time.Minute))
