package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	apischeme "github.com/flotilla-dev/flotilla/core/apis/scheme"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// wakeCounts counts Reconcile calls per placement.
type wakeCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *wakeCounts) add(req reconcile.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n[req.String()]++
}

func (w *wakeCounts) get() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.n)
}

// TestWakeOnlyAffected: against a real API server, a fleet change reconciles only the
// placements it can affect. (The controller used to reconcile every placement on any score
// or cluster change.)
func TestWakeOnlyAffected(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	scheme := runtime.NewScheme()
	if err := apischeme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	skip := true
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Logger: logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	zero := scheduler.PrioritizerFunc(func(_ context.Context, req *scheduler.ScoreRequest) ([]int64, error) {
		return make([]int64, len(req.Clusters)), nil
	})
	counts := &wakeCounts{n: map[string]int{}}
	r := &Reconciler{Client: mgr.GetClient(), reconciled: counts.add, Scheduler: &scheduler.Scheduler{Native: map[string]scheduler.Prioritizer{
		clusterv1beta1.PrioritizerBalance: zero, clusterv1beta1.PrioritizerSteady: zero, clusterv1beta1.PrioritizerResourceAllocatableCPU: zero,
	}}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	// Sets a and b bound to ns; other-ns has no binding. c1 in a, c2 in b, each with a score.
	const ns, otherNS = "wake", "wake-other"
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: otherNS}},
	}
	for _, set := range []string{"a", "b"} {
		objs = append(objs, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
			&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
				Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}})
	}
	for name, set := range map[string]string{"c1": "a", "c2": "b"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "sc"}})
	}
	prio := func(cfgs ...clusterv1beta1.PrioritizerConfig) clusterv1beta1.PrioritizerPolicy {
		return clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeExact, Configurations: cfgs}
	}
	addOn := func(res string) clusterv1beta1.PrioritizerConfig {
		return clusterv1beta1.PrioritizerConfig{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type: clusterv1beta1.ScoreCoordinateTypeAddOn, AddOn: &clusterv1beta1.AddOnScore{ResourceName: res, ScoreName: "v"}}}
	}
	cpu := clusterv1beta1.PrioritizerConfig{Weight: 1, ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
		Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: clusterv1beta1.PrioritizerResourceAllocatableCPU}}
	placements := map[string]clusterv1beta1.PlacementSpec{
		ns + "/score-a": {ClusterSets: []string{"a"}, PrioritizerPolicy: prio(addOn("sc"))},    // reads c1's score
		ns + "/other-a": {ClusterSets: []string{"a"}, PrioritizerPolicy: prio(addOn("other"))}, // another score
		ns + "/cpu-a":   {ClusterSets: []string{"a"}, PrioritizerPolicy: prio(cpu)},            // allocatable
		ns + "/score-b": {ClusterSets: []string{"b"}, PrioritizerPolicy: prio(addOn("sc"))},    // c2's score only
		// Reads the score over set a, but its predicate filters c1 out.
		ns + "/score-a-prod": {ClusterSets: []string{"a"}, PrioritizerPolicy: prio(addOn("sc")), Predicates: []clusterv1beta1.ClusterPredicate{{
			RequiredClusterSelector: clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}}},
		otherNS + "/all": {PrioritizerPolicy: prio(addOn("sc"))}, // no binding: no cluster
	}
	for key, spec := range placements {
		n, name, _ := strings.Cut(key, "/")
		objs = append(objs, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: name}, Spec: spec})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	setScore := func(cluster string, v int32) {
		t.Helper()
		sc := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: "sc"}}
		g.Expect(apply.Fields(ctx, c, sc, "test", true, map[string]any{"status": map[string]any{
			"scores": []any{map[string]any{"name": "v", "value": v}}}})).To(Succeed(), "score of %s", cluster)
	}
	setScore("c1", 10)
	setScore("c2", 10)

	// Wait until every placement is decided and no reconcile is pending: two reads a second
	// apart that agree.
	g.Eventually(func() error {
		for key := range placements {
			n, name, _ := strings.Cut(key, "/")
			p := &clusterv1beta1.Placement{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: n, Name: name}, p); err != nil {
				return err
			}
			if meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) == nil {
				return fmt.Errorf("placement %s has no PlacementSatisfied condition", key)
			}
		}
		return nil
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "waiting for every placement to be decided")
	quiet := func() map[string]int {
		t.Helper()
		var last map[string]int
		g.Eventually(func() bool {
			now := counts.get()
			same := maps.Equal(now, last)
			last = now
			return same
		}, 30*time.Second, time.Second).Should(BeTrue(), "waiting for the reconciles to stop")
		return last
	}
	// Each step's check fails the test but lets the next steps run: each says what it wakes.
	check := NewGomega(func(msg string, _ ...int) { t.Helper(); t.Error(msg) })
	// expect waits until the placements in woken were reconciled once more than in base, then
	// checks for two seconds that no other placement was.
	expect := func(what string, base map[string]int, woken ...string) {
		t.Helper()
		if len(woken) > 0 {
			check.Eventually(func() map[string]int {
				now := counts.get()
				out := map[string]int{}
				for _, key := range woken {
					out[key] = now[key] - base[key]
				}
				return out
			}, 30*time.Second, 50*time.Millisecond).Should(HaveEach(BeNumerically(">=", 1)), "%s: waiting for %v to be reconciled", what, woken)
		}
		check.Consistently(func() []string {
			var extra []string
			now := counts.get()
			for key := range placements {
				if now[key] != base[key] && !slices.Contains(woken, key) {
					extra = append(extra, key)
				}
			}
			return extra
		}, 2*time.Second, 50*time.Millisecond).Should(BeEmpty(), "%s: placements reconciled that %s cannot affect", what, what)
	}

	// A score change of c1 reaches only the placement reading that score over c1's set, not
	// one whose predicate filters c1 out.
	base := quiet()
	setScore("c1", 20)
	expect("c1's score change", base, ns+"/score-a")

	// A lease renewal, a condition the scheduler does not read (its reason), and a score
	// rewritten with the same value reach none.
	base = quiet()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "managed-cluster-lease"}}
	g.Expect(c.Create(ctx, lease)).To(Succeed())
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.RenewTime = &now
	g.Expect(c.Update(ctx, lease)).To(Succeed(), "renewing the lease")
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	for _, reason := range []string{"Joined", "JoinedAgain"} {
		_, err := apply.Condition(ctx, c, mc, nil, "test-agent", metav1.Condition{Type: clusterv1.ManagedClusterConditionJoined,
			Status: metav1.ConditionTrue, Reason: reason, Message: "joined"})
		g.Expect(err).NotTo(HaveOccurred(), "condition Joined reason %s", reason)
	}
	sc := &clusterv1alpha1.AddOnPlacementScore{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "sc"}, sc)).To(Succeed())
	sc.Annotations = map[string]string{"touched": "yes"}
	g.Expect(c.Update(ctx, sc)).To(Succeed(), "touching the score")
	expect("a heartbeat", base)

	// An allocatable change reaches only the placement whose prioritizer reads resources.
	base = quiet()
	g.Expect(apply.Fields(ctx, c, mc, "test-agent-status", true, map[string]any{"status": map[string]any{
		"allocatable": map[string]any{"cpu": "4"}, "capacity": map[string]any{"cpu": "4"}}})).To(Succeed())
	expect("c1's allocatable change", base, ns+"/cpu-a")

	// c1 moving from set a to b reaches the placements of both sets in ns, not other-ns's.
	base = quiet()
	g.Expect(c.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+clusterv1beta2.ClusterSetLabel+`":"b"}}}`)))).To(Succeed())
	expect("c1's move to set b", base, ns+"/score-a", ns+"/other-a", ns+"/cpu-a", ns+"/score-b", ns+"/score-a-prod")
}
