// Package mwrs is the end-to-end suite of the ManifestWorkReplicaSet controller: a real hub
// API server, the hub in-process as flotilla hub runs it (placement and replica set
// controllers included), simulated clusters as plain ManagedCluster objects with their status
// set, and a fake work agent that reports the status of the generated ManifestWorks as the
// test tells it to.
package mwrs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	coreapply "github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

func TestManifestWorkReplicaSetE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "ManifestWorkReplicaSet e2e")
}

var (
	controlPlane *environment.ControlPlane
	scheme       *runtime.Scheme
	hubClient    client.WithWatch
	logger       logr.Logger
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env := hubtest.StartControlPlane(ctx)
	controlPlane, scheme, hubClient, logger = env.ControlPlane, env.Scheme, env.Client, env.Logger
	gates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	// The replica set controller runs by default: the suite does not turn it on.
	Expect(gates.Enabled(featuregates.ManifestWorkReplicaSet)).To(BeTrue())
	// The suite's sets are its own: no default set relabelling clusters.
	Expect(gates.Set("DefaultClusterSet=false")).To(Succeed())
	env.StartHub(manager.Options{FeatureGates: gates})
	// The hub's webhook gives a work the agent's cleanup finalizer at create when its cluster
	// is Available, as the suite's simulated clusters are; they have no agent, so this stands
	// in for their agents' cleanup: a deleted work's finalizer goes at once.
	cleanupCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); releaseDeletedWorks(cleanupCtx) }()
	DeferCleanup(func(ctx SpecContext) {
		stop()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}, NodeTimeout(time.Minute))
}, NodeTimeout(5*time.Minute))

// releaseDeletedWorks removes the cleanup finalizer of every work being deleted, until ctx
// ends: what a work agent does once it has removed what the work applied.
func releaseDeletedWorks(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := hubClient.Watch(ctx, &workv1.ManifestWorkList{})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			mw, ok := ev.Object.(*workv1.ManifestWork)
			if !ok || mw.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(mw, workv1.ManifestWorkFinalizer) {
				continue
			}
			orig := mw.DeepCopy()
			controllerutil.RemoveFinalizer(mw, workv1.ManifestWorkFinalizer)
			if err := hubClient.Patch(ctx, mw, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && ctx.Err() == nil {
				fmt.Fprintf(GinkgoWriter, "releasing ManifestWork %s/%s: %v\n", mw.Namespace, mw.Name, err)
			}
		}
		w.Stop()
	}
}

// ---- objects ----

// apply creates the YAML objects, deleted after the spec (a replica set is waited for until
// it is gone, so that its works are deleted before the clusters go).
func apply(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
		Expect(hubClient.Create(ctx, u)).To(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(hubClient.Delete(ctx, u))).To(Succeed())
			switch u.GetKind() {
			case "Placement":
				Expect(hubClient.DeleteAllOf(ctx, &clusterv1beta1.PlacementDecision{}, client.InNamespace(u.GetNamespace()),
					client.MatchingLabels{clusterv1beta1.PlacementLabel: u.GetName()})).To(Succeed())
			case "ManifestWorkReplicaSet":
				Eventually(func() bool {
					return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(u), &workv1alpha1.ManifestWorkReplicaSet{}))
				}).Should(BeTrue(), "ManifestWorkReplicaSet %s/%s is not deleted", u.GetNamespace(), u.GetName())
			}
		}, NodeTimeout(2*time.Minute))
	}
}

// namespace creates a namespace for one spec.
func namespace(ctx context.Context, name string) {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(hubClient.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, ns))).To(Succeed()) }, NodeTimeout(2*time.Minute))
}

// bind creates an ExclusiveClusterSetLabel set and binds it to namespace.
func bind(ctx context.Context, namespace, set string) {
	GinkgoHelper()
	apply(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: %s}
`, set), fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: %s, namespace: %s}
spec: {clusterSet: %s}
`, set, namespace, set))
}

// sim is a simulated cluster: its name and labels (set membership is added).
type sim struct {
	Name   string
	Labels map[string]string
}

// clusters creates simulated ManagedClusters in set, accepted and Available, with their
// namespaces, and waits until no taint is left; deleted after the spec.
func clusters(ctx context.Context, set string, sims ...sim) {
	GinkgoHelper()
	DeferCleanup(func(ctx SpecContext) {
		Expect(forEach(len(sims), func(i int) error {
			return client.IgnoreNotFound(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: sims[i].Name}}))
		})).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Expect(forEach(len(sims), func(i int) error {
		s := sims[i]
		labels := map[string]string{clusterv1beta2.ClusterSetLabel: set}
		for k, v := range s.Labels {
			labels[k] = v
		}
		// The hub creates the cluster namespace when it accepts the cluster, after the cluster
		// roles and bindings; the works only need the namespace: whoever comes first wins.
		if err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", s.Name, err)
		}
		c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if err := hubClient.Create(ctx, c); err != nil {
			return fmt.Errorf("creating ManagedCluster %s: %w", s.Name, err)
		}
		status := map[string]any{
			"conditions": []any{metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue,
				Reason: "Simulated", Message: "simulated agent", LastTransitionTime: metav1.Now()}},
			"version": map[string]any{"kubernetes": "v1.36.0"},
		}
		if err := coreapply.Fields(ctx, hubClient, c, "e2e-agent", true, map[string]any{"status": status}); err != nil {
			return fmt.Errorf("ManagedCluster %s status: %w", s.Name, err)
		}
		return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cur := &clusterv1.ManagedCluster{}
			if err := hubClient.Get(ctx, client.ObjectKey{Name: s.Name}, cur); err != nil {
				return false, err
			}
			return len(cur.Spec.Taints) == 0, nil
		})
	})).To(Succeed())
}

// names returns prefix-01 … prefix-n.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i+1)
	}
	return out
}

// sims makes simulated clusters of names, all with the labels given as key, value pairs.
func sims(names []string, kv ...string) []sim {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	out := make([]sim, len(names))
	for i, n := range names {
		out[i] = sim{Name: n, Labels: l}
	}
	return out
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

// placement creates a Placement of the set's clusters labelled selector (key, value pairs),
// with more spec (a YAML flow mapping entry such as "decisionStrategy: {...}") if given.
func placement(ctx context.Context, ns, name, set string, selector []string, more string) {
	GinkgoHelper()
	var ml []string
	for i := 0; i+1 < len(selector); i += 2 {
		ml = append(ml, fmt.Sprintf("%q: %q", selector[i], selector[i+1]))
	}
	doc := fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: %s, namespace: %s}
spec:
  clusterSets: [%s]
  predicates:
  - requiredClusterSelector: {labelSelector: {matchLabels: {%s}}}
`, name, ns, set, strings.Join(ml, ", "))
	if more != "" {
		doc += "  " + more + "\n"
	}
	apply(ctx, doc)
}

// replicaSet creates a ManifestWorkReplicaSet whose template is one ConfigMap carrying
// version, with placement references given as YAML flow mappings such as
// "{name: p, rolloutStrategy: {type: All}}", and more spec (e.g. "cascadeDeletionPolicy: Foreground").
func replicaSet(ctx context.Context, ns, name, version string, refs []string, more string) {
	GinkgoHelper()
	doc := fmt.Sprintf(`
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: %s, namespace: %s}
spec:
  placementRefs: [%s]
  manifestWorkTemplate:
    workload:
      manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default}, data: {version: %q}}
`, name, ns, strings.Join(refs, ", "), name, version)
	if more != "" {
		doc += "  " + more + "\n"
	}
	apply(ctx, doc)
}

// setVersion changes the version in a replica set's template (a new template hash).
func setVersion(ctx context.Context, ns, name, version string) {
	GinkgoHelper()
	Eventually(func() error {
		rs := getRS(ctx, ns, name)
		m := &rs.Spec.ManifestWorkTemplate.Workload.Manifests[0]
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, version, "data", "version"); err != nil {
			return err
		}
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		m.Raw, m.Object = raw, nil
		return hubClient.Update(ctx, rs)
	}).Should(Succeed())
}

// patch merge-patches an object (YAML or JSON).
func patch(ctx context.Context, obj client.Object, p string) {
	GinkgoHelper()
	data, err := yaml.YAMLToJSON([]byte(p))
	Expect(err).NotTo(HaveOccurred())
	Expect(hubClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))).To(Succeed())
}

// getRS reads a replica set.
func getRS(ctx context.Context, ns, name string) *workv1alpha1.ManifestWorkReplicaSet {
	GinkgoHelper()
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rs)).To(Succeed())
	return rs
}

// condition returns a replica set's condition (zero when missing).
func condition(rs *workv1alpha1.ManifestWorkReplicaSet, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(rs.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// rolledOut is the PlacementRolledOut condition of a replica set, read now.
func rolledOut(ctx context.Context, ns, name string) metav1.Condition {
	GinkgoHelper()
	return condition(getRS(ctx, ns, name), workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
}

// conditionOf matches a condition's type, status and reason.
func conditionOf(typ string, status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(HaveField("Type", typ), HaveField("Status", status), HaveField("Reason", reason))
}

// ownerLabel selects the works of replica set ns/name.
func ownerLabel(ns, name string) client.MatchingLabels {
	return client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ns + "." + name}
}

// works returns the generated works of replica set ns/name by cluster.
func works(ctx context.Context, ns, name string) map[string]*workv1.ManifestWork {
	GinkgoHelper()
	list := &workv1.ManifestWorkList{}
	Expect(hubClient.List(ctx, list, ownerLabel(ns, name))).To(Succeed())
	out := map[string]*workv1.ManifestWork{}
	for i := range list.Items {
		out[list.Items[i].Namespace] = &list.Items[i]
	}
	return out
}

// workClusters returns the sorted clusters that have a work of replica set ns/name (with
// template hash hash, when given).
func workClusters(ctx context.Context, ns, name string, hash ...string) []string {
	GinkgoHelper()
	out := []string{}
	for c, w := range works(ctx, ns, name) {
		if len(hash) == 0 || w.Annotations[mwrs.TemplateHashAnnotation] == hash[0] {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// succeeded reports whether a work is Applied and Available for its generation.
func succeeded(w *workv1.ManifestWork) bool {
	ok := func(t string) bool {
		c := meta.FindStatusCondition(w.Status.Conditions, t)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
	}
	return ok(workv1.WorkApplied) && ok(workv1.WorkAvailable)
}

// hashes returns the distinct template hashes of replica set ns/name's works.
func hashes(ctx context.Context, ns, name string) []string {
	GinkgoHelper()
	set := map[string]bool{}
	for _, w := range works(ctx, ns, name) {
		set[w.Annotations[mwrs.TemplateHashAnnotation]] = true
	}
	out := []string{}
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// decided waits until a placement decided exactly clusters and returns its decision groups.
func decided(ctx context.Context, ns, placement string, clusters []string) map[int][]string {
	GinkgoHelper()
	var groups map[int][]string
	Eventually(func(g Gomega) {
		groups = hubtest.DecisionGroups(ctx, hubClient, ns, placement)
		all := []string{}
		for _, cs := range groups {
			all = append(all, cs...)
		}
		g.Expect(all).To(ConsistOf(clusters))
	}).Should(Succeed())
	return groups
}

func sorted(s ...[]string) []string {
	out := []string{}
	for _, x := range s {
		out = append(out, x...)
	}
	sort.Strings(out)
	return out
}
