// Command bench is make bench-fleet: a hub API server, the hub as its own process (whose CPU
// and memory it reads) and a simulated fleet (klusterlet/sim) in this process, through the
// phases of e2e/internal/fleetbench. With -sizes one hub sees the fleet grow through the
// sizes, measured in the steady phase at each (for -curve-steady); the other phases run at
// the largest. It prints how each figure grows per cluster and writes the curve as an SVG
// (-plot). Its last line is the largest size's (join_s is the sum of the joins to reach it):
//
//	fleet-5000 join_s=.. steady_hub_cpu_cores=.. hub_rss_mib=.. apiserver_rss_mib=.. etcd_db_mib=.. unknown_flaps=.. placements_100_s=.. score_churn_hub_cpu_cores=.. mwrs_all_s=.. addon_all_s=..
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleetbench"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/klusterlet/sim"
)

func main() {
	var cfg fleetbench.Config
	flag.IntVar(&cfg.Clusters, "clusters", 5000, "simulated clusters (with -sizes, ignored)")
	sizes := flag.String("sizes", "", "comma-separated cluster counts the fleet grows through on one hub (e.g. 500,1000,2000,5000), measured at each; the other phases run at the largest; prints the growth and writes -plot")
	plot := flag.String("plot", "", "with -sizes, write the curve here as SVG")
	flag.IntVar(&cfg.WorksPerCluster, "works-per-cluster", 10, "ManifestWorks each cluster has before the ManifestWorkReplicaSet")
	flag.IntVar(&cfg.Placements, "placements", 100, "Placements of the placement phase")
	flag.DurationVar(&cfg.Steady, "steady", 5*time.Minute, "length of the steady phase")
	flag.DurationVar(&cfg.CurveSteady, "curve-steady", 2*time.Minute, "with -sizes, length of the steady phase at each size before the largest")
	flag.DurationVar(&cfg.Churn, "churn", 5*time.Minute, "length of the score churn")
	flag.DurationVar(&cfg.ChurnEvery, "churn-every", time.Minute, "every cluster's score is updated this often during the churn")
	signing := flag.Duration("signing-duration", 24*time.Hour, "lifetime of the client certificates the hub signs (kube-controller-manager --cluster-signing-duration); agents rotate theirs at 80% of it, so a short one adds rotations to every phase")
	profileDir := flag.String("profile", "", "write 60 s CPU profiles of the hub (hub.NAME.cpu.pprof) and the simulator's heap (sim.NAME.heap.pprof) to this directory, at the start of each join (NAME join-N) and of the last steady phase")
	flag.Float64Var(&cfg.Silent, "silent", 0.01, "fraction of clusters whose agent stops after joining")
	gcPercent := flag.Int("sim-gc-percent", 50, "GOGC of this process, which runs the simulated clusters: below Go's 100 its heap grows less past what is live (at 5,000 clusters with their works about 4.4 GiB live and 2 GiB of goroutine stacks), so the simulator fits beside the hub's API server on one machine, for more of its CPU spent collecting")
	benchenv.Main("bench-fleet", 4*time.Hour, func(ctx context.Context, binary string, verbose bool) (string, error) {
		debug.SetGCPercent(*gcPercent)
		cfg.Out = os.Stdout
		ns := []int{cfg.Clusters}
		if *sizes != "" {
			ns = nil
			for _, s := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					return "", fmt.Errorf("-sizes %q: %q is not a positive count", *sizes, s)
				}
				ns = append(ns, n)
			}
			sort.Ints(ns)
			ns = slices.Compact(ns)
		}
		cfg.Clusters = ns[len(ns)-1]
		var plotErr error
		cfg.Sized = func(rs []fleetbench.Result) {
			if len(rs) < 2 {
				return
			}
			fleetbench.Growth(os.Stdout, rs)
			if *plot != "" {
				if plotErr = os.WriteFile(*plot, []byte(fleetbench.SVG(rs)), 0o644); plotErr == nil {
					fmt.Printf("curve written to %s\n", *plot)
				}
			}
		}
		results, err := run(ctx, binary, verbose, cfg, ns, *signing, *profileDir)
		if err = errors.Join(err, plotErr); err != nil {
			return "", fmt.Errorf("%d clusters: %w", cfg.Clusters, err)
		}
		return results[len(results)-1].Line(), nil
	})
}

func run(ctx context.Context, binary string, verbose bool, cfg fleetbench.Config, sizes []int, signing time.Duration, profileDir string) (res []fleetbench.Result, err error) {
	cp, err := benchenv.StartControlPlane(ctx, environment.ControlPlaneOptions{SigningDuration: signing})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	args := []string{"--autoapprove-cluster-patterns", "sim-*"}
	var profile func(ctx context.Context, name string) error
	if profileDir != "" {
		addr, err := benchenv.FreeAddr()
		if err != nil {
			return res, err
		}
		args = append(args, "--pprof-bind-address", addr)
		// The hub serves one CPU profile at a time: a phase shorter than 60 s queues the next.
		var one sync.Mutex
		profile = func(ctx context.Context, name string) error {
			// The simulator's heap too: it shares this machine's memory with the hub's API server.
			if err := writeHeap(filepath.Join(profileDir, "sim."+name+".heap.pprof")); err != nil {
				return err
			}
			one.Lock()
			defer one.Unlock()
			return benchenv.FetchProfile(ctx, http.DefaultClient, "http://"+addr+"/debug/pprof/profile?seconds=60",
				filepath.Join(profileDir, "hub."+name+".cpu.pprof"), "the hub")
		}
	}
	hub, err := benchenv.StartHub(ctx, binary, cp, benchenv.Log(verbose), benchenv.HubOptions{
		FeatureGates: "ManagedClusterAutoApproval=true", Metrics: true, Args: args,
	})
	if err != nil {
		return res, err
	}
	defer hub.Stop()
	apiserver, err := fleetbench.ProcessNamed(cp.PIDs(), "kube-apiserver")
	if err != nil {
		return res, err
	}
	// The hub creates the bootstrap ServiceAccount once it runs.
	var bootstrapKC []byte
	var last error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		bootstrapKC, last = bootstrap.Kubeconfig(ctx, cp.Config, 4*time.Hour)
		return last == nil, nil
	}); err != nil {
		return res, fmt.Errorf("the hub's bootstrap identity: %w (last: %v)", err, last)
	}
	opts := fleetbench.SimOptions(cfg)
	opts.Clusters = sizes[0]
	opts.BootstrapKubeconfig = bootstrapKC
	fleet, err := sim.New(ctx, opts)
	if err != nil {
		return res, err
	}
	c, err := client.NewWithWatch(cp.ClientConfig, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return res, err
	}
	apiHTTP, err := rest.HTTPClientFor(cp.ClientConfig)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "%d simulated clusters joining\n", sizes[0])
	return fleetbench.Curve(ctx, c, fleet, sizes, cfg, fleetbench.Probe{
		HubCPU:       func() (float64, error) { return fleetbench.ProcessCPU(hub.Pid()) },
		HubRSS:       func() (int64, error) { return fleetbench.ProcessRSS(hub.Pid()) },
		APIServerRSS: func() (int64, error) { return fleetbench.ProcessRSS(apiserver) },
		EtcdDB:       fleetbench.FileSize(filepath.Join(cp.Dir, "etcd", "member", "snap", "db")),
		Controllers:  func(ctx context.Context) ([]fleetbench.ControllerStat, error) { return controllers(ctx, hub) },
		APIRequests: func(ctx context.Context) (map[string]float64, error) {
			return apiRequests(ctx, apiHTTP, cp.ClientConfig.Host)
		},
		Profile: profile,
	})
}

// writeHeap writes this process's (the simulator's) heap profile to path.
func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("the simulator's heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("the simulator's heap profile %s: %w", path, err)
	}
	// What the heap profile does not show: goroutine stacks and the collector's headroom.
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(os.Stderr, "simulator memory (%s): heap in use %d MiB, heap from the OS %d MiB, stacks %d MiB, %d goroutines, next GC at %d MiB\n",
		filepath.Base(path), m.HeapInuse>>20, m.HeapSys>>20, m.StackInuse>>20, runtime.NumGoroutine(), m.NextGC>>20)
	return f.Close()
}

// apiRequests reads kube-apiserver's request counts by verb and resource (with its
// subresource), and the requests API Priority and Fairness rejected by priority level, from its
// metrics.
func apiRequests(ctx context.Context, hc *http.Client, host string) (map[string]float64, error) {
	out := map[string]float64{}
	err := benchenv.Metrics(ctx, hc, strings.TrimSuffix(host, "/")+"/metrics", func(s benchenv.Sample) {
		if s.Name == "apiserver_flowcontrol_rejected_requests_total" {
			// Requests API Priority and Fairness turned away (429), by level and reason.
			out["REJECTED "+s.Label("priority_level")+"/"+s.Label("reason")] += s.Value
			return
		}
		if s.Name != "apiserver_request_total" {
			return
		}
		r := s.Label("resource")
		if sub := s.Label("subresource"); sub != "" {
			r += "/" + sub
		}
		out[s.Label("verb")+" "+r] += s.Value
	})
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver's metrics: %w", err)
	}
	return out, nil
}

// controllers reads each hub controller's reconciles, reconcile time and queue wait from its
// metrics.
func controllers(ctx context.Context, hub *benchenv.Hub) ([]fleetbench.ControllerStat, error) {
	by := map[string]*fleetbench.ControllerStat{}
	get := func(name string) *fleetbench.ControllerStat {
		if by[name] == nil {
			by[name] = &fleetbench.ControllerStat{Name: name}
		}
		return by[name]
	}
	err := hub.Metrics(ctx, func(s benchenv.Sample) {
		switch s.Name {
		case "controller_runtime_reconcile_total":
			get(s.Label("controller")).Reconciles += s.Value
		case "controller_runtime_reconcile_time_seconds_sum":
			get(s.Label("controller")).ReconcileS += s.Value
		case "workqueue_queue_duration_seconds_sum":
			get(s.Label("name")).QueueWait += s.Value
		}
	})
	out := make([]fleetbench.ControllerStat, 0, len(by))
	for _, st := range by {
		if st.Name != "" {
			out = append(out, *st)
		}
	}
	return out, err
}
