package webhook_test

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

func TestWebhookServer(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Hub webhook server")
}

// workNamespace is the cluster namespace the specs create ManifestWorks in.
const workNamespace = "cluster1"

var (
	hub     *environment.ControlPlane
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	logger  logr.Logger
	works   = workv1.GroupVersion.WithResource("manifestworks")
	hubConf *rest.Config
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{Verbosity: 1})
	var err error
	hub, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hub.Stop)
	hubConf = hub.Config
	kube = kubernetes.NewForConfigOrDie(hubConf)
	dyn = dynamic.NewForConfigOrDie(hubConf)
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workNamespace}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
})

// running is a started Server.
type running struct {
	*webhook.Server
	cancel   context.CancelFunc
	finished chan struct{}
	err      error
}

// stop stops the server and waits for it; the configuration stays.
func (r *running) stop() {
	GinkgoHelper()
	r.cancel()
	Eventually(r.finished).Should(BeClosed())
	Expect(r.err).NotTo(HaveOccurred())
}

// start runs a Server with the handlers until stopped, waiting until it is in effect.
func start(opts webhook.Options, handlers ...webhook.Validating) *running {
	GinkgoHelper()
	return startWith(opts, func(srv *webhook.Server) {
		for _, h := range handlers {
			Expect(srv.Register(h)).To(Succeed())
		}
	})
}

// startWith runs a Server set up by setup until stopped, waiting until it is in effect.
func startWith(opts webhook.Options, setup func(*webhook.Server)) *running {
	GinkgoHelper()
	opts.Logger = logger.WithName("webhook")
	srv, err := webhook.New(hubConf, opts)
	Expect(err).NotTo(HaveOccurred())
	setup(srv)
	r := run(srv)
	Eventually(srv.Ready()).Should(BeClosed())
	return r
}

// run starts srv until stopped, without waiting.
func run(srv *webhook.Server) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Server: srv, cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(r.finished)
		r.err = srv.Start(ctx)
	}()
	return r
}

// cleanup stops r when the current spec or container ends and deletes its configuration, so
// specs do not see each other's.
func cleanup(r *running) {
	DeferCleanup(func(ctx SpecContext) {
		r.stop()
		err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, r.ConfigurationName(), metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the configuration: %v", err)
		err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, r.ConfigurationName(), metav1.DeleteOptions{})
		Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "deleting the mutating configuration: %v", err)
	})
}

// parseYAML reads one object written as YAML.
func parseYAML(doc string) *unstructured.Unstructured {
	GinkgoHelper()
	obj := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
	return obj
}

// createYAML creates a ManifestWork written as YAML, as kubectl create -f does.
func createYAML(ctx context.Context, doc string, dryRun bool) (*unstructured.Unstructured, error) {
	obj := parseYAML(doc)
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return dyn.Resource(works).Namespace(obj.GetNamespace()).Create(ctx, obj, opts)
}
