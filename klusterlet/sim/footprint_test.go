package sim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/environment"
	envfleettest "github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet/sim"
)

// FootprintEnv opts in to TestFootprint: a comma-separated list of fleet sizes, e.g. "50,200".
// FootprintProfileEnv, when set, names a directory for heap and goroutine profiles of each run.
// FootprintMaxEnv, when set, fails a size whose RSS per cluster exceeds it (MiB), e.g. 1.5.
const (
	FootprintEnv        = "FLOTILLA_SIM_FOOTPRINT"
	FootprintProfileEnv = "FLOTILLA_SIM_FOOTPRINT_PROFILES"
	FootprintMaxEnv     = "FLOTILLA_SIM_FOOTPRINT_MAX_RSS_MIB"
)

// TestFootprint measures what an idle joined simulated cluster costs the simulator's process
// (a measurement, not a check; off unless FLOTILLA_SIM_FOOTPRINT is set). The hub runs as its
// own process (`flotilla hub` from FLOTILLA_BIN_DIR), so the figures are the simulator's
// alone: the growth of the process's in-use heap, goroutine stacks, goroutines and resident set
// from before the fleet is built to after it has joined and idled for 30 s, each read after a
// GC that returns freed memory to the OS (so RSS is what is in use, not the heap's peak).
// Each size prints
//
//	sim-footprint clusters=N heap_mib_per_cluster=.. stack_mib_per_cluster=.. goroutines_per_cluster=.. rss_mib_per_cluster=..
func TestFootprint(t *testing.T) {
	if os.Getenv(FootprintEnv) == "" {
		t.Skipf("set %s=<sizes> (e.g. 50,200) to measure", FootprintEnv)
	}
	ctrllog.SetLogger(logr.Discard())
	RegisterFailHandler(Fail)
	RunSpecs(t, "Simulator footprint")
}

var _ = Describe("an idle simulated fleet's footprint", Ordered, func() {
	var (
		hubAdmin client.Client
		kc       []byte
	)

	BeforeAll(func(ctx SpecContext) {
		env := envfleettest.Start(ctx, environment.Options{})
		var err error
		hubAdmin, err = client.New(env.Hub.Config, client.Options{Scheme: apischeme.New()})
		Expect(err).NotTo(HaveOccurred())
		binary, err := environment.FlotillaBinary()
		Expect(err).NotTo(HaveOccurred())
		hubCtx, stop := context.WithCancel(context.Background())
		hub := exec.CommandContext(hubCtx, binary, "hub", "--kubeconfig", env.Hub.KubeconfigPath,
			"--feature-gates", "ManagedClusterAutoApproval=true", "--autoapprove-cluster-patterns", "sim-*",
			"--kube-api-qps", "1000", "--kube-api-burst", "2000")
		hub.Stdout, hub.Stderr = GinkgoWriter, GinkgoWriter
		Expect(hub.Start()).To(Succeed(), "starting %s hub", binary)
		DeferCleanup(func() { stop(); _ = hub.Wait() })
		// The hub makes its namespace and the bootstrap ServiceAccount as it starts.
		Eventually(func() (err error) {
			kc, err = bootstrap.Kubeconfig(ctx, env.Hub.Config, time.Hour)
			return err
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "the hub's bootstrap kubeconfig")
	}, NodeTimeout(3*time.Minute))

	It("costs heap, stacks, goroutines and RSS per idle joined cluster", func(ctx SpecContext) {
		for i, s := range strings.Split(os.Getenv(FootprintEnv), ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			Expect(err).NotTo(HaveOccurred(), "%s=%q", FootprintEnv, os.Getenv(FootprintEnv))
			measure(ctx, hubAdmin, kc, fmt.Sprintf("fp%d-", i), n)
		}
	}, SpecTimeout(30*time.Minute))
})

type usage struct {
	heap, stack, rss float64 // MiB
	goroutines       int
}

func measureUsage() usage {
	GinkgoHelper()
	goruntime.GC()
	debug.FreeOSMemory() // RSS then counts what is in use, not what the heap once peaked at
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	rss, err := environment.RSSMiB(os.Getpid())
	Expect(err).NotTo(HaveOccurred())
	return usage{heap: float64(ms.HeapInuse) / (1 << 20), stack: float64(ms.StackInuse) / (1 << 20), rss: rss,
		goroutines: goruntime.NumGoroutine()}
}

// measure runs n simulated clusters (names prefix+"sim-"+index) until all are Joined and
// Available on the hub, lets them idle for a lease period, and prints their cost.
func measure(ctx context.Context, hub client.Client, kubeconfig []byte, prefix string, n int) {
	GinkgoHelper()
	before := measureUsage()
	opts := sim.Options{Clusters: n, Prefix: "sim-" + prefix, BootstrapKubeconfig: kubeconfig,
		Claims: []sim.Vary{{Key: "region.sim.test", Values: []string{"east", "west"}}}}
	f, err := sim.New(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	defer func() {
		cancel()
		Eventually(done).WithTimeout(2*time.Minute).Should(Receive(Not(HaveOccurred())), "the %d simulated clusters stop", n)
	}()
	start := time.Now()
	Eventually(func(g Gomega) {
		list := &clusterv1.ManagedClusterList{}
		g.Expect(hub.List(ctx, list)).To(Succeed())
		available := 0
		for _, mc := range list.Items {
			if strings.HasPrefix(mc.Name, opts.Prefix) && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
				available++
			}
		}
		g.Expect(available).To(Equal(n), "ManagedClusters %s* Available", opts.Prefix)
	}).WithContext(ctx).WithTimeout(time.Duration(n)*time.Second+2*time.Minute).WithPolling(time.Second).
		Should(Succeed(), "all %d simulated clusters Joined and Available", n)
	joined := time.Since(start)
	// Idle: every agent renews its lease and syncs its status at least once more. This is a
	// measurement of the steady state, so it waits for it.
	select {
	case <-ctx.Done():
		Fail("interrupted while idling")
	case <-time.After(30 * time.Second):
	}
	after := measureUsage()
	if dir := os.Getenv(FootprintProfileEnv); dir != "" {
		for _, p := range []string{"heap", "goroutine"} {
			out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", p, n)))
			Expect(err).NotTo(HaveOccurred())
			Expect(pprof.Lookup(p).WriteTo(out, 0)).To(Succeed())
			Expect(out.Close()).To(Succeed())
		}
	}
	per := func(a, b float64) float64 { return (b - a) / float64(n) }
	line := fmt.Sprintf("sim-footprint clusters=%d heap_mib_per_cluster=%.3f stack_mib_per_cluster=%.3f goroutines_per_cluster=%.1f rss_mib_per_cluster=%.3f join_s=%.1f",
		n, per(before.heap, after.heap), per(before.stack, after.stack), float64(after.goroutines-before.goroutines)/float64(n),
		per(before.rss, after.rss), joined.Seconds())
	fmt.Println(line)
	AddReportEntry("sim-footprint", line)
	if s := os.Getenv(FootprintMaxEnv); s != "" {
		limit, err := strconv.ParseFloat(s, 64)
		Expect(err).NotTo(HaveOccurred(), "%s=%q", FootprintMaxEnv, s)
		Expect(per(before.rss, after.rss)).To(BeNumerically("<=", limit), "RSS MiB per idle joined cluster of %d (%s)", n, FootprintMaxEnv)
	}
}
