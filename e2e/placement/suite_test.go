// Package placement is the end-to-end suite of the placement controller: a real hub API
// server, the hub in-process as flotilla hub runs it (with its Wasm prioritizers), and
// simulated clusters as plain ManagedCluster objects with their status set.
package placement

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	coreapply "github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestPlacementE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Placement e2e")
}

var (
	controlPlane *environment.ControlPlane
	scheme       *runtime.Scheme
	hubClient    client.Client
	hub          *manager.Hub
	logger       logr.Logger
	// debugAddr is where the hub serves the placement debug endpoint.
	debugAddr string
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env := hubtest.StartControlPlane(ctx)
	controlPlane, scheme, hubClient, logger = env.ControlPlane, env.Scheme, env.Client, env.Logger
	gates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	// The suite's sets are its own: no default set relabelling clusters.
	Expect(gates.Set("DefaultClusterSet=false")).To(Succeed())
	// The placement debug endpoint on a free port (OCM serves it on :8443).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	debugAddr = ln.Addr().String()
	Expect(ln.Close()).To(Succeed())
	hub = env.StartHub(manager.Options{FeatureGates: gates, PlacementDebugBindAddress: debugAddr})
}, NodeTimeout(5*time.Minute))

// apply creates the YAML objects (separated by ---), deleted after the spec.
func apply(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Expect(hubClient.Create(ctx, u)).To(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, u))).To(Succeed())
			if u.GetKind() == "Placement" {
				// The garbage collector would delete its decisions (their owner is gone); the
				// suite's API server runs none, and stale decisions would count for Balance.
				Expect(hubClient.DeleteAllOf(ctx, &clusterv1beta1.PlacementDecision{}, client.InNamespace(u.GetNamespace()),
					client.MatchingLabels{clusterv1beta1.PlacementLabel: u.GetName()})).To(Succeed())
			}
		}, NodeTimeout(2*time.Minute))
	}
}

// namespace creates a namespace for one spec.
func namespace(ctx context.Context, name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(hubClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(hubClient.Delete(ctx, ns)).To(Succeed()) }, NodeTimeout(2*time.Minute))
}

// cluster creates a simulated ManagedCluster with labels, claims and allocatable resources,
// deleted after the spec.
func cluster(ctx context.Context, name string, labels map[string]string, claims map[string]string, allocatable clusterv1.ResourceList) {
	GinkgoHelper()
	clusters(ctx, sim{Name: name, Labels: labels, Claims: claims, Allocatable: allocatable})
}

// sim is a simulated ManagedCluster: what its agent would report (claims, allocatable and
// capacity, version, Available=True) and the taints it is created with.
type sim struct {
	Name        string
	Labels      map[string]string
	Claims      map[string]string
	Allocatable clusterv1.ResourceList
	Taints      []clusterv1.Taint
}

// agentManager is the field manager of the simulated agents' status.
const agentManager = "e2e-agent"

// clusters creates simulated ManagedClusters concurrently, deleted (concurrently) after the
// spec.
func clusters(ctx context.Context, sims ...sim) {
	GinkgoHelper()
	DeferCleanup(func(ctx SpecContext) {
		Expect(forEach(len(sims), func(i int) error {
			return client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sims[i].Name}}))
		})).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Expect(forEach(len(sims), func(i int) error {
		s := sims[i]
		c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: s.Labels},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, Taints: s.Taints}}
		if err := hubClient.Create(ctx, c); err != nil {
			return fmt.Errorf("creating ManagedCluster %s: %w", s.Name, err)
		}
		claims := []clusterv1.ManagedClusterClaim{}
		for k, v := range s.Claims {
			claims = append(claims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
		}
		sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
		status := map[string]any{
			"conditions":    []any{availableCondition(metav1.ConditionTrue)},
			"clusterClaims": claims,
			"version":       map[string]any{"kubernetes": "v1.36.0"},
		}
		if s.Allocatable != nil {
			status["allocatable"] = s.Allocatable
			status["capacity"] = s.Allocatable
		}
		// Applied, not updated: the hub's controllers write the same object meanwhile.
		if err := coreapply.Fields(ctx, hubClient, c, agentManager, true, map[string]any{"status": status}); err != nil {
			return fmt.Errorf("ManagedCluster %s status: %w", s.Name, err)
		}
		// Until its status said Available, the hub's taint controller may have tainted the
		// cluster unreachable; wait until that is gone, so placements see it as it is meant.
		// (The taint controller writes guarded by resourceVersion: once a read shows the
		// taint gone after the status, it cannot come back from an older view.)
		return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cur := &clusterv1.ManagedCluster{}
			if err := hubClient.Get(ctx, client.ObjectKey{Name: s.Name}, cur); err != nil {
				return false, err
			}
			return len(cur.Spec.Taints) == len(s.Taints), nil
		})
	})).To(Succeed())
}

// forEach runs f(0..n-1) on a few goroutines and returns the first error.
func forEach(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

func availableCondition(status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: status,
		Reason: "Simulated", Message: "simulated agent", LastTransitionTime: metav1.Now()}
}

// setAvailable sets a simulated cluster's Available condition, as its agent (True, False)
// or the hub's lease controller (Unknown) would.
func setAvailable(ctx context.Context, name string, status metav1.ConditionStatus) {
	GinkgoHelper()
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	// Its own field manager: an apply by agentManager would drop the rest of the status.
	Expect(coreapply.Condition(ctx, hubClient, c, nil, agentManager+"-availability", availableCondition(status))).To(BeTrue())
}

// managedCluster reads a cluster.
func managedCluster(ctx context.Context, name string) *clusterv1.ManagedCluster {
	GinkgoHelper()
	c := &clusterv1.ManagedCluster{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

// setTaints replaces a cluster's taints with a merge patch, as kubectl patch --type=merge.
func setTaints(ctx context.Context, name string, taints ...clusterv1.Taint) {
	GinkgoHelper()
	if taints == nil {
		taints = []clusterv1.Taint{}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	Expect(err).NotTo(HaveOccurred())
	Expect(hubClient.Patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// taintKeys are the keys of a cluster's taints.
func taintKeys(ctx context.Context, name string) []string {
	GinkgoHelper()
	out := []string{}
	for _, t := range managedCluster(ctx, name).Spec.Taints {
		out = append(out, t.Key)
	}
	return out
}

// patch merge-patches an object (a JSON or YAML merge patch).
func patch(ctx context.Context, obj client.Object, p string) {
	GinkgoHelper()
	data, err := yaml.YAMLToJSON([]byte(p))
	Expect(err).NotTo(HaveOccurred())
	Expect(hubClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))).To(Succeed())
}

// patchPlacement merge-patches a placement, as kubectl patch placement --type=merge.
func patchPlacement(ctx context.Context, namespace, name, p string) {
	GinkgoHelper()
	patch(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, p)
}

// clusterNamespace makes sure a cluster's namespace exists (the hub creates it when it
// accepts the cluster; whoever comes first wins).
func clusterNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// score publishes an AddOnPlacementScore in a cluster's namespace (created if needed), as a
// score provider would: scores name → value, validUntil nil for never expiring. It is
// deleted after the spec.
func score(ctx context.Context, cluster, name string, validUntil *time.Time, scores map[string]int32) {
	GinkgoHelper()
	clusterNamespace(ctx, cluster)
	s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
	Expect(hubClient.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, s))).To(Succeed()) }, NodeTimeout(2*time.Minute))
	setScore(ctx, cluster, name, validUntil, scores)
}

// setScore updates the scores of an AddOnPlacementScore.
func setScore(ctx context.Context, cluster, name string, validUntil *time.Time, scores map[string]int32) {
	GinkgoHelper()
	s := &clusterv1alpha1.AddOnPlacementScore{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, s)).To(Succeed())
	s.Status.Scores = nil
	for k, v := range scores {
		s.Status.Scores = append(s.Status.Scores, clusterv1alpha1.AddOnPlacementScoreItem{Name: k, Value: v})
	}
	sort.Slice(s.Status.Scores, func(i, j int) bool { return s.Status.Scores[i].Name < s.Status.Scores[j].Name })
	s.Status.ValidUntil = nil
	if validUntil != nil {
		t := metav1.NewTime(*validUntil)
		s.Status.ValidUntil = &t
	}
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: "AddOnPlacementScoreUpdated", Status: metav1.ConditionTrue,
		Reason: "AddOnPlacementScoreUpdated", Message: "AddOnPlacementScore updated successfully"})
	Expect(hubClient.Status().Update(ctx, s)).To(Succeed())
}

// bind creates cluster sets (ExclusiveClusterSetLabel: the members carry
// cluster.open-cluster-management.io/clusterset=<set>) and binds them to namespace.
func bind(ctx context.Context, namespace string, sets ...string) {
	GinkgoHelper()
	for _, set := range sets {
		clusterSet(ctx, set)
		binding(ctx, namespace, set)
	}
}

// clusterSet creates an ExclusiveClusterSetLabel ManagedClusterSet.
func clusterSet(ctx context.Context, set string) {
	GinkgoHelper()
	apply(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: %s}
`, set))
}

// binding binds a set to namespace.
func binding(ctx context.Context, namespace, set string) {
	GinkgoHelper()
	apply(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: %s, namespace: %s}
spec: {clusterSet: %s}
`, set, namespace, set))
}

// inSet are the labels of a member of an ExclusiveClusterSetLabel set, plus more labels as
// key, value pairs.
func inSet(set string, kv ...string) map[string]string {
	l := map[string]string{clusterv1beta2.ClusterSetLabel: set}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// decided returns the clusters of a placement's decisions, in decision order.
func decided(ctx context.Context, namespace, placement string) []string {
	GinkgoHelper()
	list := &clusterv1beta1.PlacementDecisionList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return decisionIndex(list.Items[i].Name) < decisionIndex(list.Items[j].Name) })
	out := []string{}
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	return out
}

// decisionWrites watches the PlacementDecision of a placement (one page) from now until the
// spec ends. The function it returns waits for the first version seen whose decisions match,
// and returns the time the API server recorded for the write that made it: the newest of
// its managedFields times (whole seconds). A check on that time runs however late the
// test gets to look, where a Consistently up to a deadline would be skipped on a slow
// machine.
func decisionWrites(ctx context.Context, namespace, placement string) func(what string, match func([]clusterv1beta1.ClusterDecision) bool) time.Time {
	GinkgoHelper()
	wc, err := client.NewWithWatch(controlPlane.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &clusterv1beta1.PlacementDecisionList{}, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})
	Expect(err).NotTo(HaveOccurred())
	type version struct {
		decisions []clusterv1beta1.ClusterDecision
		written   time.Time
	}
	var (
		mu       sync.Mutex
		versions []version
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*clusterv1beta1.PlacementDecision)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			var written time.Time
			for _, mf := range d.ManagedFields {
				if mf.Time != nil && mf.Time.After(written) {
					written = mf.Time.Time
				}
			}
			mu.Lock()
			versions = append(versions, version{decisions: d.Status.Decisions, written: written})
			mu.Unlock()
		}
	}()
	DeferCleanup(func(ctx SpecContext) {
		w.Stop()
		Eventually(done).Should(BeClosed(), "the watch of %s/%s's decisions ending", namespace, placement)
	}, NodeTimeout(2*time.Minute))
	return func(what string, match func([]clusterv1beta1.ClusterDecision) bool) time.Time {
		GinkgoHelper()
		var at time.Time
		Eventually(func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, v := range versions {
				if match(v.decisions) {
					at = v.written
					return true
				}
			}
			return false
		}).Should(BeTrue(), "a version of %s/%s's PlacementDecision where %s", namespace, placement, what)
		return at
	}
}

// without matches decisions that do not have cluster.
func without(cluster string) func([]clusterv1beta1.ClusterDecision) bool {
	return func(ds []clusterv1beta1.ClusterDecision) bool {
		for _, d := range ds {
			if d.ClusterName == cluster {
				return false
			}
		}
		return true
	}
}

// decisionList returns a placement's PlacementDecisions, in page order.
func decisionList(ctx context.Context, namespace, placement string) []clusterv1beta1.PlacementDecision {
	GinkgoHelper()
	list := &clusterv1beta1.PlacementDecisionList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})).To(Succeed())
	sort.Slice(list.Items, func(i, j int) bool { return decisionIndex(list.Items[i].Name) < decisionIndex(list.Items[j].Name) })
	return list.Items
}

// scored returns a placement's decisions as "cluster:score", in decision order.
func scored(ctx context.Context, namespace, placement string) []string {
	GinkgoHelper()
	out := []string{}
	for _, d := range decisionList(ctx, namespace, placement) {
		for _, cd := range d.Status.Decisions {
			out = append(out, fmt.Sprintf("%s:%d", cd.ClusterName, cd.Score))
		}
	}
	return out
}

// condition returns a placement's condition (the zero condition when it has none).
func condition(ctx context.Context, namespace, placement, typ string) metav1.Condition {
	GinkgoHelper()
	if c := meta.FindStatusCondition(placementOf(ctx, namespace, placement).Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// satisfied is the PlacementSatisfied condition as "Status Reason".
func satisfied(ctx context.Context, namespace, placement string) string {
	GinkgoHelper()
	c := condition(ctx, namespace, placement, clusterv1beta1.PlacementConditionSatisfied)
	return string(c.Status) + " " + c.Reason
}

// placementEvent is an event about a placement, as kubectl describe shows it.
type placementEvent struct {
	Type, Reason, From, Note string
}

// events returns the events.k8s.io/v1 Events about a placement, oldest first.
func events(ctx context.Context, namespace, placement string) []placementEvent {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
	sort.SliceStable(list.Items, func(i, j int) bool { return list.Items[i].EventTime.Before(&list.Items[j].EventTime) })
	out := []placementEvent{}
	for _, e := range list.Items {
		if e.Regarding.Kind != "Placement" || e.Regarding.Name != placement {
			continue
		}
		out = append(out, placementEvent{Type: e.Type, Reason: e.Reason, From: cmp.Or(e.ReportingController, e.DeprecatedSource.Component), Note: e.Note})
	}
	return out
}

func decisionIndex(name string) int {
	var n int
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '-' {
			fmt.Sscanf(name[i+1:], "%d", &n)
			break
		}
	}
	return n
}

// placementOf reads a placement.
func placementOf(ctx context.Context, namespace, name string) *clusterv1beta1.Placement {
	GinkgoHelper()
	p := &clusterv1beta1.Placement{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p)).To(Succeed())
	return p
}

// findCondition returns a placement's condition (the zero condition when it has none).
func findCondition(p *clusterv1beta1.Placement, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// setAllocatable changes what a simulated cluster reports as allocatable (and capacity).
func setAllocatable(ctx context.Context, name string, allocatable clusterv1.ResourceList) {
	GinkgoHelper()
	// Its own field manager: an apply by agentManager would drop the rest of the status.
	Expect(coreapply.Fields(ctx, hubClient, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, agentManager+"-resources", true,
		map[string]any{"status": map[string]any{"allocatable": allocatable, "capacity": allocatable}})).To(Succeed())
}

// settled waits until the placement controller has decided the placement's current
// generation (its conditions carry it as observedGeneration).
func settled(ctx context.Context, namespace, placement string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		p := placementOf(ctx, namespace, placement)
		c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
	}).Should(Succeed())
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
