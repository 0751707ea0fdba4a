// Package sim is a fleet simulator: N managed clusters in one process, each running the
// klusterlet's own agents (registration, work, add-on registration and health, from
// klusterlet.New) against a real hub with its own identity, its managed side an in-memory API
// (core/memkube) instead of an API server. What the hub sees is what a fleet of real
// klusterlets does: bootstrap, CSRs, acceptance, client certificates and their rotation, lease
// renewals, ManagedCluster status (capacity, allocatable, version, claims), ManifestWorks
// applied with their conditions and feedback, add-on registrations and Lease health.
//
// Per-cluster variety comes from Options: labels and claims drawn from value lists, capacity
// from ranges, and fractions of clusters that go silent (their agent stops, so their lease
// stops) or flap (stop and start again periodically).
package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/memkube"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// fieldManager writes the simulated clusters' Nodes (what a kubelet would report).
const fieldManager = "flotilla-sim"

// Options configures a simulated fleet.
type Options struct {
	// Clusters is how many clusters to simulate; First is the index of the first (names are
	// Prefix plus a zero-padded index), so several simulators can share a hub.
	Clusters, First int
	// Prefix of the cluster names; default "sim-".
	Prefix string
	// BootstrapKubeconfig reaches the hub with a bootstrap identity (flotilla get token).
	BootstrapKubeconfig []byte
	// Labels are set on each cluster's ManagedCluster by its agent's registration (as
	// claims would be, but through ManagedCluster labels the agent cannot set, so they are
	// given to the hub by Spec below); see Vary.
	Labels []Vary
	// Claims become ClusterClaims on each managed cluster, which its agent reports.
	Claims []Vary
	// CPU and Memory are each cluster's Node capacity, drawn per cluster from a range
	// (allocatable is 90% of it). Default 4–64 cores and 16–256 GiB.
	CPU, Memory Range
	// Nodes per cluster the capacity is spread over; default 1.
	Nodes int
	// KubernetesVersion the managed clusters report; default v1.35.0.
	KubernetesVersion string
	// Silent is the fraction of clusters whose agent stops SilentAfter after it joined, so
	// their lease stops (the hub must mark them Available=Unknown).
	Silent      float64
	SilentAfter time.Duration
	// Flap is the fraction of clusters whose agent stops for FlapDown every FlapPeriod.
	Flap                 float64
	FlapPeriod, FlapDown time.Duration
	// LeaseDurationSeconds is written into the ManagedClusters the agents create; default 60.
	LeaseDurationSeconds int32
	// CSRExpirationSeconds asks for client certificates of this lifetime (at least 600), so
	// that the agents rotate them while the simulator runs; 0 leaves it to the hub's signer.
	CSRExpirationSeconds int32
	// JoinConcurrency bounds how many clusters bootstrap at once (a fleet coming up after a
	// hub restart does not all CSR in the same second); default 50.
	JoinConcurrency int
	// Logger receives the agents' logs; default discarded.
	Logger logr.Logger
}

// Vary is a label or claim with values: cluster i gets Values[i mod len(Values)]. A value
// list of one gives every cluster the same value.
type Vary struct {
	Key    string
	Values []string
}

// ParseVary parses "key=v1|v2|v3".
func ParseVary(s string) (Vary, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return Vary{}, fmt.Errorf("%q: want key=value or key=v1|v2|...", s)
	}
	return Vary{Key: k, Values: strings.Split(v, "|")}, nil
}

// Range is an inclusive integer range; a cluster's value is drawn from it by a hash of its
// name, so the same cluster gets the same value in every run.
type Range struct{ Min, Max int64 }

// ParseRange parses "N" or "MIN-MAX".
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(s, "-")
	var r Range
	if _, err := fmt.Sscan(lo, &r.Min); err != nil {
		return r, fmt.Errorf("%q: want N or MIN-MAX", s)
	}
	r.Max = r.Min
	if found {
		if _, err := fmt.Sscan(hi, &r.Max); err != nil || r.Max < r.Min {
			return r, fmt.Errorf("%q: want N or MIN-MAX with MIN <= MAX", s)
		}
	}
	if r.Min <= 0 {
		return r, fmt.Errorf("%q: must be positive", s)
	}
	return r, nil
}

func (r Range) pick(name, salt string) int64 {
	if r.Max <= r.Min {
		return r.Min
	}
	h := fnv.New64a()
	h.Write([]byte(salt + "/" + name))
	return r.Min + int64(h.Sum64()%uint64(r.Max-r.Min+1))
}

func (o Options) withDefaults() (Options, error) {
	if o.Clusters <= 0 {
		return o, errors.New("fleet simulator: Clusters must be positive")
	}
	if len(o.BootstrapKubeconfig) == 0 {
		return o, errors.New("fleet simulator: a bootstrap kubeconfig is required (flotilla get token)")
	}
	if o.Prefix == "" {
		o.Prefix = "sim-"
	}
	if o.CPU == (Range{}) {
		o.CPU = Range{4, 64}
	}
	if o.Memory == (Range{}) {
		o.Memory = Range{16, 256}
	}
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = "v1.35.0"
	}
	if o.LeaseDurationSeconds == 0 {
		o.LeaseDurationSeconds = registration.DefaultLeaseDurationSeconds
	}
	if o.JoinConcurrency <= 0 {
		o.JoinConcurrency = 50
	}
	if o.Silent < 0 || o.Silent > 1 || o.Flap < 0 || o.Flap > 1 || o.Silent+o.Flap > 1 {
		return o, fmt.Errorf("fleet simulator: silent %v and flap %v must be fractions that add up to at most 1", o.Silent, o.Flap)
	}
	if o.SilentAfter <= 0 {
		o.SilentAfter = time.Minute
	}
	if o.Flap > 0 {
		if o.FlapPeriod <= 0 {
			o.FlapPeriod = 10 * time.Minute
		}
		if o.FlapDown <= 0 {
			o.FlapDown = 2 * time.Minute
		}
		if o.FlapDown >= o.FlapPeriod {
			return o, fmt.Errorf("fleet simulator: flap-down %v must be shorter than flap-period %v", o.FlapDown, o.FlapPeriod)
		}
	}
	for _, v := range append(append([]Vary{}, o.Labels...), o.Claims...) {
		if v.Key == "" || len(v.Values) == 0 {
			return o, fmt.Errorf("fleet simulator: label or claim %q needs a key and values", v.Key)
		}
	}
	return o, nil
}

// Behaviour is what a simulated cluster's agent does over time.
type Behaviour string

const (
	// Steady clusters keep their agent running.
	Steady Behaviour = "Steady"
	// Silent clusters stop their agent once, SilentAfter after they joined.
	Silent Behaviour = "Silent"
	// Flapping clusters stop their agent for FlapDown every FlapPeriod.
	Flapping Behaviour = "Flapping"
)

// Cluster is one simulated managed cluster.
type Cluster struct {
	// Name is the cluster's name on the hub.
	Name string
	// Managed is its in-memory managed side.
	Managed *memkube.Cluster
	// Behaviour is what its agent does over time.
	Behaviour Behaviour
	// Labels are the labels drawn for it from Options.Labels (the simulator cannot set
	// ManagedCluster labels itself: the agent creates the cluster, the hub admin labels it;
	// Fleet.Label does what an admin would).
	Labels map[string]string

	running atomic.Bool
	// stoppedAt is when its agent last stopped (zero while it runs or never ran).
	mu        sync.Mutex
	stoppedAt time.Time
}

// Running reports whether the cluster's agent runs now.
func (c *Cluster) Running() bool { return c.running.Load() }

// StoppedAt is when the cluster's agent last stopped; zero if it never did.
func (c *Cluster) StoppedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stoppedAt
}

// Fleet is a running simulated fleet.
type Fleet struct {
	opts Options
	// scheme and hubMapper are shared by every simulated cluster's agents (read only): one
	// copy of the types and of the hub's discovery for the process, not one per cluster.
	scheme      *runtime.Scheme
	hubMapper   meta.RESTMapper
	managedCRDs []*apiextensionsv1.CustomResourceDefinition
	wg          sync.WaitGroup
	errs        chan error
	// mu guards clusters and byName, which Grow appends to; grown wakes Run to start them.
	mu       sync.RWMutex
	clusters []*Cluster
	byName   map[string]*Cluster
	grown    chan struct{}
}

// Name is the name of the cluster with index i (First included).
func (o Options) Name(i int) string {
	return fmt.Sprintf("%s%05d", o.Prefix, i)
}

// New builds the fleet's in-memory clusters (Nodes and ClusterClaims seeded) without
// starting any agent.
func New(ctx context.Context, opts Options) (*Fleet, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fleet{opts: opts, byName: map[string]*Cluster{}, scheme: apischeme.New(), errs: make(chan error, 16),
		grown: make(chan struct{}, 1)}
	// The hub's discovery is the same for every cluster; it is read with the bootstrap
	// identity (discovery is open to every authenticated user), once, when first needed.
	hubCfg, err := registration.RESTConfigFromKubeconfig(opts.BootstrapKubeconfig, "bootstrap kubeconfig")
	if err != nil {
		return nil, fmt.Errorf("fleet simulator: %w", err)
	}
	httpClient, err := rest.HTTPClientFor(hubCfg)
	if err == nil {
		f.hubMapper, err = apiutil.NewDynamicRESTMapper(hubCfg, httpClient)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet simulator: hub REST mapper: %w", err)
	}
	// What a klusterlet's managed cluster serves besides the built-ins: claims and the
	// applied works' bookkeeping (the Wasm plugin loader, whose CRD is the third, is off).
	all, err := crds.Objects()
	if err != nil {
		return nil, fmt.Errorf("fleet simulator: %w", err)
	}
	var managedCRDs []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Spec.Names.Kind == "ClusterClaim" || crd.Spec.Names.Kind == "AppliedManifestWork" {
			managedCRDs = append(managedCRDs, crd)
		}
	}
	f.managedCRDs = managedCRDs
	if _, err := f.Grow(ctx, opts.Clusters); err != nil {
		return nil, err
	}
	return f, nil
}

// Grow adds n clusters after the fleet's last (their indexes continue), seeded as New seeds
// them and with the same fractions of silent and flapping ones; a running Run starts their
// agents too. The bench grows one fleet through its sizes this way, on one hub.
func (f *Fleet) Grow(ctx context.Context, n int) ([]*Cluster, error) {
	if n <= 0 {
		return nil, fmt.Errorf("fleet simulator: cannot grow by %d clusters", n)
	}
	f.mu.RLock()
	first := f.opts.First + len(f.clusters)
	f.mu.RUnlock()
	opts := f.opts
	nSilent := int(opts.Silent * float64(n))
	nFlap := int(opts.Flap * float64(n))
	var added []*Cluster
	silent, flapping := 0, 0
	for i := range n {
		idx := first + i
		name := opts.Name(idx)
		b := Steady
		// Spread the behaviours over the index range so every label value gets some.
		switch {
		case nSilent > 0 && i%max(1, n/nSilent) == 0 && silent < nSilent:
			b, silent = Silent, silent+1
		case nFlap > 0 && (i+1)%max(1, n/nFlap) == 0 && flapping < nFlap:
			b, flapping = Flapping, flapping+1
		}
		mc, err := memkube.New(memkube.Options{Name: name, CRDs: f.managedCRDs, Version: version.Info{GitVersion: opts.KubernetesVersion,
			Major: majorOf(opts.KubernetesVersion), Minor: minorOf(opts.KubernetesVersion), Platform: "linux/amd64"}})
		if err != nil {
			return nil, fmt.Errorf("fleet simulator: cluster %s: %w", name, err)
		}
		c := &Cluster{Name: name, Managed: mc, Behaviour: b, Labels: map[string]string{}}
		for _, l := range opts.Labels {
			c.Labels[l.Key] = l.Values[idx%len(l.Values)]
		}
		if err := f.seed(ctx, c, idx); err != nil {
			return nil, err
		}
		added = append(added, c)
	}
	f.mu.Lock()
	f.clusters = append(f.clusters, added...)
	for _, c := range added {
		f.byName[c.Name] = c
	}
	f.mu.Unlock()
	select {
	case f.grown <- struct{}{}:
	default:
	}
	return added, nil
}

func majorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	return parts[0]
}

func minorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// seed writes the cluster's Nodes (its capacity) and ClusterClaims into its managed side.
func (f *Fleet) seed(ctx context.Context, c *Cluster, idx int) error {
	mcl, err := client.New(c.Managed.Config(), client.Options{Scheme: f.scheme})
	if err != nil {
		return fmt.Errorf("fleet simulator: cluster %s: %w", c.Name, err)
	}
	cpu := f.opts.CPU.pick(c.Name, "cpu")
	mem := f.opts.Memory.pick(c.Name, "memory")
	for n := range f.opts.Nodes {
		// The capacity is spread over the nodes; the first takes the remainder.
		nc, nm := cpu/int64(f.opts.Nodes), mem/int64(f.opts.Nodes)
		if n == 0 {
			nc, nm = nc+cpu%int64(f.opts.Nodes), nm+mem%int64(f.opts.Nodes)
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(nc, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(nm<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		}
		alloc := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(nc*900, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((nm<<30)/10*9, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", n)}}
		if err := mcl.Create(ctx, node); err != nil {
			return fmt.Errorf("fleet simulator: cluster %s: creating Node %s: %w", c.Name, node.Name, err)
		}
		status := corev1.NodeStatus{Capacity: capacity, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
		if err := apply.Fields(ctx, mcl, node, fieldManager, true, map[string]any{"status": status}); err != nil {
			return fmt.Errorf("fleet simulator: cluster %s: Node %s status: %w", c.Name, node.Name, err)
		}
	}
	for _, cl := range f.opts.Claims {
		claim := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: cl.Key},
			Spec: clusterv1alpha1.ClusterClaimSpec{Value: cl.Values[idx%len(cl.Values)]}}
		if err := mcl.Create(ctx, claim); err != nil {
			return fmt.Errorf("fleet simulator: cluster %s: creating ClusterClaim %s: %w", c.Name, cl.Key, err)
		}
	}
	return nil
}

// Clusters are the fleet's clusters in name order.
func (f *Fleet) Clusters() []*Cluster {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.clusters[:len(f.clusters):len(f.clusters)]
}

// Cluster is the cluster named name, or nil.
func (f *Fleet) Cluster(name string) *Cluster {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.byName[name]
}

// Names are the clusters' names, in order.
func (f *Fleet) Names() []string {
	cs := f.Clusters()
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	sort.Strings(out)
	return out
}

// Run starts every cluster's agent (and those Grow adds later), at most JoinConcurrency
// bootstrapping at once (a cluster counts as bootstrapping until its agent has a signed
// identity), and runs them until ctx ends; then it stops them all and returns. An agent that
// fails (its options are invalid) ends Run with its error.
func (f *Fleet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, f.opts.JoinConcurrency)
	for started := 0; ctx.Err() == nil; {
		for _, c := range f.Clusters()[started:] {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			started++
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				if err := f.life(ctx, c, slots); err != nil {
					select {
					case f.errs <- err:
					default:
					}
					cancel()
				}
			}()
		}
		select {
		case <-ctx.Done():
		case <-f.grown:
		}
	}
	f.wg.Wait()
	select {
	case err := <-f.errs:
		return err
	default:
		return nil
	}
}

// life runs one cluster's agent as its Behaviour says. It frees its join slot once the
// agent holds a signed identity (or stops).
func (f *Fleet) life(ctx context.Context, c *Cluster, slot chan struct{}) error {
	var once sync.Once
	free := func() { once.Do(func() { <-slot }) }
	defer free()
	for first := true; ctx.Err() == nil; first = false {
		runFor := time.Duration(0) // until ctx ends
		switch c.Behaviour {
		case Silent:
			if !first {
				<-ctx.Done()
				return nil
			}
			runFor = -1 // until SilentAfter after joining
		case Flapping:
			runFor = f.opts.FlapPeriod - f.opts.FlapDown
		}
		if err := f.runAgent(ctx, c, runFor, free); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.Behaviour == Flapping {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(f.opts.FlapDown):
			}
		}
	}
	return nil
}

// runAgent runs c's klusterlet until ctx ends or runFor passes (0: no limit; -1: until
// SilentAfter after the agent reported its cluster Joined). identity is called once the
// agent has its signed identity.
func (f *Fleet) runAgent(ctx context.Context, c *Cluster, runFor time.Duration, identity func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := klusterlet.Options{
		Registration: registration.Config{
			ClusterName: c.Name, ManagedConfig: c.Managed.Config(), BootstrapKubeconfig: f.opts.BootstrapKubeconfig,
			LeaseDurationSeconds: f.opts.LeaseDurationSeconds, CSRExpirationSeconds: f.opts.CSRExpirationSeconds,
			Logger: f.opts.Logger.WithValues("cluster", c.Name),
		},
		// One Wasm host per simulated cluster would dwarf the rest: WellKnownStatus feedback
		// is not simulated (JSONPaths feedback is).
		Plugins: klusterlet.PluginOptions{Disabled: true},
		// One work at a time per cluster: a worker is a goroutine per cluster, and memkube
		// applies a work in microseconds.
		Work:   klusterlet.WorkOptions{Workers: 1},
		Scheme: f.scheme, HubMapper: f.hubMapper,
	}
	a, err := klusterlet.New(opts)
	if err != nil {
		return fmt.Errorf("fleet simulator: cluster %s: %w", c.Name, err)
	}
	done := make(chan error, 1)
	c.running.Store(true)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		c.running.Store(false)
		c.mu.Lock()
		c.stoppedAt = time.Now()
		c.mu.Unlock()
	}()
	// Look for the identity (to free the join slot) and the join (to start a silent
	// cluster's clock); then the loop only waits.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ticks := tick.C
	var deadline <-chan time.Time
	if runFor > 0 {
		t := time.NewTimer(runFor)
		defer t.Stop()
		deadline = t.C
	}
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			cancel()
			return <-done
		case <-ticks:
			st := a.Registration.State()
			if st.KubeconfigLoaded {
				identity() // frees the join slot (once)
			}
			if st.Joined {
				ticks = nil
				if runFor < 0 {
					t := time.NewTimer(f.opts.SilentAfter)
					defer t.Stop()
					deadline = t.C
				}
			}
		}
	}
}

// LabelOnHub does what a hub admin labelling new clusters would: it gives each cluster's
// ManagedCluster the labels drawn for it (Cluster.Labels), as soon as its agent has created
// it, until all the clusters the fleet had when it started are labelled or ctx ends. It
// lists once and then watches (a list every few seconds of thousands of clusters would load
// the hub's API server), and patches up to labelWorkers clusters at once: one patch at a time
// through the hub's webhooks labelled about 3 clusters a second and bounded a 5,000-cluster
// join. hub must be allowed to list, watch and patch ManagedClusters.
func (f *Fleet) LabelOnHub(ctx context.Context, hub client.WithWatch) error {
	todo := map[string]*Cluster{}
	for _, c := range f.Clusters() {
		if len(c.Labels) > 0 {
			todo[c.Name] = c
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(labelWorkers)
	// label hands a cluster that lacks its labels to a worker; only the watch loop calls it.
	label := func(mc *clusterv1.ManagedCluster) {
		c := todo[mc.Name]
		if c == nil {
			return
		}
		delete(todo, mc.Name)
		missing := false
		for k, v := range c.Labels {
			missing = missing || mc.Labels[k] != v
		}
		if !missing {
			return
		}
		orig := mc.DeepCopy()
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		maps.Copy(mc.Labels, c.Labels)
		g.Go(func() error {
			if err := hub.Patch(gctx, mc, client.MergeFrom(orig)); err != nil && gctx.Err() == nil {
				return fmt.Errorf("fleet simulator: labelling ManagedCluster %s: %w", mc.Name, err)
			}
			return nil
		})
	}
	watchAll := func() error {
		list := &clusterv1.ManagedClusterList{}
		if err := hub.List(gctx, list); err != nil {
			if gctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("fleet simulator: listing ManagedClusters to label them: %w", err)
		}
		for i := range list.Items {
			label(&list.Items[i])
		}
		if len(todo) == 0 {
			return nil
		}
		w, err := hub.Watch(gctx, &clusterv1.ManagedClusterList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			select {
			case <-gctx.Done():
			case <-time.After(2 * time.Second):
			}
			return nil
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			mc, ok := ev.Object.(*clusterv1.ManagedCluster)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			label(mc)
			if len(todo) == 0 {
				break
			}
		}
		return nil
	}
	var err error
	for len(todo) > 0 && gctx.Err() == nil && err == nil {
		err = watchAll()
	}
	if werr := g.Wait(); werr != nil {
		return werr
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// labelWorkers is how many ManagedClusters LabelOnHub patches at once.
const labelWorkers = 32

// Counts are how many of the fleet's agents run now, by behaviour.
func (f *Fleet) Counts() (running, total int) {
	cs := f.Clusters()
	for _, c := range cs {
		if c.Running() {
			running++
		}
	}
	return running, len(cs)
}
