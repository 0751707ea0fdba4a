package work

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/format"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// The real fleet: the hub's ManifestWorkReplicaSet controller, the placement controller and
// the two real work agents, with KWOK making the Deployments' Pods Ready.
var _ = Describe("ManifestWorkReplicaSet on the real fleet", func() {
	It("rolls a Deployment out progressively, one cluster after the other succeeded, then removes it", func(ctx SpecContext) {
		const ns = "mwrs-fleet"
		Expect(hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(hubClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}, NodeTimeout(2*time.Minute))
		// Both clusters are in the hub's default set (with the other specs' simulated ones): the
		// placement selects the two by a label of this spec's, and the replica set is created
		// once it does (a cluster an earlier spec left briefly unavailable is tainted until its
		// agent reports again).
		Expect(hubClient.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"}})).To(Succeed())
		for _, cl := range []string{cluster1, cluster2} {
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cl}}
			label := func(ctx context.Context, v any) {
				Expect(hubClient.Patch(ctx, mc, client.RawPatch(types.MergePatchType,
					[]byte(fmt.Sprintf(`{"metadata":{"labels":{"e2e-mwrs-fleet":%s}}}`, v))))).To(Succeed())
			}
			label(ctx, `"true"`)
			DeferCleanup(func(ctx SpecContext) { label(ctx, "null") }, NodeTimeout(2*time.Minute))
		}
		Expect(hubClient.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
			Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"e2e-mwrs-fleet": "true"}}}}}}})).To(Succeed())
		Eventually(func(g Gomega) {
			p := &clusterv1beta1.Placement{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "both"}, p)).To(Succeed())
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(2))
		}).Should(Succeed())

		one := intstr.FromInt32(1)
		rs := &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: workv1alpha1.ManifestWorkReplicaSetSpec{
				PlacementRefs: []workv1alpha1.LocalPlacementReference{{Name: "both", RolloutStrategy: clusterv1alpha1.RolloutStrategy{
					Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: one}}}},
				ManifestWorkTemplate: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests(
					deployment("default", "mwrs-web", "quay.io/asmacdo/busybox"))}},
			}}
		Expect(hubClient.Create(ctx, rs)).To(Succeed())

		work := func(cluster string) func() *workv1.ManifestWork {
			return func() *workv1.ManifestWork {
				w := &workv1.ManifestWork{}
				if err := hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "web"}, w); err != nil {
					return nil
				}
				return w
			}
		}
		done := func(w *workv1.ManifestWork) bool {
			return w != nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) &&
				meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable)
		}
		// One cluster at a time (cluster1 first, by name): until its work succeeded, cluster2 has
		// none. cluster2 is read first, so a work there next to a cluster1 work that never
		// succeeded is a breach whatever happens between the reads. "Never succeeded" is read from
		// Available, which stays True once the agent applied the work: the agent reports Applied
		// False for a moment when a re-apply conflicts with the Deployment's own status writes,
		// and the hub marks works Unknown when it thinks a cluster unavailable (a loaded machine
		// renews leases late); neither proves the rollout went on too early.
		notYet := func(w *workv1.ManifestWork) bool {
			if w == nil {
				return true
			}
			c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
			return c == nil || c.Status == metav1.ConditionFalse
		}
		Eventually(func() bool {
			w2, w1 := work(cluster2)(), work(cluster1)()
			if w2 != nil && notYet(w1) {
				Fail(fmt.Sprintf("cluster2 got its work before cluster1's succeeded: cluster1's work %s", format.Object(w1, 1)))
			}
			return done(w1)
		}).WithPolling(50 * time.Millisecond).Should(BeTrue())
		Eventually(func() bool { return done(work(cluster2)()) }).Should(BeTrue())
		for _, cl := range []string{cluster1, cluster2} {
			Eventually(live(cl, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mwrs-web"}})).ShouldNot(BeNil())
		}
		Eventually(func(g Gomega) {
			got := &workv1alpha1.ManifestWorkReplicaSet{}
			g.Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(rs), got)).To(Succeed())
			g.Expect(got.Status.Summary.Applied).To(Equal(2))
			g.Expect(got.Status.Summary.Available).To(Equal(2))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)).To(
				And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", workv1alpha1.ReasonComplete)))
		}).Should(Succeed())

		By("deleting the replica set removes its works and what they applied")
		Expect(hubClient.Delete(ctx, rs)).To(Succeed())
		for _, cl := range []string{cluster1, cluster2} {
			Eventually(gone(cl, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mwrs-web"}})).Should(BeTrue())
			Eventually(func() bool {
				return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: cl, Name: "web"}, &workv1.ManifestWork{}))
			}).Should(BeTrue())
		}
	}, SpecTimeout(5*time.Minute))
})
