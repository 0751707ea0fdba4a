// Package hosted_test runs the klusterlet in hosted mode against three control planes: a hub,
// a management cluster the agent runs on (its namespace, Secrets, leader Lease, hosted
// add-ons' Secrets and Leases) and the managed cluster it manages (claims, nodes,
// AppliedManifestWorks and applied objects), reached through a kubeconfig Secret on the
// management cluster.
package hosted_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

var (
	suiteCtx context.Context
	logger   logr.Logger
	scheme   *runtime.Scheme

	hub, management, managed *environment.ControlPlane

	hubClient, managementClient, managedClient client.Client
	hubKube, managementKube, managedKube       kubernetes.Interface
	// bootstrapKubeconfig is the hub's bootstrap identity.
	bootstrapKubeconfig []byte
)

func TestHostedKlusterlet(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Hosted klusterlet suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	logger = envfleettest.Logger()

	// Three control planes started at once; none runs workloads (the agent needs no
	// scheduler or simulated nodes), the managed one has the managed-cluster CRDs.
	opts := []environment.ControlPlaneOptions{
		{Name: "hub", AllCRDs: true},
		{Name: "management"},
		{Name: "managed", CRDs: environment.ManagedClusterCRDs},
	}
	planes := make([]*environment.ControlPlane, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		o.Log = GinkgoWriter
		wg.Go(func() { planes[i], errs[i] = environment.StartControlPlane(ctx, o) })
	}
	wg.Wait()
	DeferCleanup(func(SpecContext) error {
		var stopErrs []error
		for _, cp := range planes {
			if cp != nil {
				stopErrs = append(stopErrs, cp.Stop())
			}
		}
		return errors.Join(stopErrs...)
	}, NodeTimeout(2*time.Minute))
	Expect(errors.Join(errs...)).NotTo(HaveOccurred(), "starting the hub, management and managed control planes")
	hub, management, managed = planes[0], planes[1], planes[2]

	hubClient, scheme = envfleettest.Admin(&environment.Fleet{Hub: hub})
	var err error
	managementClient, err = client.New(management.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	managedClient, err = client.New(managed.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	hubKube = kubernetes.NewForConfigOrDie(hub.Config)
	managementKube = kubernetes.NewForConfigOrDie(management.Config)
	managedKube = kubernetes.NewForConfigOrDie(managed.Config)

	// The hub's controllers make the accepted cluster's namespace and the agents' RBAC.
	h, err := manager.New(manager.Options{Config: hub.Config, SkipCRDInstall: true,
		Webhook: webhook.Options{Disabled: true}, Logger: logger.WithName("hub")})
	Expect(err).NotTo(HaveOccurred())
	Expect(h.Prepare(ctx)).To(Succeed())
	hubCtx, stopHub := context.WithCancel(suiteCtx)
	hubDone := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(hubDone)
		Expect(h.Run(hubCtx)).To(Succeed())
	}()
	DeferCleanup(func(ctx SpecContext) {
		stopHub()
		Eventually(ctx, hubDone).Should(BeClosed(), "the hub stops")
	}, NodeTimeout(time.Minute))
	bootstrapKubeconfig, err = bootstrap.Kubeconfig(ctx, hub.Config, time.Hour)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*time.Minute))
