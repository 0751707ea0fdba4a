// Package fleettest starts what the end-to-end suites of a hub with real managed clusters
// share: the hub and managed control planes (core/environment), the hub in-process as
// `flotilla hub` runs it, its bootstrap kubeconfig, and in-process klusterlets with the
// identities the klusterlet chart gives them, accepted and Joined, all stopped with the
// suite through Ginkgo's DeferCleanup.
package fleettest

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // a Ginkgo helper package
	. "github.com/onsi/gomega"    //nolint:staticcheck // a Ginkgo helper package
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// Options configures Start.
type Options struct {
	// Environment is the fleet: how many managed clusters, simulated Nodes, the signing
	// duration… Progress goes to GinkgoWriter unless Environment.Log is set.
	Environment environment.Options
	// Hub configures the hub (feature gates, plugin cache, auto-approval…); Config and Logger
	// are filled in when unset, and SkipCRDInstall (the fleet has them).
	Hub manager.Options
	// Logger is the hub's and the klusterlets' logger (named "hub" and "klusterlet"); the zero
	// value writes to GinkgoWriter.
	Logger logr.Logger
	// Klusterlet, when set, gives the options of the klusterlet Start runs for each managed
	// cluster (its name is environment.ManagedClusterName's, cp its control plane; ClusterName
	// and ManagedConfig are filled in when unset, then what StartKlusterlet fills in); Start
	// then accepts the clusters and waits until each is Joined. When nil, Start runs none.
	Klusterlet func(name string, cp *environment.ControlPlane) klusterlet.Options
	// BootstrapKubeconfig, when set, gives the bootstrap kubeconfig of the klusterlet Start
	// runs for cluster name from the hub's, kubeconfig; when nil, every klusterlet gets the
	// hub's.
	BootstrapKubeconfig func(name string, kubeconfig []byte) []byte
}

// Env is a suite's fleet with the hub running, admin clients of the hub and its klusterlets.
type Env struct {
	Fleet  *environment.Fleet
	Scheme *runtime.Scheme
	// HubClient is the hub's admin (system:masters), reading from the API server, not a
	// cache; HubKube is a clientset of the same.
	HubClient client.Client
	HubKube   kubernetes.Interface
	Hub       *manager.Hub
	// BootstrapKubeconfig is the kubeconfig of the hub's bootstrap identity (valid for an
	// hour) that klusterlets register with.
	BootstrapKubeconfig []byte
	Logger              logr.Logger

	ctx     context.Context
	running []*Klusterlet
}

// Start starts the fleet and the hub on it (Prepare, then its controllers until the suite
// ends), creates the bootstrap kubeconfig and, with opts.Klusterlet, runs a klusterlet for
// every managed cluster and accepts them. ctx is the suite's: the hub and the klusterlets
// run in contexts derived from it. Call it from a BeforeSuite; the klusterlets, then the hub,
// then the fleet are stopped when the suite ends.
func Start(ctx context.Context, opts Options) *Env {
	GinkgoHelper()
	env := &Env{Logger: opts.Logger, ctx: ctx}
	if env.Logger.GetSink() == nil {
		env.Logger = funcr.New(func(prefix, args string) { fmt.Fprintln(GinkgoWriter, prefix, args) }, funcr.Options{})
	}
	env.Fleet = envfleettest.Start(ctx, opts.Environment)
	var err error
	env.Scheme, err = manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	env.HubClient, err = client.New(env.Fleet.Hub.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	env.HubKube = kubernetes.NewForConfigOrDie(env.Fleet.Hub.Config)

	hubOpts := opts.Hub
	if hubOpts.Config == nil {
		hubOpts.Config = env.Fleet.Hub.Config
	}
	hubOpts.SkipCRDInstall = true
	if hubOpts.Logger.GetSink() == nil {
		hubOpts.Logger = env.Logger.WithName("hub")
	}
	env.Hub, err = manager.New(hubOpts)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.Hub.Prepare(ctx)).To(Succeed())
	hubCtx, stopHub := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		defer GinkgoRecover()
		Expect(env.Hub.Manager().Start(hubCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		stopHub()
		<-hubDone
	})

	env.BootstrapKubeconfig, err = bootstrap.Kubeconfig(ctx, env.Fleet.Hub.Config, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		for _, k := range env.running {
			k.Stop()
		}
	})
	if opts.Klusterlet == nil {
		return env
	}
	var names []string
	for i, cp := range env.Fleet.Managed {
		name := environment.ManagedClusterName(i)
		ko := opts.Klusterlet(name, cp)
		if ko.Registration.ClusterName == "" {
			ko.Registration.ClusterName = name
		}
		if ko.Registration.ManagedConfig == nil {
			ko.Registration.ManagedConfig = cp.Config
		}
		if opts.BootstrapKubeconfig != nil {
			ko.Registration.BootstrapKubeconfig = opts.BootstrapKubeconfig(name, env.BootstrapKubeconfig)
		}
		env.StartKlusterlet(ko)
		names = append(names, name)
	}
	env.accept(names...)
	return env
}

// accept accepts the clusters, once each has registered, and waits until each is Joined.
func (env *Env) accept(names ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		_, err := admin.Accept(env.ctx, env.HubClient, env.HubKube, names)
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	for _, name := range names {
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(env.HubClient.Get(env.ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed())
	}
}

// Klusterlet is an in-process klusterlet.
type Klusterlet struct {
	// Options are the ones it runs with.
	Options klusterlet.Options
	cancel  context.CancelFunc
	done    chan struct{}
}

// StartKlusterlet runs a klusterlet with opts until it is stopped or the suite ends. Of
// opts.Registration, ClusterName and ManagedConfig are required; when unset, the bootstrap
// kubeconfig is env's, the retry back-off goes from 200 ms to 2 s and the logger is env's
// "klusterlet" with the cluster's name. Klusterlet.Run must end without error.
//
// ManagedConfig is taken as an admin's: the klusterlet runs with the identities the
// klusterlet chart gives its Deployment, installed with it (install.KlusterletIdentity) for
// the Klusterlet named after the agent namespace (klusterlet for the default one, so two
// klusterlets on one cluster do not share them): the agent as <name>-agent, the work agent
// as <name>-work-sa, unless opts.Work.ServiceAccount is set.
func (env *Env) StartKlusterlet(opts klusterlet.Options) *Klusterlet {
	GinkgoHelper()
	r := &opts.Registration
	ns := cmp.Or(r.AgentNamespace, registration.DefaultAgentNamespace)
	name := ns
	if ns == registration.DefaultAgentNamespace {
		name = join.DefaultKlusterletName
	}
	agent, workSA, err := install.KlusterletIdentity(env.ctx, r.ManagedConfig, name, ns)
	Expect(err).NotTo(HaveOccurred(), "installing the identities of klusterlet %s", name)
	r.ManagedConfig = agent
	opts.Work.ServiceAccount = cmp.Or(opts.Work.ServiceAccount, workSA)
	if r.BootstrapKubeconfig == nil {
		r.BootstrapKubeconfig = env.BootstrapKubeconfig
	}
	if r.RetryInitial == 0 {
		r.RetryInitial = 200 * time.Millisecond
	}
	if r.RetryMax == 0 {
		r.RetryMax = 2 * time.Second
	}
	if r.Logger.GetSink() == nil {
		r.Logger = env.Logger.WithName("klusterlet").WithValues("cluster", r.ClusterName)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	k := &Klusterlet{Options: opts, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		defer GinkgoRecover()
		Expect(klusterlet.Run(ctx, opts)).To(Succeed())
	}()
	env.running = append(env.running, k)
	return k
}

// Stop stops the klusterlet and waits until it has; stopping it again does nothing.
func (k *Klusterlet) Stop() {
	k.cancel()
	<-k.done
}
