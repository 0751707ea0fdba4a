package work

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

var _ = Describe("Work agent resilience", Ordered, func() {
	It("keeps what it applied while the hub's API server is stopped for 30 s, still repairs drift from what it knows, and catches up after", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("cutoff")))).To(Succeed())
		w := createWork(newWork(cluster1, "cutoff-work", configMap("cutoff", "before", map[string]string{"k": "1"})))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))

		Expect(fleet.Hub.StopAPIServer()).To(Succeed())
		stoppedAt := time.Now()
		restarted := false
		DeferCleanup(func(ctx SpecContext) {
			if !restarted {
				Expect(fleet.Hub.StartAPIServer(ctx)).To(Succeed())
			}
		}, NodeTimeout(2*time.Minute))
		before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cutoff", Name: "before"}}
		// Another writer changes the applied object while the hub is down: the agent puts it
		// back from the ManifestWork it has cached.
		cm := live(cluster1, before)(Default)
		cm.Data["k"] = "tampered"
		Expect(managed[cluster1].client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) map[string]string { return live(cluster1, before)(g).Data }, 25*time.Second).Should(HaveKeyWithValue("k", "1"))
		// Nothing it applied goes away while the hub stays down.
		Consistently(func(g Gomega) *corev1.ConfigMap { return live(cluster1, before)(g) }).WithContext(ctx).
			WithTimeout(max(time.Until(stoppedAt.Add(30*time.Second)), time.Second)).WithPolling(time.Second).
			ShouldNot(BeNil(), "an applied resource went away while the hub was down")
		Expect(fleet.Hub.StartAPIServer(ctx)).To(Succeed())
		restarted = true

		// A new generation made once the hub is back is applied.
		Eventually(func(g Gomega) {
			cur := getWork(g, w)
			cur.Spec.Workload.Manifests = manifests(configMap("cutoff", "before", map[string]string{"k": "2"}), configMap("cutoff", "after", nil))
			g.Expect(hubClient.Update(ctx, cur)).To(Succeed())
		}, time.Minute).Should(Succeed())
		Eventually(func(g Gomega) map[string]string { return live(cluster1, before)(g).Data }, 2*time.Minute).Should(HaveKeyWithValue("k", "2"))
		Eventually(workCondition(w, workv1.WorkApplied), 2*time.Minute).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(live(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cutoff", Name: "after"}})(Default)).NotTo(BeNil())
	}, SpecTimeout(10*time.Minute))

	It("loses and duplicates nothing when the agent is killed in the middle of applying a work", func(ctx SpecContext) {
		const name = "restarted"
		a := joinExtra(name)
		const n = 60
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(ctx, namespace("restart")))).To(Succeed())
		var objs []any
		for i := range n {
			objs = append(objs, configMap("restart", fmt.Sprintf("cm-%02d", i), map[string]string{"i": fmt.Sprint(i)}))
		}
		w := createWork(newWork(name, "restart-work", objs...))
		// Kill the agent once it has applied some of the manifests.
		ours := func(g Gomega) []corev1.ConfigMap {
			list := &corev1.ConfigMapList{}
			g.Expect(managed[cluster2].client.List(ctx, list, client.InNamespace("restart"))).To(Succeed())
			var out []corev1.ConfigMap
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					out = append(out, cm)
				}
			}
			return out
		}
		Eventually(ours, time.Minute, 5*time.Millisecond).ShouldNot(BeEmpty())
		a.stop()
		GinkgoWriter.Printf("agent stopped with %d of %d ConfigMaps applied\n", len(ours(Default)), n)

		a = startAgentIn(name, fleet.Managed[1], "agent-"+name)
		DeferCleanup(func(ctx SpecContext) { a.stop() }, NodeTimeout(2*time.Minute))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		amw := &workv1.AppliedManifestWork{}
		Eventually(func(g Gomega) []workv1.AppliedManifestResourceMeta {
			g.Expect(managed[cluster2].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, amw)).To(Succeed())
			return amw.Status.AppliedResources
		}).Should(HaveLen(n))
		uids := map[string]bool{}
		for _, r := range amw.Status.AppliedResources {
			Expect(uids[r.UID]).To(BeFalse(), "resource %s listed twice", r.Name)
			uids[r.UID] = true
		}
		applied := ours(Default)
		Expect(applied).To(HaveLen(n))
		for _, cm := range applied {
			Expect(uids[string(cm.UID)]).To(BeTrue(), "ConfigMap %s is not recorded with its UID", cm.Name)
			Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", amw.UID)), "ConfigMap %s", cm.Name)
		}
		// Nothing is left behind when the work goes.
		Expect(hubClient.Delete(ctx, w)).To(Succeed())
		Eventually(ours).Should(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(managed[cluster2].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, amw))
		}).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())
	}, SpecTimeout(10*time.Minute))
})
