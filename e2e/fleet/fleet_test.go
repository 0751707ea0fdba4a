package fleet

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleetbench"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet/sim"
)

var _ = Describe("A simulated fleet of 200 clusters", func() {
	It("joins by auto-approval, stays Available except the silent ones, is placed, and gets works and an add-on", func(ctx SpecContext) {
		env := hubtest.StartControlPlane(ctx)
		gates, err := manager.NewFeatureGate()
		Expect(err).NotTo(HaveOccurred())
		Expect(gates.SetFromMap(map[string]bool{string(featuregates.ManagedClusterAutoApproval): true})).To(Succeed())
		env.StartHub(manager.Options{FeatureGates: gates, AutoApprove: plugininstall.AutoApprove{ClusterNamePatterns: []string{"sim-*"}}})
		kc, err := bootstrap.Kubeconfig(ctx, env.ControlPlane.Config, time.Hour)
		Expect(err).NotTo(HaveOccurred())

		cfg := fleetbench.Config{Clusters: 200, WorksPerCluster: 1, Placements: 10, Steady: 5 * time.Second,
			Churn: 5 * time.Second, ChurnEvery: 5 * time.Second, Silent: 0.02, Out: GinkgoWriter}
		opts := fleetbench.SimOptions(cfg)
		opts.BootstrapKubeconfig = kc
		// Short leases, so the silent clusters go Unknown within the run: renewals every
		// 4 s, stale after 20 s.
		opts.LeaseDurationSeconds, opts.SilentAfter = 4, 5*time.Second
		opts.Logger = env.Logger.WithName("sim").V(1)
		f, err := sim.New(ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		res, err := fleetbench.Run(ctx, env.Client, f, cfg, fleetbench.Probe{})
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintln(GinkgoWriter, res.Line())
		Expect(res.UnknownFlaps).To(BeZero(), "live clusters the hub marked Available=Unknown")
		Expect(res.SilentMarked).To(Equal(4), "the 2%% silent clusters (4 of 200) are marked Available=Unknown once their lease stops")
	}, SpecTimeout(4*time.Minute))
})
