package work

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	hubwork "github.com/flotilla-dev/flotilla/hub/work"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

func clusterAvailable(name string) func(g Gomega) metav1.ConditionStatus {
	return func(g Gomega) metav1.ConditionStatus {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		if c == nil {
			return ""
		}
		return c.Status
	}
}

// joinExtra registers another cluster from cluster2's API server (its agent's secrets in
// their own namespace) and accepts it.
func joinExtra(name string) *runningAgent {
	return joinExtraWith(name, klusterlet.WorkOptions{StatusSyncInterval: statusSync, EvictionGracePeriod: evictionGrace})
}

// joinExtraWith is joinExtra with the work agent's options.
func joinExtraWith(name string, work klusterlet.WorkOptions) *runningAgent {
	GinkgoHelper()
	ns := "agent-" + name
	Expect(managed[cluster2].client.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	a := startAgentWith(name, fleet.Managed[1], ns, work)
	Eventually(func(g Gomega) {
		_, err := admin.Accept(suiteCtx, hubClient, kubernetes.NewForConfigOrDie(fleet.Hub.Config), []string{name})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed())
	Eventually(clusterAvailable(name)).Should(Equal(metav1.ConditionTrue))
	return a
}

var _ = Describe("A cluster that goes away", Ordered, func() {
	const name = "transient"
	var (
		a *runningAgent
		w *workv1.ManifestWork
	)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "transient-ns", Name: "cm"}}

	BeforeAll(func(ctx SpecContext) {
		a = joinExtra(name)
		w = newWork(name, "transient-work", namespace("transient-ns"), configMap("transient-ns", "cm", map[string]string{"k": "v"}))
		Expect(hubClient.Create(suiteCtx, w)).To(Succeed())
		Eventually(workCondition(w, workv1.WorkAvailable)).Should(cond(metav1.ConditionTrue, "ResourcesAvailable"))
	}, NodeTimeout(5*time.Minute))

	It("has its works marked Unknown while it is unavailable, and reported again when it is back", func(ctx SpecContext) {
		a.stop()
		Eventually(clusterAvailable(name)).Should(Equal(metav1.ConditionUnknown))
		for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			Eventually(workCondition(w, t)).Should(And(cond(metav1.ConditionUnknown, hubwork.ReasonClusterUnavailable),
				HaveField("Message", ContainSubstring("ManagedCluster "+name+" is not available"))))
		}
		// What was applied stays on the cluster while the agent is away.
		Expect(live(cluster2, cm)(Default)).NotTo(BeNil())

		a = startAgentIn(name, fleet.Managed[1], "agent-"+name)
		Eventually(workCondition(w, workv1.WorkAvailable)).Should(cond(metav1.ConditionTrue, "ResourcesAvailable"))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
	}, SpecTimeout(5*time.Minute))

	It("is deleted only after its works are cleaned from the managed cluster", func(ctx SpecContext) {
		Eventually(clusterAvailable(name)).Should(Equal(metav1.ConditionTrue))
		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		// The work goes first (its finalizer waits for the agent's cleanup), then the cluster.
		Eventually(gone(cluster2, cm)).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: name}, &clusterv1.ManagedCluster{}))
		}).Should(BeTrue())
		a.stop()
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("A cluster deleted while its agent is away", Ordered, func() {
	It("releases the cluster's works without the agent and leaves what they applied", func(ctx SpecContext) {
		const name = "abandoned"
		a := joinExtra(name)
		w := newWork(name, "abandoned-work", configMap("default", "abandoned-cm", nil))
		Expect(hubClient.Create(ctx, w)).To(Succeed())
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		a.stop()
		Eventually(clusterAvailable(name)).Should(Equal(metav1.ConditionUnknown))
		Expect(hubClient.Delete(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Name: name}, &clusterv1.ManagedCluster{}))
		}).Should(BeTrue())
		// Nothing cleaned the managed cluster: the resource is still there.
		left := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "abandoned-cm"}}
		Expect(live(cluster2, left)(Default)).NotTo(BeNil())
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("An AppliedManifestWork whose ManifestWork vanished", Ordered, func() {
	It("is evicted, with what it applied, after the grace period", func(ctx SpecContext) {
		const name = "evictee"
		a := joinExtra(name)
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(ctx, namespace("evict")))).To(Succeed())
		w := newWork(name, "vanishing", configMap("evict", "cm", nil))
		Expect(hubClient.Create(ctx, w)).To(Succeed())
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		// While the agent is away the work is removed without its finalizer (as a force delete
		// or a hub restored from an old backup would).
		a.stop()
		cur := getWork(Default, w)
		Expect(hubClient.Delete(ctx, cur)).To(Succeed())
		cur = getWork(Default, w)
		cur.Finalizers = nil
		Expect(hubClient.Update(ctx, cur)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())

		a = startAgentIn(name, fleet.Managed[1], "agent-"+name)
		DeferCleanup(func(ctx SpecContext) { a.stop() }, NodeTimeout(2*time.Minute))
		amw := &workv1.AppliedManifestWork{}
		var started *metav1.Time
		Eventually(func(g Gomega) *metav1.Time {
			g.Expect(managed[cluster2].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, amw)).To(Succeed())
			started = amw.Status.EvictionStartTime
			return started
		}).ShouldNot(BeNil())
		Expect(live(cluster2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "evict", Name: "cm"}})(Default)).NotTo(BeNil(),
			"the resource must stay during the grace period")
		Eventually(func() bool {
			return apierrors.IsNotFound(managed[cluster2].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, &workv1.AppliedManifestWork{}))
		}).Should(BeTrue())
		Expect(gone(cluster2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "evict", Name: "cm"}})()).To(BeTrue())
	}, SpecTimeout(5*time.Minute))
})
