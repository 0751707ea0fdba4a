// Package fleetbench is the fleet bench's phases, shared by make bench-fleet (a hub process
// whose CPU and memory it reads) and the CI-sized suite e2e/fleet (a small fleet, the same
// phases): N simulated clusters (klusterlet/sim) join a hub, keep their leases for a while,
// are placed by Placements with label, claim and CEL predicates and an AddOnPlacementScore
// prioritizer while their scores churn, receive a ManifestWorkReplicaSet beside works they
// already have, and install a template add-on.
package fleetbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/sim"
)

// Config shapes a run.
type Config struct {
	// Clusters simulated; WorksPerCluster ManifestWorks each already has before the
	// ManifestWorkReplicaSet goes out.
	Clusters, WorksPerCluster int
	// Placements created in the placement phase.
	Placements int
	// Steady is how long the steady phase watches leases and status; Churn how long scores
	// are updated, every ChurnEvery.
	Steady, Churn, ChurnEvery time.Duration
	// CurveSteady is the steady phase's length at the sizes of a curve before the last
	// (Curve); default Steady.
	CurveSteady time.Duration
	// Silent is the fraction of clusters whose agent stops after joining (the hub must mark
	// them Unknown: they are not flaps).
	Silent float64
	// Out receives the table.
	Out io.Writer
	// Sized, when set, receives the results of every size once the last size's steady phase
	// is measured, before the other phases (a curve survives a later phase's failure).
	Sized func([]Result)
}

// Probe reads a process's resource use; nil fields are not measured.
type Probe struct {
	// HubCPU returns the hub's CPU seconds so far; HubRSS, APIServerRSS its and
	// kube-apiserver's resident memory in bytes; EtcdDB the etcd database's size in bytes.
	HubCPU                       func() (float64, error)
	HubRSS, APIServerRSS, EtcdDB func() (int64, error)
	// Controllers reads the hub's controller metrics (what each controller spent).
	Controllers func(context.Context) ([]ControllerStat, error)
	// APIRequests reads kube-apiserver's request counts so far, by "VERB resource[/sub]".
	APIRequests func(context.Context) (map[string]float64, error)
	// Profile, when set, takes a CPU profile of the hub named for the phase (run in the
	// background from the start of each join and of the last steady phase).
	Profile func(ctx context.Context, name string) error
}

// printRequests prints the API requests made since before (by kind, the most first) and
// per cluster, and returns the counts now for the next phase.
func printRequests(ctx context.Context, out io.Writer, p Probe, phase string, before map[string]float64, clusters int) map[string]float64 {
	if p.APIRequests == nil {
		return nil
	}
	now, err := p.APIRequests(ctx)
	if err != nil {
		fmt.Fprintf(out, "%-10s kube-apiserver request metrics: %v\n", phase, err)
		return before
	}
	type kind struct {
		name string
		n    float64
	}
	var kinds []kind
	total := 0.0
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			kinds = append(kinds, kind{k, d})
			total += d
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].n > kinds[j].n })
	fmt.Fprintf(out, "%-10s   kube-apiserver: %.0f requests, %.1f per cluster\n", phase, total, total/float64(max(1, clusters)))
	for i, k := range kinds {
		if i == 14 {
			break
		}
		fmt.Fprintf(out, "%-10s     %-44s %8.0f  %6.2f per cluster\n", phase, k.name, k.n, k.n/float64(max(1, clusters)))
	}
	return now
}

// ControllerStat is one hub controller's work so far: reconciles, seconds spent in them, and
// seconds its queue made items wait (controller-runtime's metrics).
type ControllerStat struct {
	Name                  string
	Reconciles            float64
	ReconcileS, QueueWait float64
}

// printControllers prints the controllers that spent the most, reconcile plus queue time.
func printControllers(ctx context.Context, out io.Writer, p Probe, phase string) {
	if p.Controllers == nil {
		return
	}
	stats, err := p.Controllers(ctx)
	if err != nil {
		fmt.Fprintf(out, "%-10s hub controller metrics: %v\n", phase, err)
		return
	}
	sort.Slice(stats, func(i, j int) bool {
		return stats[i].ReconcileS+stats[i].QueueWait > stats[j].ReconcileS+stats[j].QueueWait
	})
	for i, st := range stats {
		if i == 8 {
			break
		}
		fmt.Fprintf(out, "%-10s   %-34s %8.0f reconciles %8.1f s reconciling %9.1f s queued\n", phase, st.Name, st.Reconciles, st.ReconcileS, st.QueueWait)
	}
}

// Result is what a run measured.
type Result struct {
	// Clusters in the fleet at this size; Added joined to reach it, in JoinS (the join's
	// whole time, from nothing, is JoinAllS: the sum over the sizes of a curve).
	Clusters, Added                               int
	JoinS, JoinAllS, SteadyHubCPU                 float64
	HubRSSMiB, APIServerRSSMiB, EtcdDBMiB         float64
	UnknownFlaps, SilentMarked                    int
	PlacementsS, ChurnHubCPU, MWRSAllS, AddonAllS float64
}

// Line is the bench's last line.
func (r Result) Line() string {
	return fmt.Sprintf("fleet-%d join_s=%.1f steady_hub_cpu_cores=%.3f hub_rss_mib=%.0f apiserver_rss_mib=%.0f etcd_db_mib=%.0f unknown_flaps=%d placements_100_s=%.1f score_churn_hub_cpu_cores=%.3f mwrs_all_s=%.1f addon_all_s=%.1f",
		r.Clusters, r.JoinAllS, r.SteadyHubCPU, r.HubRSSMiB, r.APIServerRSSMiB, r.EtcdDBMiB, r.UnknownFlaps, r.PlacementsS, r.ChurnHubCPU, r.MWRSAllS, r.AddonAllS)
}

const (
	benchNS   = "fleet-bench"
	scoreName = "fleet-score"
	addonName = "fleet-addon"
)

// Labels and claims the simulated clusters get (and the placements select on).
var (
	Regions = []string{"us-east", "us-west", "eu-central", "eu-west", "ap-south"}
	Tiers   = []string{"gold", "silver", "bronze"}
)

// SimOptions are the fleet's options for cfg (the caller adds the bootstrap kubeconfig).
func SimOptions(cfg Config) sim.Options {
	return sim.Options{Clusters: cfg.Clusters, Silent: cfg.Silent, SilentAfter: time.Minute,
		Labels: []sim.Vary{{Key: "region", Values: Regions}, {Key: "env", Values: []string{"prod", "staging"}}},
		Claims: []sim.Vary{{Key: "tier.fleet.example", Values: Tiers}}, JoinConcurrency: 100}
}

// Run runs every phase against the hub of c with the fleet f (not yet running: Run starts
// it) at its size and returns the figures.
func Run(ctx context.Context, c client.WithWatch, f *sim.Fleet, cfg Config, probe Probe) (Result, error) {
	rs, err := Curve(ctx, c, f, []int{len(f.Clusters())}, cfg, probe)
	if len(rs) == 0 {
		return Result{}, err
	}
	return rs[len(rs)-1], err
}

// Curve runs one hub through a growing fleet: f (not yet running, built with sizes[0]
// clusters) joins, then at each size the clusters added to reach it (sim.Fleet.Grow) join
// and the steady phase measures the hub at that size (for CurveSteady; Steady at the last).
// At the last size the other phases follow. It returns one Result per size; only the last
// has the placement, work and add-on figures.
func Curve(ctx context.Context, c client.WithWatch, f *sim.Fleet, sizes []int, cfg Config, probe Probe) (rs []Result, err error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if len(sizes) == 0 || sizes[0] != len(f.Clusters()) {
		return nil, fmt.Errorf("the fleet has %d clusters, the curve starts at %v", len(f.Clusters()), sizes)
	}
	if cfg.CurveSteady <= 0 {
		cfg.CurveSteady = cfg.Steady
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg errgroup.Group
	defer func() { cancel(); err = errors.Join(err, bg.Wait()) }()
	bg.Go(func() error { return ignoreCanceled(f.Run(ctx)) })
	// LabelOnHub labels the clusters there are when it starts: once per size.
	bg.Go(func() error { return ignoreCanceled(f.LabelOnHub(ctx, c)) })
	row := func(phase, format string, args ...any) {
		fmt.Fprintf(out, "%-10s %s\n", phase, fmt.Sprintf(format, args...))
	}
	joinAll := 0.0
	var flaps *flapWatch
	var reqs map[string]float64
	if probe.APIRequests != nil {
		reqs, _ = probe.APIRequests(ctx)
	}
	for i, size := range sizes {
		var res Result
		res.Clusters, res.Added = size, size
		if i > 0 {
			res.Added = size - sizes[i-1]
			if _, err := f.Grow(ctx, res.Added); err != nil {
				return rs, err
			}
			bg.Go(func() error { return ignoreCanceled(f.LabelOnHub(ctx, c)) })
		}
		// Join.
		if probe.Profile != nil {
			bg.Go(func() error { return ignoreCanceled(probe.Profile(ctx, fmt.Sprintf("join-%d", size))) })
		}
		start := time.Now()
		if err := waitClusters(ctx, c, f, start, "join", func(mc *clusterv1.ManagedCluster) bool {
			conds := mc.Status.Conditions
			if f.Cluster(mc.Name).Behaviour == sim.Silent {
				return meta.IsStatusConditionTrue(conds, clusterv1.ManagedClusterConditionJoined)
			}
			return meta.IsStatusConditionTrue(conds, clusterv1.ManagedClusterConditionJoined) &&
				meta.IsStatusConditionTrue(conds, clusterv1.ManagedClusterConditionAvailable) && labelled(mc, f)
		}); err != nil {
			return rs, err
		}
		res.JoinS = time.Since(start).Seconds()
		joinAll += res.JoinS
		res.JoinAllS = joinAll
		row("join", "%d clusters Joined and Available in %.1f s (%d in all)", res.Added, res.JoinS, size)
		printControllers(ctx, out, probe, "join")
		reqs = printRequests(ctx, out, probe, "join", reqs, res.Added)

		// Steady: leases and status; flaps are counted from the first to the end.
		if flaps == nil {
			flaps = &flapWatch{fleet: f, unknown: map[string]bool{}}
			bg.Go(func() error { return ignoreCanceled(flaps.run(ctx, c)) })
		}
		steady := cfg.CurveSteady
		if i == len(sizes)-1 {
			steady = cfg.Steady
			if probe.Profile != nil {
				bg.Go(func() error { return ignoreCanceled(probe.Profile(ctx, fmt.Sprintf("steady-%d", size))) })
			}
		}
		cpu, err := cpuOver(ctx, probe, steady, nil)
		if err != nil {
			return rs, err
		}
		res.SteadyHubCPU = cpu
		res.HubRSSMiB, res.APIServerRSSMiB, res.EtcdDBMiB = mib(probe.HubRSS), mib(probe.APIServerRSS), mib(probe.EtcdDB)
		row("steady", "%d clusters, %s: hub %.3f cores, hub RSS %.0f MiB, kube-apiserver RSS %.0f MiB, etcd %.0f MiB",
			size, steady, res.SteadyHubCPU, res.HubRSSMiB, res.APIServerRSSMiB, res.EtcdDBMiB)
		reqs = printRequests(ctx, out, probe, "steady", reqs, size)
		rs = append(rs, res)
	}
	if cfg.Sized != nil {
		cfg.Sized(rs)
	}
	res, err := phases(ctx, c, f, cfg, probe, flaps, reqs, rs[len(rs)-1], row)
	rs[len(rs)-1] = res
	return rs, err
}

// phases runs the placement, churn, work and add-on phases on the joined fleet.
func phases(ctx context.Context, c client.WithWatch, f *sim.Fleet, cfg Config, probe Probe, flaps *flapWatch, reqs map[string]float64, res Result, row func(phase, format string, args ...any)) (Result, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	n := len(f.Clusters())
	// Placements over the fleet, ranked by a score every cluster publishes.
	if err := setup(ctx, c); err != nil {
		return res, err
	}
	if err := writeScores(ctx, c, f.Names(), true); err != nil {
		return res, err
	}
	start := time.Now()
	if err := placements(ctx, c, cfg.Placements); err != nil {
		return res, err
	}
	res.PlacementsS = time.Since(start).Seconds()
	row("placement", "%d Placements decided in %.1f s", cfg.Placements, res.PlacementsS)
	reqs = printRequests(ctx, out, probe, "placement", reqs, n)
	churned := 0
	var err error
	res.ChurnHubCPU, err = cpuOver(ctx, probe, cfg.Churn, func(churn context.Context) error {
		// Every cluster's score once per ChurnEvery. A round runs to its end (on ctx, not
		// the churn's deadline); the churn ends between rounds.
		t := time.NewTicker(cfg.ChurnEvery)
		defer t.Stop()
		for {
			if err := writeScores(ctx, c, f.Names(), false); err != nil {
				return err
			}
			churned++
			select {
			case <-churn.Done():
				return nil
			case <-t.C:
			}
		}
	})
	if err != nil {
		return res, err
	}
	row("churn", "%d rounds of %d score updates over %s: hub %.3f cores", churned, n, cfg.Churn, res.ChurnHubCPU)
	reqs = printRequests(ctx, out, probe, "churn", reqs, n)

	// Works: WorksPerCluster each, then one ManifestWorkReplicaSet to all.
	start = time.Now()
	if err := works(ctx, c, f.Names(), live(f), cfg.WorksPerCluster); err != nil {
		return res, err
	}
	row("works", "%d ManifestWorks applied in %.1f s", cfg.WorksPerCluster*n, time.Since(start).Seconds())
	if probe.Profile != nil {
		// The simulator's heap with every cluster's works in it (and the hub's CPU meanwhile).
		go func() {
			if err := probe.Profile(ctx, fmt.Sprintf("works-%d", n)); err != nil && ctx.Err() == nil {
				row("works", "profile: %v", err)
			}
		}()
	}
	reqs = printRequests(ctx, out, probe, "works", reqs, n)
	start = time.Now()
	if err := replicaSet(ctx, c, f); err != nil {
		return res, err
	}
	res.MWRSAllS = time.Since(start).Seconds()
	row("mwrs", "ManifestWorkReplicaSet applied on all in %.1f s", res.MWRSAllS)
	reqs = printRequests(ctx, out, probe, "mwrs", reqs, n)

	// A template add-on on every cluster.
	start = time.Now()
	if err := addon(ctx, c, f); err != nil {
		return res, err
	}
	res.AddonAllS = time.Since(start).Seconds()
	row("addon", "template add-on Available on all in %.1f s", res.AddonAllS)
	printRequests(ctx, out, probe, "addon", reqs, n)

	printControllers(ctx, out, probe, "total")
	res.UnknownFlaps, res.SilentMarked = flaps.counts()
	row("flaps", "%d live clusters marked Available=Unknown (must be 0); %d silent clusters marked", res.UnknownFlaps, res.SilentMarked)
	return res, nil
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func mib(f func() (int64, error)) float64 {
	if f == nil {
		return 0
	}
	v, err := f()
	if err != nil {
		return 0
	}
	return float64(v) / (1 << 20)
}

// cpuOver runs work (if any) for d and returns the hub's mean CPU cores over it.
func cpuOver(ctx context.Context, p Probe, d time.Duration, work func(context.Context) error) (float64, error) {
	var before float64
	if p.HubCPU != nil {
		var err error
		if before, err = p.HubCPU(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if work != nil {
		if err := work(wctx); err != nil {
			return 0, err
		}
	}
	<-wctx.Done()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if p.HubCPU == nil {
		return 0, nil
	}
	after, err := p.HubCPU()
	if err != nil {
		return 0, err
	}
	return (after - before) / time.Since(start).Seconds(), nil
}

func labelled(mc *clusterv1.ManagedCluster, f *sim.Fleet) bool {
	for k, v := range f.Cluster(mc.Name).Labels {
		if mc.Labels[k] != v {
			return false
		}
	}
	return true
}

// waitClusters waits until done holds for every cluster of f.
func waitClusters(ctx context.Context, c client.WithWatch, f *sim.Fleet, start time.Time, what string, done func(*clusterv1.ManagedCluster) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := startTally(ctx, c, func() *clusterv1.ManagedClusterList { return &clusterv1.ManagedClusterList{} },
		func(mc *clusterv1.ManagedCluster) bool { return f.Cluster(mc.Name) != nil && done(mc) })
	return t.wait(ctx, what+": clusters", len(f.Clusters()), start)
}

// flapWatch counts clusters the hub marks Available=Unknown: a live (Steady) cluster is a
// flap, a silent one is expected.
type flapWatch struct {
	fleet   *sim.Fleet
	mu      sync.Mutex
	unknown map[string]bool
}

func (w *flapWatch) run(ctx context.Context, c client.WithWatch) error {
	for ctx.Err() == nil {
		wi, err := c.Watch(ctx, &clusterv1.ManagedClusterList{})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range wi.ResultChan() {
			mc, ok := ev.Object.(*clusterv1.ManagedCluster)
			if !ok || ev.Type == watch.Deleted || w.fleet.Cluster(mc.Name) == nil {
				continue
			}
			cond := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
			if cond != nil && cond.Status == metav1.ConditionUnknown {
				w.mu.Lock()
				w.unknown[mc.Name] = true
				w.mu.Unlock()
			}
		}
		wi.Stop()
	}
	return nil
}

func (w *flapWatch) counts() (flaps, silent int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.unknown {
		if w.fleet.Cluster(name).Behaviour == sim.Steady {
			flaps++
		} else {
			silent++
		}
	}
	return flaps, silent
}

// setup makes the bench namespace, bound to the set of all clusters.
func setup(ctx context.Context, c client.Client) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	b := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: "global"},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}
	if err := c.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the global cluster set to %s: %w", benchNS, err)
	}
	return nil
}

// writeScores creates (or updates) every cluster's AddOnPlacementScore with a new value.
func writeScores(ctx context.Context, c client.Client, names []string, create bool) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, name := range names {
		g.Go(func() error {
			s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: scoreName}}
			if create {
				if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("AddOnPlacementScore %s/%s: %w", name, scoreName, err)
				}
			}
			valid := metav1.NewTime(time.Now().Add(time.Hour))
			s.Status = clusterv1alpha1.AddOnPlacementScoreStatus{ValidUntil: &valid,
				Scores: []clusterv1alpha1.AddOnPlacementScoreItem{{Name: "score", Value: int32(rand.IntN(200) - 100)}}}
			patch, err := json.Marshal(map[string]any{"status": s.Status})
			if err != nil {
				return err
			}
			if err := retry.OnError(retry.DefaultBackoff, transient, func() error {
				return c.Status().Patch(ctx, s, client.RawPatch("application/merge-patch+json", patch))
			}); err != nil {
				return fmt.Errorf("AddOnPlacementScore %s/%s status: %w", name, scoreName, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// placements creates n Placements with label, claim and CEL predicates and the score as
// prioritizer, and waits until every one has decided.
func placements(ctx context.Context, c client.Client, n int) error {
	fifty := int32(50)
	for i := range n {
		p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: fmt.Sprintf("p-%03d", i)}}
		p.Spec.NumberOfClusters = &fifty
		p.Spec.Predicates = []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": Regions[i%len(Regions)]}},
			ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "tier.fleet.example", Operator: metav1.LabelSelectorOpIn, Values: []string{Tiers[i%len(Tiers)], Tiers[(i+1)%len(Tiers)]}}}},
			CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: []string{`managedCluster.metadata.labels["env"] != "` + []string{"prod", "staging", "dev"}[i%3] + `"`}},
		}}}
		p.Spec.PrioritizerPolicy = clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeExact,
			Configurations: []clusterv1beta1.PrioritizerConfig{{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
				Type: clusterv1beta1.ScoreCoordinateTypeAddOn, AddOn: &clusterv1beta1.AddOnScore{ResourceName: scoreName, ScoreName: "score"}}}}}
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("creating Placement %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for {
		list := &clusterv1beta1.PlacementList{}
		if err := c.List(ctx, list, client.InNamespace(benchNS)); err != nil {
			return err
		}
		decided := 0
		for i := range list.Items {
			p := &list.Items[i]
			// Decided: scheduled for its current spec, with clusters chosen (up to 50 of
			// those its predicates let through).
			c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
			if strings.HasPrefix(p.Name, "p-") && c != nil && c.ObservedGeneration == p.Generation && p.Status.NumberOfSelectedClusters > 0 {
				decided++
			}
		}
		if decided >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("placements: %d of %d decided: %w", decided, n, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func configMap(name string) runtime.RawExtension {
	return runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name +
		`","namespace":"default"},"data":{"key":"value"}}`)}
}

// works creates per ManifestWorks in every cluster's namespace and waits until the live
// clusters' are Applied.
func works(ctx context.Context, c client.WithWatch, names []string, live, per int) error {
	if per == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, name := range names {
		for i := range per {
			g.Go(func() error {
				w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "fleet-work-" + strconv.Itoa(i)}}
				w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: configMap("fleet-work-" + strconv.Itoa(i))}}
				// A loaded hub may time out a webhook call or throttle: retried, as a client would.
				err := retry.OnError(retry.DefaultBackoff, transient, func() error { return c.Create(gctx, w) })
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("creating ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Silent clusters have works too; only the live ones apply them.
	return waitWorks(ctx, c, "works", live*per, func(w *workv1.ManifestWork) bool { return strings.HasPrefix(w.Name, "fleet-work-") })
}

// waitWorks waits until want works that match are Applied.
func waitWorks(ctx context.Context, c client.WithWatch, what string, want int, match func(*workv1.ManifestWork) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := startTally(ctx, c, func() *workv1.ManifestWorkList { return &workv1.ManifestWorkList{} }, func(w *workv1.ManifestWork) bool {
		return match(w) && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied)
	})
	return t.wait(ctx, what+": ManifestWorks Applied", want, time.Now())
}

// selectAll is a Placement in the bench namespace selecting every live cluster.
func selectAll(ctx context.Context, c client.Client, name string) error {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name}}
	// Silent clusters are Unknown and tainted unreachable: the placement leaves them out.
	if err := c.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Placement %s/%s: %w", benchNS, name, err)
	}
	return nil
}

func live(f *sim.Fleet) int {
	n := 0
	for _, cl := range f.Clusters() {
		if cl.Behaviour == sim.Steady {
			n++
		}
	}
	return n
}

// replicaSet rolls one ManifestWorkReplicaSet (All) out to every live cluster.
func replicaSet(ctx context.Context, c client.WithWatch, f *sim.Fleet) error {
	if err := selectAll(ctx, c, "all"); err != nil {
		return err
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: "fleet-app"}}
	rs.Spec.PlacementRefs = []workv1alpha1.LocalPlacementReference{{Name: "all",
		RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}}
	rs.Spec.ManifestWorkTemplate.Workload.Manifests = []workv1.Manifest{{RawExtension: configMap("fleet-app")}}
	if err := c.Create(ctx, rs); err != nil {
		return fmt.Errorf("creating ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return waitWorks(ctx, c, "mwrs", live(f), func(w *workv1.ManifestWork) bool { return w.Name == "fleet-app" })
}

// addon installs a template add-on (a ServiceAccount and a ConfigMap in the add-on
// namespace) on every live cluster by a Placements strategy and waits until it is Available
// everywhere.
func addon(ctx context.Context, c client.WithWatch, f *sim.Fleet) error {
	t := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: addonName + "-1"}}
	t.Spec.AddonName = addonName
	for _, m := range []string{
		`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"fleet-addon-agent","namespace":"open-cluster-management-agent-addon"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fleet-addon-config","namespace":"open-cluster-management-agent-addon"},"data":{"cluster":"{{CLUSTER_NAME}}"}}`,
	} {
		t.Spec.AgentSpec.Workload.Manifests = append(t.Spec.AgentSpec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	if err := c.Create(ctx, t); err != nil {
		return fmt.Errorf("creating AddOnTemplate %s: %w", t.Name, err)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addonName, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1alpha1.AddOnMeta{DisplayName: addonName},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{
				Group: addonv1alpha1.GroupVersion.Group, Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: t.Name}}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
				Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: benchNS, Name: "all"},
					RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}}},
		},
	}
	if err := c.Create(ctx, cma); err != nil {
		return fmt.Errorf("creating ClusterManagementAddOn %s: %w", addonName, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tl := startTally(ctx, c, func() *addonv1alpha1.ManagedClusterAddOnList { return &addonv1alpha1.ManagedClusterAddOnList{} },
		func(a *addonv1alpha1.ManagedClusterAddOn) bool {
			return a.Name == addonName && meta.IsStatusConditionTrue(a.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
		})
	return tl.wait(ctx, "addon: ManagedClusterAddOns "+addonName+" Available", live(f), time.Now())
}

// transient errors are worth another try: timeouts (of the API server or a webhook it
// calls), throttling, and internal errors.
func transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}
