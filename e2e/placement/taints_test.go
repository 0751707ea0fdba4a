package placement

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// Taints and tolerations: concepts "Cluster taints and tolerations" and "Placement:
// Taints/Tolerations", scenarios §7 (migrate workload with placement).
var _ = Describe("Placement taints and tolerations", func() {
	seedsTime := metav1.NewTime(time.Date(2022, 2, 21, 8, 11, 6, 0, time.UTC)) // '2022-02-21T08:11:06Z'

	It("does not select a NoSelect cluster unless a toleration matches key and value (the seeds' gpu example)", func(ctx SpecContext) {
		const ns = "taint-gpu"
		namespace(ctx, ns)
		bind(ctx, ns, "gpu")
		clusters(ctx,
			sim{Name: "gpu-cluster1", Labels: inSet("gpu"), Taints: []clusterv1.Taint{{Effect: clusterv1.TaintEffectNoSelect, Key: "gpu", Value: "true", TimeAdded: seedsTime}}},
			sim{Name: "gpu-cluster2", Labels: inSet("gpu")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement0
  namespace: taint-gpu
spec: {}
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: taint-gpu
spec:
  tolerations:
    - key: gpu
      value: "true"
      operator: Equal
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement2
  namespace: taint-gpu
spec:
  tolerations:
    - key: gpu
      value: "false"
      operator: Equal
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement3
  namespace: taint-gpu
spec:
  tolerations:
    - key: gpu
      operator: Exists
      effect: NoSelect
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"gpu-cluster1", "gpu-cluster2"}))
		Eventually(func() []string { return decided(ctx, ns, "placement3") }).Should(Equal([]string{"gpu-cluster1", "gpu-cluster2"}))
		Eventually(func() []string { return decided(ctx, ns, "placement0") }).Should(Equal([]string{"gpu-cluster2"}))
		Eventually(func() []string { return decided(ctx, ns, "placement2") }).Should(Equal([]string{"gpu-cluster2"}))
		Consistently(func() []string { return decided(ctx, ns, "placement0") }, "1s").Should(Equal([]string{"gpu-cluster2"}))
	}, SpecTimeout(5*time.Minute))

	It("selects a tolerated cluster until tolerationSeconds after the taint's timeAdded, then drops it", func(ctx SpecContext) {
		const ns = "taint-seconds"
		namespace(ctx, ns)
		bind(ctx, ns, "seconds")
		clusters(ctx,
			sim{Name: "seconds-1", Labels: inSet("seconds")},
			sim{Name: "seconds-2", Labels: inSet("seconds")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: taint-seconds
spec:
  tolerations:
    - key: maintenance
      operator: Exists
      tolerationSeconds: 5
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: intolerant
  namespace: taint-seconds
spec: {}
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"seconds-1", "seconds-2"}))
		Eventually(func() []string { return decided(ctx, ns, "intolerant") }).Should(Equal([]string{"seconds-1", "seconds-2"}))

		writes := decisionWrites(ctx, ns, "placement1")
		added := metav1.NewTime(time.Now().Truncate(time.Second)) // as it reads back
		setTaints(ctx, "seconds-1", clusterv1.Taint{Effect: clusterv1.TaintEffectNoSelect, Key: "maintenance", TimeAdded: added})
		// Once the placement without toleration dropped it, the hub has seen the taint.
		Eventually(func() []string { return decided(ctx, ns, "intolerant") }).Should(Equal([]string{"seconds-2"}))
		Eventually(func() []string { return decided(ctx, ns, "placement1") }, "20s").Should(Equal([]string{"seconds-2"}))
		// Not before: the time the API server recorded for the write that dropped it (whole
		// seconds, as timeAdded).
		Expect(writes("seconds-1 is dropped", without("seconds-1"))).To(BeTemporally(">=", added.Add(5*time.Second)),
			"dropped only once the toleration ran out")
	}, SpecTimeout(5*time.Minute))

	It("keeps a NoSelectIfNew cluster it has selected but does not newly select it", func(ctx SpecContext) {
		const ns = "taint-ifnew"
		namespace(ctx, ns)
		bind(ctx, ns, "ifnew")
		clusters(ctx,
			sim{Name: "ifnew-a", Labels: inSet("ifnew"), Taints: []clusterv1.Taint{{Effect: clusterv1.TaintEffectNoSelectIfNew, Key: "draining", TimeAdded: seedsTime}}},
			sim{Name: "ifnew-b", Labels: inSet("ifnew")},
		)
		// "before" selects ifnew-a while it tolerates the taint, and keeps it once it does not.
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: before, namespace: taint-ifnew}
spec:
  tolerations:
    - key: draining
      operator: Exists
      effect: NoSelectIfNew
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: after, namespace: taint-ifnew}
spec: {}
`)
		Eventually(func() []string { return decided(ctx, ns, "before") }).Should(Equal([]string{"ifnew-a", "ifnew-b"}))
		Eventually(func() []string { return decided(ctx, ns, "after") }).Should(Equal([]string{"ifnew-b"}))

		patchPlacement(ctx, ns, "before", `{"spec": {"tolerations": null}}`)
		settled(ctx, ns, "before")
		Consistently(func() []string { return decided(ctx, ns, "before") }, "1s").Should(Equal([]string{"ifnew-a", "ifnew-b"}))
		Expect(decided(ctx, ns, "after")).To(Equal([]string{"ifnew-b"}))
	}, SpecTimeout(5*time.Minute))

	It("chooses a PreferNoSelect cluster only when the others are not enough", func(ctx SpecContext) {
		const ns = "taint-prefer"
		namespace(ctx, ns)
		bind(ctx, ns, "prefer")
		clusters(ctx,
			sim{Name: "prefer-a", Labels: inSet("prefer"), Taints: []clusterv1.Taint{{Effect: clusterv1.TaintEffectPreferNoSelect, Key: "expensive", TimeAdded: seedsTime}}},
			sim{Name: "prefer-b", Labels: inSet("prefer")},
			sim{Name: "prefer-c", Labels: inSet("prefer")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: two, namespace: taint-prefer}
spec:
  numberOfClusters: 2
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: tolerating, namespace: taint-prefer}
spec:
  numberOfClusters: 1
  prioritizerPolicy: {mode: Exact}
  tolerations:
    - key: expensive
      operator: Exists
`)
		Eventually(func() []string { return decided(ctx, ns, "two") }).Should(Equal([]string{"prefer-b", "prefer-c"}))
		Eventually(func() []string { return decided(ctx, ns, "tolerating") }).Should(Equal([]string{"prefer-a"}))

		By("asking for three")
		patchPlacement(ctx, ns, "two", `{"spec": {"numberOfClusters": 3}}`)
		Eventually(func() []string { return decided(ctx, ns, "two") }).Should(Equal([]string{"prefer-a", "prefer-b", "prefer-c"}))
		Eventually(func() string { return satisfied(ctx, ns, "two") }).Should(Equal("True AllDecisionsScheduled"))
	}, SpecTimeout(5*time.Minute))

	It("migrates when the selected cluster becomes unreachable or unavailable, or is tainted for maintenance (scenarios §7)", func(ctx SpecContext) {
		const ns = "migrate"
		namespace(ctx, ns)
		bind(ctx, ns, "migrate-a", "migrate-b")
		clusters(ctx,
			sim{Name: "migrate-cluster1", Labels: inSet("migrate-a")},
			sim{Name: "migrate-cluster2", Labels: inSet("migrate-a")},
			sim{Name: "migrate-cluster3", Labels: inSet("migrate-b")},
			sim{Name: "migrate-cluster4", Labels: inSet("migrate-b")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: guestbook-app-placement
  namespace: migrate
spec:
  numberOfClusters: 1
  clusterSets: [migrate-a]
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: guestbook-app-placement-tolerating
  namespace: migrate
spec:
  numberOfClusters: 1
  clusterSets: [migrate-b]
  tolerations:
    - key: cluster.open-cluster-management.io/unreachable
      operator: Exists
      tolerationSeconds: 5
`)
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement") }).Should(Equal([]string{"migrate-cluster1"}))
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement-tolerating") }).Should(Equal([]string{"migrate-cluster3"}))
		Expect(taintKeys(ctx, "migrate-cluster1")).To(BeEmpty())

		By("cluster1 and cluster3 stop reporting: Available Unknown")
		writes := decisionWrites(ctx, ns, "guestbook-app-placement-tolerating")
		setAvailable(ctx, "migrate-cluster1", metav1.ConditionUnknown)
		setAvailable(ctx, "migrate-cluster3", metav1.ConditionUnknown)
		Eventually(func() []string { return taintKeys(ctx, "migrate-cluster1") }).Should(Equal([]string{"cluster.open-cluster-management.io/unreachable"}))
		Eventually(func() []string { return taintKeys(ctx, "migrate-cluster3") }).Should(Equal([]string{"cluster.open-cluster-management.io/unreachable"}))
		t := managedCluster(ctx, "migrate-cluster3").Spec.Taints[0]
		Expect(t.Effect).To(Equal(clusterv1.TaintEffectNoSelect))
		Expect(t.Value).To(BeEmpty())
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement") }).Should(Equal([]string{"migrate-cluster2"}))

		By("the placement tolerating unreachable for 5s moves only once they ran out")
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement-tolerating") }, "20s").Should(Equal([]string{"migrate-cluster4"}))
		Expect(writes("migrate-cluster3 is dropped", without("migrate-cluster3"))).To(BeTemporally(">=", t.TimeAdded.Add(5*time.Second)),
			"moved only once the toleration of the taint the hub added ran out")

		By("cluster1 is back: the taint goes, the decision stays where it is")
		setAvailable(ctx, "migrate-cluster1", metav1.ConditionTrue)
		Eventually(func() []string { return taintKeys(ctx, "migrate-cluster1") }).Should(BeEmpty())
		Consistently(func() []string { return decided(ctx, ns, "guestbook-app-placement") }, "1s").Should(Equal([]string{"migrate-cluster2"}))

		By(`kubectl patch managedcluster cluster2 -p '{"spec":{"taints":[{"effect":"NoSelect","key":"maintenance"}]}}' --type=merge`)
		patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "migrate-cluster2"}}, `{"spec":{"taints":[{"effect":"NoSelect","key":"maintenance"}]}}`)
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement") }).Should(Equal([]string{"migrate-cluster1"}))

		By("maintenance over; cluster1 reports Available False")
		setTaints(ctx, "migrate-cluster2")
		setAvailable(ctx, "migrate-cluster1", metav1.ConditionFalse)
		Eventually(func() []string { return taintKeys(ctx, "migrate-cluster1") }).Should(Equal([]string{"cluster.open-cluster-management.io/unavailable"}))
		Eventually(func() []string { return decided(ctx, ns, "guestbook-app-placement") }).Should(Equal([]string{"migrate-cluster2"}))
		Eventually(func() string { return satisfied(ctx, ns, "guestbook-app-placement") }).Should(Equal("True AllDecisionsScheduled"))
	}, SpecTimeout(5*time.Minute))
})
