package operator_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestHubOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Hub operator suite")
}

var (
	hubClient client.WithWatch
	// hubConfig reaches the control plane (the hub operator's specs run an operator on it).
	hubConfig *rest.Config
)

// The suite's control plane runs the workload controllers, kube-scheduler and KWOK with one
// simulated Node, so the Deployments the operator applies get the status
// kube-controller-manager writes. It has every CRD, as a hub's registration-controller
// installs them.
var _ = BeforeSuite(func(ctx SpecContext) {
	ctrllog.SetLogger(GinkgoLogr)
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true,
		Workloads: true, SimulatedNodes: 1, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cp.Stop)
	hubConfig = cp.Config
	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubClient, err = client.NewWithWatch(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubNS}})).To(Succeed())
}, NodeTimeout(3*time.Minute))
