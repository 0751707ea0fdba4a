package work

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/sarcache"
	"github.com/flotilla-dev/flotilla/e2e/internal/metricstest"
)

// executorCache is the value of the work agents' executor cache counter name (a
// core/sarcache metric): only cluster2's agent has the cache.
func executorCache(name string) float64 {
	GinkgoHelper()
	v, err := metricstest.Counter(name, map[string]string{"cache": "executor"})
	Expect(err).NotTo(HaveOccurred())
	return v
}

// grant gives the ServiceAccount ns/sa the verbs on resources in namespace target of cluster.
func grant(cluster, ns, sa, target, name string, rules ...rbacv1.PolicyRule) {
	GinkgoHelper()
	c := managed[cluster].client
	Expect(c.Create(suiteCtx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: name}, Rules: rules})).To(Succeed())
	Expect(c.Create(suiteCtx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}})).To(Succeed())
}

func withExecutor(w *workv1.ManifestWork, ns, sa string) *workv1.ManifestWork {
	w.Spec.Executor = &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type: workv1.ExecutorSubjectTypeServiceAccount, ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: ns, Name: sa}}}
	return w
}

var _ = Describe("ManifestWork executors", func() {
	for _, cluster := range []string{cluster1, cluster2} {
		caching := map[string]string{cluster1: "asking every time", cluster2: "with ExecutorValidatingCaches"}[cluster]
		It("applies a manifest only once its executor may, naming who lacked what, "+caching, func(ctx SpecContext) {
			ns := "exec-" + cluster
			c := managed[cluster].client
			Expect(c.Create(ctx, namespace(ns))).To(Succeed())
			Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "executor1-" + cluster}})).To(Succeed())
			sa := "executor1-" + cluster
			// Everything applying needs but delete, which a work that owns its resources needs too.
			grant(cluster, "default", sa, ns, "partial", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
				Verbs: []string{"get", "create", "update", "patch"}})
			w := createWork(withExecutor(newWork(cluster, "example-manifestwork-"+cluster, configMap(ns, "test", map[string]string{"a": "b"})), "default", sa))
			Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestFailed"),
				HaveField("Message", And(ContainSubstring("system:serviceaccount:default:"+sa), ContainSubstring("may not delete"),
					ContainSubstring("configmaps "+ns+"/test"),
					ContainSubstring("will try again when RBAC on the managed cluster changes or at the next status sync (about every 2s)")))))
			Expect(gone(cluster, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test"}})()).To(BeTrue())

			// Granting delete (an RBAC change the agent watches) lets the work apply.
			grant(cluster, "default", sa, ns, "delete", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"delete"}})
			Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
			Expect(live(cluster, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "test"}})(Default)).NotTo(BeNil())
		}, SpecTimeout(5*time.Minute))
	}

	It("with ExecutorValidatingCaches, answers a second work with the same executor and manifests from the cache, and asks again after an RBAC change", func(ctx SpecContext) {
		const ns, sa = "exec-cached", "cached-executor"
		c := managed[cluster2].client
		Expect(c.Create(ctx, namespace(ns))).To(Succeed())
		Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}})).To(Succeed())
		invalidated := executorCache(sarcache.InvalidationsMetric)
		grant(cluster2, "default", sa, ns, "configmaps", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "create", "update", "patch", "delete"}})
		// The grant's invalidation is over before the answers counted below are cached.
		Eventually(func() float64 { return executorCache(sarcache.InvalidationsMetric) }).Should(BeNumerically(">", invalidated),
			"the agent's cache dropped after the grant")
		first := createWork(withExecutor(newWork(cluster2, "cached-first", configMap(ns, "shared", map[string]string{"a": "b"})), "default", sa))
		Eventually(workCondition(first, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		// The Role and the RoleBinding may have been two changes: the second one's requeue is over.
		settled := executorCache(sarcache.InvalidationsMetric)
		Consistently(func() float64 { return executorCache(sarcache.InvalidationsMetric) }).WithTimeout(2*time.Second).Should(Equal(settled),
			"the agent's cache dropped again after the grant")

		hits, misses, invalidated := executorCache(sarcache.HitsMetric), executorCache(sarcache.MissesMetric), executorCache(sarcache.InvalidationsMetric)
		second := createWork(withExecutor(newWork(cluster2, "cached-second", configMap(ns, "shared", map[string]string{"a": "b"})), "default", sa))
		Eventually(workCondition(second, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(executorCache(sarcache.InvalidationsMetric)).To(Equal(invalidated), "RBAC on %s changed during the spec", cluster2)
		Expect(executorCache(sarcache.MissesMetric)).To(Equal(misses), "the second work's executor checks made SubjectAccessReviews")
		// get, create, update, patch and delete of the ConfigMap, at least once.
		Expect(executorCache(sarcache.HitsMetric)).To(BeNumerically(">=", hits+5), "cache hits for the second work")

		By("an RBAC change drops the answers: the works with an executor are checked again")
		grant(cluster2, "default", sa, ns, "secrets", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		Eventually(func() float64 { return executorCache(sarcache.MissesMetric) }).Should(BeNumerically(">", misses),
			"SubjectAccessReviews after the RBAC change")
	}, SpecTimeout(5*time.Minute))

	It("refuses a Role granting more than its executor holds (escalation), and applies it once the executor holds it", func(ctx SpecContext) {
		const ns, sa = "exec-rbac", "rbac-executor"
		c := managed[cluster1].client
		Expect(c.Create(ctx, namespace(ns))).To(Succeed())
		Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: sa}})).To(Succeed())
		grant(cluster1, "default", sa, ns, "manage-roles", rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"},
			Resources: []string{"roles"}, Verbs: []string{"get", "create", "update", "patch", "delete"}})
		role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
		w := createWork(withExecutor(newWork(cluster1, "escalating-role", role), "default", sa))
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestFailed"),
			HaveField("Message", And(ContainSubstring("permission escalation"), ContainSubstring("secrets")))))
		Expect(gone(cluster1, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secret-reader"}})()).To(BeTrue())

		grant(cluster1, "default", sa, ns, "read-secrets", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(c.Get(ctx, client.ObjectKeyFromObject(role), &rbacv1.Role{})).To(Succeed())
	}, SpecTimeout(5*time.Minute))
})
