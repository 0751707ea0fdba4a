package operator_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
)

func TestKlusterletOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "Klusterlet operator suite")
}

// specTimeout bounds each spec (and node), so a wait that never ends fails the spec,
// naming it, instead of hanging the suite until go test's timeout.
const specTimeout = 4 * time.Minute

// aliasHost is a host name only the Klusterlet's hubApiServerHostAlias resolves (.invalid
// never resolves: RFC 6761).
const aliasHost = "hub.flotilla.invalid"

var (
	fleet         *environment.Fleet
	hubClient     client.Client
	hubKube       kubernetes.Interface
	managedClient client.Client
	logger        logr.Logger
	logs          *operatorruntest.Logs
	// aliasBootstrap is the hub's bootstrap kubeconfig with its server at aliasHost.
	aliasBootstrap []byte
	hubPort        string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	logger, logs = operatorruntest.NewLogger(GinkgoWriter)
	ctrllog.SetLogger(logger)
	fleet = envfleettest.Start(ctx, environment.Options{ManagedClusters: 1})

	scheme, err := manager.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	hubClient, err = client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	hubKube = kubernetes.NewForConfigOrDie(fleet.Hub.Config)
	managedClient, err = client.New(fleet.Managed[0].Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The hub, in-process, with its admission webhook on 127.0.0.1.
	hub, err := manager.New(manager.Options{Config: fleet.Hub.Config, SkipCRDInstall: true, Logger: logger.WithName("hub")})
	Expect(err).NotTo(HaveOccurred())
	Expect(hub.Prepare(ctx)).To(Succeed())
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(hubDone)
		Expect(hub.Run(hubCtx)).To(Succeed())
	}()
	DeferCleanup(func() {
		stopHub()
		Eventually(hubDone).Should(BeClosed())
	})

	// The bootstrap kubeconfig names the hub by a host name DNS does not know; the API
	// server's certificate does not cover it either, so the kubeconfig verifies it as
	// localhost (tls-server-name), which it covers.
	data, err := bootstrap.Kubeconfig(ctx, fleet.Hub.Config, time.Hour)
	Expect(err).NotTo(HaveOccurred())
	kc, err := clientcmd.Load(data)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		Expect(err).NotTo(HaveOccurred())
		hubPort = u.Port()
		c.Server = "https://" + net.JoinHostPort(aliasHost, hubPort)
		c.TLSServerName = "localhost"
	}
	aliasBootstrap, err = clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	_, err = net.DefaultResolver.LookupHost(ctx, aliasHost)
	Expect(err).To(HaveOccurred(), "%s must not resolve", aliasHost)
}, NodeTimeout(5*time.Minute))
