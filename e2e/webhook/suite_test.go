// Package webhook is the end-to-end suite of the hub's admission webhooks as the hub runs
// them (hub/manager with its defaults, as in flotilla dev and flotilla hub): a real hub API
// server, the hub in-process, ManifestWorks written as kubectl writes them.
package webhook

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestWebhookE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Hub webhook e2e")
}

const clusterNamespace = "cluster1"

var (
	controlPlane *environment.ControlPlane
	kube         kubernetes.Interface
	dyn          dynamic.Interface
	logger       logr.Logger
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})
	var err error
	controlPlane, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(controlPlane.Stop)
	kube = kubernetes.NewForConfigOrDie(controlPlane.Config)
	dyn = dynamic.NewForConfigOrDie(controlPlane.Config)
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*time.Minute))

// runningHub is a hub started with startHub.
type runningHub struct {
	*manager.Hub
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *runningHub) stop() {
	GinkgoHelper()
	h.cancel()
	Eventually(h.done).Should(BeClosed())
}

// startHub runs a hub with opts (no Wasm plugins: not what this suite is about) until the
// spec ends or stop, and waits until its webhooks are in effect.
func startHub(opts manager.Options) *runningHub {
	GinkgoHelper()
	opts.Config = controlPlane.Config
	opts.SkipCRDInstall, opts.SkipWasmPluginController, opts.SkipPluginInstall = true, true, true
	opts.Logger = logger.WithName("hub")
	h, err := manager.New(opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningHub{Hub: h, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		Expect(h.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(r.cancel)
	if h.Webhooks() != nil {
		Eventually(h.Webhooks().Ready()).Should(BeClosed())
	}
	return r
}
