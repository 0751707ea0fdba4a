// Package hubtest starts what the hub's end-to-end suites share: a hub API server (etcd,
// kube-apiserver, kube-controller-manager, every Flotilla CRD) and the hub in-process as
// `flotilla hub` runs it, both stopped with the suite through Ginkgo's DeferCleanup.
package hubtest

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // a Ginkgo helper package
	. "github.com/onsi/gomega"    //nolint:staticcheck // a Ginkgo helper package
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// Env is a suite's hub API server and an admin client of it.
type Env struct {
	ControlPlane *environment.ControlPlane
	Scheme       *runtime.Scheme
	// Client is the admin (system:masters), reading from the API server, not a cache.
	Client client.WithWatch
	// Logger writes to GinkgoWriter; controller-runtime logs through it too.
	Logger logr.Logger
}

// StartControlPlane starts the hub API server and sets controller-runtime's logger to one
// writing to GinkgoWriter. Call it from a BeforeSuite.
func StartControlPlane(ctx context.Context) *Env {
	GinkgoHelper()
	env := &Env{Logger: funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})}
	ctrllog.SetLogger(env.Logger)
	var err error
	env.ControlPlane, err = environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true, Log: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(env.ControlPlane.Stop)
	env.Scheme, err = manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	env.Client, err = client.NewWithWatch(env.ControlPlane.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return env
}

// StartHub runs the hub in-process on env's API server with opts (Config, SkipCRDInstall and
// a Logger are filled in when unset) until the suite ends, and returns once its webhooks
// serve.
func (env *Env) StartHub(opts manager.Options) *manager.Hub {
	GinkgoHelper()
	if opts.Config == nil {
		opts.Config = env.ControlPlane.Config
	}
	opts.SkipCRDInstall = true // the control plane installed them
	if opts.Logger.GetSink() == nil {
		opts.Logger = env.Logger.WithName("hub")
	}
	hub, err := manager.New(opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(hub.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(BeClosed())
	})
	Eventually(hub.Webhooks().Ready()).Should(BeClosed())
	return hub
}
