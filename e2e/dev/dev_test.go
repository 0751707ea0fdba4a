// Package dev checks `flotilla dev` as make run starts it: the hub installed through the hub
// operator in topology Split, a managed cluster joined through the klusterlet operator (a
// Singleton Klusterlet), their Deployments run as processes, the cluster accepted, and what
// clusteradm get hub-info and get klusterlet-info print on them.
package dev

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	"github.com/flotilla-dev/flotilla/e2e/internal/clusteradmview"
)

// runAsFlotillaEnv makes this test binary run as the flotilla binary: flotilla dev runs the
// hub's Deployments with its own executable, which here is this one.
const runAsFlotillaEnv = "FLOTILLA_E2E_DEV_RUN_AS_FLOTILLA"

func TestMain(m *testing.M) {
	if os.Getenv(runAsFlotillaEnv) == "1" {
		root := commands.NewRoot()
		root.SetArgs(os.Args[1:])
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := root.ExecuteContext(ctx)
		stop()
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestDev(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "flotilla dev e2e")
}

var _ = It("flotilla dev installs the Split hub and the klusterlets through the operators; clusteradm get hub-info and klusterlet-info list the operators and every component", func(ctx SpecContext) {
	GinkgoT().Setenv(runAsFlotillaEnv, "1") // for the processes dev starts
	dir := filepath.Join(GinkgoT().TempDir(), "dev")
	out := gbytes.NewBuffer()
	root := commands.NewRoot()
	root.SetOut(out)
	root.SetErr(GinkgoWriter)
	root.SetArgs([]string{"dev", "--managed-clusters", "1", "--dir", dir})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		defer GinkgoRecover()
		done <- root.ExecuteContext(runCtx)
	}()
	Eventually(out).WithTimeout(3*time.Minute).Should(gbytes.Say("Fleet ready in"), "the control planes")
	ready := time.Now()
	Eventually(out).WithTimeout(5*time.Minute).Should(gbytes.Say("Managed clusters joined and accepted"), "the cluster table")
	GinkgoWriter.Printf("flotilla dev: control planes ready after %s, the cluster table %s later\n",
		ready.Sub(start).Round(100*time.Millisecond), time.Since(ready).Round(100*time.Millisecond))

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "hub", "kubeconfig"))
	Expect(err).NotTo(HaveOccurred())
	// The chart's image; the operator hands it to the components.
	want := clusteradmview.SplitHubInfo("ghcr.io/flotilla-dev/flotilla:0.1.0", false)
	var info string
	Eventually(func(g Gomega) {
		info, err = clusteradmview.HubInfo(ctx, cfg)
		g.Expect(err).NotTo(HaveOccurred(), "hub-info:\n%s", info)
		g.Expect(info).To(HavePrefix(want))
	}).WithTimeout(time.Minute).Should(Succeed(), "clusteradm get hub-info on flotilla dev's hub")
	Expect(info).To(ContainSubstring("    (installed) managedclusters.cluster.open-cluster-management.io [*v1]\n"))
	Expect(info).NotTo(ContainSubstring("(absent)"))
	GinkgoWriter.Printf("clusteradm get hub-info:\n%s", info)

	// The managed cluster: the klusterlet operator and the Singleton agent klusterlet-agent,
	// both of the chart's image (the operator hands its own to the agent).
	mcfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "cluster1", "kubeconfig"))
	Expect(err).NotTo(HaveOccurred())
	wantK := clusteradmview.SingletonKlusterletInfo("ghcr.io/flotilla-dev/flotilla:0.1.0", "ghcr.io/flotilla-dev/flotilla:0.1.0")
	Eventually(func(g Gomega) {
		info, err = clusteradmview.KlusterletInfo(ctx, mcfg)
		g.Expect(err).NotTo(HaveOccurred(), "klusterlet-info:\n%s", info)
		g.Expect(info).To(ContainSubstring(wantK))
		g.Expect(info).To(ContainSubstring("  Type:\t\t\tHubConnectionDegraded\n  Status:\t\tFalse\n"))
	}).WithTimeout(time.Minute).Should(Succeed(), "clusteradm get klusterlet-info on flotilla dev's cluster1")
	Expect(info).NotTo(ContainSubstring("Registration Operator:\t<none>"))
	Expect(info).NotTo(ContainSubstring("(absent)"))
	GinkgoWriter.Printf("clusteradm get klusterlet-info:\n%s", info)

	stop() // as Ctrl-C would
	Eventually(done).WithTimeout(2*time.Minute).Should(Receive(BeNil()), "flotilla dev stopping")
	Expect(string(out.Contents())).To(ContainSubstring("Stopped."))
}, SpecTimeout(10*time.Minute))
