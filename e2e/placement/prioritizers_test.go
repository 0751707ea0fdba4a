package placement

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// resources is an allocatable cpu and memory.
func resources(cpu, memory string) clusterv1.ResourceList {
	return clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse(cpu), clusterv1.ResourceMemory: resource.MustParse(memory)}
}

// Prioritizers: concepts "Placement: Prioritizers" and "Extensible scheduling", scenarios §3.
var _ = Describe("Placement prioritizers", func() {
	It("selects the top clusters by an AddOnPlacementScore, ignoring scores past validUntil (scenarios §3)", func(ctx SpecContext) {
		const ns = "prio-addon"
		namespace(ctx, ns)
		bind(ctx, ns, "addon")
		clusters(ctx,
			sim{Name: "addon-1", Labels: inSet("addon")},
			sim{Name: "addon-2", Labels: inSet("addon")},
			sim{Name: "addon-3", Labels: inSet("addon")},
			sim{Name: "addon-4", Labels: inSet("addon")},
			sim{Name: "addon-5", Labels: inSet("addon")},
			sim{Name: "addon-6", Labels: inSet("addon")},
			sim{Name: "addon-7", Labels: inSet("addon")}, // publishes no score
		)
		expired := time.Date(2021, 10, 29, 18, 31, 39, 0, time.UTC) // the seeds' validUntil: "2021-10-29T18:31:39Z"
		score(ctx, "addon-1", "default", nil, map[string]int32{"cpuAvailable": 66, "memAvailable": 55})
		score(ctx, "addon-2", "default", nil, map[string]int32{"cpuAvailable": 12, "memAvailable": 4})
		score(ctx, "addon-3", "default", nil, map[string]int32{"cpuAvailable": 90, "memAvailable": 10})
		score(ctx, "addon-4", "default", nil, map[string]int32{"cpuAvailable": 30, "memAvailable": 10})
		score(ctx, "addon-5", "default", nil, map[string]int32{"cpuAvailable": 80, "memAvailable": 10})
		score(ctx, "addon-6", "default", &expired, map[string]int32{"cpuAvailable": 100, "memAvailable": 100})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement
  namespace: prio-addon
spec:
  numberOfClusters: 3
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuAvailable
        weight: 1
`)
		Eventually(func() []string { return scored(ctx, ns, "placement") }).Should(Equal([]string{"addon-1:66", "addon-3:90", "addon-5:80"}))
		Eventually(func() string { return satisfied(ctx, ns, "placement") }).Should(Equal("True AllDecisionsScheduled"))

		By("the score provider renews addon-6's scores")
		future := time.Now().Add(time.Hour)
		setScore(ctx, "addon-6", "default", &future, map[string]int32{"cpuAvailable": 100, "memAvailable": 100})
		Eventually(func() []string { return scored(ctx, ns, "placement") }).Should(Equal([]string{"addon-3:90", "addon-5:80", "addon-6:100"}))

		By("addon-3's score drops")
		setScore(ctx, "addon-3", "default", nil, map[string]int32{"cpuAvailable": -40, "memAvailable": 10})
		Eventually(func() []string { return decided(ctx, ns, "placement") }).Should(Equal([]string{"addon-1", "addon-5", "addon-6"}))
	}, SpecTimeout(5*time.Minute))

	It("sums weight × score in Exact mode and orders the decisions by score with sortBy Score", func(ctx SpecContext) {
		const ns = "prio-weights"
		namespace(ctx, ns)
		bind(ctx, ns, "weights")
		clusters(ctx,
			sim{Name: "weights-1", Labels: inSet("weights")},
			sim{Name: "weights-2", Labels: inSet("weights")},
			sim{Name: "weights-3", Labels: inSet("weights")},
			sim{Name: "weights-4", Labels: inSet("weights")},
		)
		score(ctx, "weights-1", "default", nil, map[string]int32{"cpuAvailable": 50, "memAvailable": 10})  // 2×50 − 10 = 90
		score(ctx, "weights-2", "default", nil, map[string]int32{"cpuAvailable": 80, "memAvailable": 90})  // 160 − 90 = 70
		score(ctx, "weights-3", "default", nil, map[string]int32{"cpuAvailable": 30, "memAvailable": -50}) // 60 + 50 = 110
		score(ctx, "weights-4", "default", nil, map[string]int32{"cpuAvailable": 10, "memAvailable": 0})   // 20
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: prio-weights
spec:
  numberOfClusters: 3
  sortBy: Score
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuAvailable
        weight: 2
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: memAvailable
        weight: -1
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: by-name
  namespace: prio-weights
spec:
  numberOfClusters: 3
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuAvailable
        weight: 2
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: memAvailable
        weight: -1
`)
		Eventually(func() []string { return scored(ctx, ns, "placement1") }).Should(Equal([]string{"weights-3:110", "weights-1:90", "weights-2:70"}))
		Eventually(func() []string { return scored(ctx, ns, "by-name") }).Should(Equal([]string{"weights-1:90", "weights-2:70", "weights-3:110"}))
	}, SpecTimeout(5*time.Minute))

	It("pins its decisions with Steady in Exact mode (concepts: Steady weight 3 and an addon score)", func(ctx SpecContext) {
		const ns = "prio-pin"
		namespace(ctx, ns)
		bind(ctx, ns, "pin")
		clusters(ctx,
			sim{Name: "pin-1", Labels: inSet("pin")},
			sim{Name: "pin-2", Labels: inSet("pin")},
			sim{Name: "pin-3", Labels: inSet("pin")},
		)
		score(ctx, "pin-1", "default", nil, map[string]int32{"cpuratio": 50})
		score(ctx, "pin-2", "default", nil, map[string]int32{"cpuratio": 80})
		score(ctx, "pin-3", "default", nil, map[string]int32{"cpuratio": 70})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: prio-pin
spec:
  numberOfClusters: 2
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          builtIn: Steady
        weight: 3
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuratio
`, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: unpinned
  namespace: prio-pin
spec:
  numberOfClusters: 2
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuratio
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"pin-2", "pin-3"}))
		Eventually(func() []string { return decided(ctx, ns, "unpinned") }).Should(Equal([]string{"pin-2", "pin-3"}))

		By("pin-1 gets the best cpu ratio: the placement without Steady moves, the pinned one stays")
		setScore(ctx, "pin-1", "default", nil, map[string]int32{"cpuratio": 100})
		Eventually(func() []string { return decided(ctx, ns, "unpinned") }).Should(Equal([]string{"pin-1", "pin-2"}))
		Consistently(func() []string { return decided(ctx, ns, "placement1") }, "1s").Should(Equal([]string{"pin-2", "pin-3"}))
	}, SpecTimeout(5*time.Minute))

	It("selects the cluster with the largest allocatable memory (concepts: BuiltIn ResourceAllocatableMemory, Additive)", func(ctx SpecContext) {
		const ns = "prio-memory"
		namespace(ctx, ns)
		bind(ctx, ns, "memory")
		clusters(ctx,
			sim{Name: "memory-1", Labels: inSet("memory"), Allocatable: resources("16", "8Gi")},
			sim{Name: "memory-2", Labels: inSet("memory"), Allocatable: resources("4", "32Gi")},
			sim{Name: "memory-3", Labels: inSet("memory"), Allocatable: resources("8", "16Gi")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: prio-memory
spec:
  numberOfClusters: 1
  prioritizerPolicy:
    configurations:
      - scoreCoordinate:
          builtIn: ResourceAllocatableMemory
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"memory-2"}))
		// Balance 100 + ResourceAllocatableMemory 100, + Steady 100 once it is selected.
		Expect(scored(ctx, ns, "placement1")).To(ConsistOf(BeElementOf("memory-2:200", "memory-2:300")))
		Eventually(func() string { return satisfied(ctx, ns, "placement1") }).Should(Equal("True AllDecisionsScheduled"))
	}, SpecTimeout(5*time.Minute))

	It("selects by allocatable CPU and memory with weight 2 and follows resource changes (concepts: BuiltIn ResourceAllocatableCPU/Memory)", func(ctx SpecContext) {
		const ns = "prio-cpumem"
		namespace(ctx, ns)
		bind(ctx, ns, "cpumem")
		clusters(ctx,
			sim{Name: "cpumem-1", Labels: inSet("cpumem"), Allocatable: resources("4", "8Gi")},
			sim{Name: "cpumem-2", Labels: inSet("cpumem"), Allocatable: resources("16", "8Gi")},
			sim{Name: "cpumem-3", Labels: inSet("cpumem"), Allocatable: resources("8", "32Gi")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: prio-cpumem
spec:
  numberOfClusters: 1
  prioritizerPolicy:
    configurations:
      - scoreCoordinate:
          builtIn: ResourceAllocatableCPU
        weight: 2
      - scoreCoordinate:
          builtIn: ResourceAllocatableMemory
        weight: 2
`)
		// cpumem-3: Balance 100 + 2×CPU −33 + 2×memory 100 = 234; cpumem-2: 100 + 200 − 200 = 100.
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"cpumem-3"}))

		By("cpumem-2 gets more memory")
		setAllocatable(ctx, "cpumem-2", resources("16", "64Gi"))
		// cpumem-2: 100 + 200 + 200 = 500; cpumem-3: Steady 100 + 100 − 66 − 28 = 106.
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"cpumem-2"}))
	}, SpecTimeout(5*time.Minute))

	It("balances placements over clusters and keeps its decisions steady (default Additive: Steady and Balance)", func(ctx SpecContext) {
		const ns = "prio-default"
		namespace(ctx, ns)
		bind(ctx, ns, "balance")
		clusters(ctx,
			sim{Name: "balance-1", Labels: inSet("balance")},
			sim{Name: "balance-2", Labels: inSet("balance")},
		)
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: first, namespace: prio-default}
spec:
  numberOfClusters: 1
`)
		Eventually(func() []string { return decided(ctx, ns, "first") }).Should(Equal([]string{"balance-1"}))
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: second, namespace: prio-default}
spec:
  numberOfClusters: 1
`)
		// Balance: balance-1 is chosen by one other placement (the most any cluster is): −100.
		Eventually(func() []string { return decided(ctx, ns, "second") }).Should(Equal([]string{"balance-2"}))

		By("a new cluster joins that sorts first")
		clusters(ctx, sim{Name: "balance-0", Labels: inSet("balance")})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: third, namespace: prio-default}
spec:
  numberOfClusters: 1
`)
		Eventually(func() []string { return decided(ctx, ns, "third") }).Should(Equal([]string{"balance-0"}))
		Consistently(func() []string { return append(decided(ctx, ns, "first"), decided(ctx, ns, "second")...) }, "1s").
			Should(Equal([]string{"balance-1", "balance-2"}))
	}, SpecTimeout(5*time.Minute))

	It("writes a change of scores alone no sooner than spec.scoreRateLimit, a change of clusters at once", func(ctx SpecContext) {
		const ns = "prio-ratelimit"
		namespace(ctx, ns)
		bind(ctx, ns, "ratelimit")
		clusters(ctx,
			sim{Name: "ratelimit-1", Labels: inSet("ratelimit")},
			sim{Name: "ratelimit-2", Labels: inSet("ratelimit")},
			sim{Name: "ratelimit-3", Labels: inSet("ratelimit")},
		)
		score(ctx, "ratelimit-1", "default", nil, map[string]int32{"cpuAvailable": 90})
		score(ctx, "ratelimit-2", "default", nil, map[string]int32{"cpuAvailable": 80})
		score(ctx, "ratelimit-3", "default", nil, map[string]int32{"cpuAvailable": 10})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: prio-ratelimit
spec:
  numberOfClusters: 2
  scoreRateLimit: 5s
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuAvailable
`)
		Eventually(func() []string { return scored(ctx, ns, "placement1") }).Should(Equal([]string{"ratelimit-1:90", "ratelimit-2:80"}))
		var last time.Time
		Eventually(func(g Gomega) {
			t := placementOf(ctx, ns, "placement1").Status.LastScoreUpdateTime
			g.Expect(t).NotTo(BeNil())
			last = t.Time
		}).Should(Succeed())

		By("a score changes, the clusters do not")
		writes := decisionWrites(ctx, ns, "placement1")
		setScore(ctx, "ratelimit-2", "default", nil, map[string]int32{"cpuAvailable": 70})
		Eventually(func() []string { return scored(ctx, ns, "placement1") }, "10s").Should(Equal([]string{"ratelimit-1:90", "ratelimit-2:70"}))
		// Not sooner: the time the API server recorded for the write of the new score (whole
		// seconds, as lastScoreUpdateTime).
		Expect(writes("ratelimit-2 scores 70", func(ds []clusterv1beta1.ClusterDecision) bool {
			return slices.ContainsFunc(ds, func(d clusterv1beta1.ClusterDecision) bool { return d.ClusterName == "ratelimit-2" && d.Score == 70 })
		})).To(BeTemporally(">=", last.Add(5*time.Second)), "the new score written no sooner than scoreRateLimit after the last")
		// The placement's status is written after its decisions.
		Eventually(func() time.Time { return placementOf(ctx, ns, "placement1").Status.LastScoreUpdateTime.Time }).
			Should(BeTemporally(">=", last.Add(5*time.Second)))

		By("a score change that changes the clusters, within the limit")
		setScore(ctx, "ratelimit-3", "default", nil, map[string]int32{"cpuAvailable": 100})
		Eventually(func() []string { return scored(ctx, ns, "placement1") }, "3s").Should(Equal([]string{"ratelimit-1:90", "ratelimit-3:100"}))
	}, SpecTimeout(5*time.Minute))

	It("does not write a score-only change before the default scoreRateLimit (1m) while the fleet changes", func(ctx SpecContext) {
		// Ten placements, each numberOfClusters 1 over two clusters of its own, created before
		// their clusters: the first decision is written with Steady 0 + Balance 100 = 100; once
		// written, Steady makes it 200, a change of scores alone, not to be written for a minute.
		// status.lastScoreUpdateTime, which the limit counts from, never goes back meanwhile.
		wc, err := client.NewWithWatch(controlPlane.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(ctx, &clusterv1beta1.PlacementList{})
		Expect(err).NotTo(HaveOccurred())
		var mu sync.Mutex
		var regressions []string
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			last := map[string]time.Time{}
			for e := range w.ResultChan() {
				p, ok := e.Object.(*clusterv1beta1.Placement)
				if !ok || !strings.HasPrefix(p.Namespace, "ratelimit-default-") || p.Status.LastScoreUpdateTime == nil {
					continue
				}
				if t := p.Status.LastScoreUpdateTime.Time; t.Before(last[p.Namespace]) {
					mu.Lock()
					regressions = append(regressions, fmt.Sprintf("%s/%s: %s after %s (resourceVersion %s)", p.Namespace, p.Name,
						t.Format(time.RFC3339), last[p.Namespace].Format(time.RFC3339), p.ResourceVersion))
					mu.Unlock()
				} else {
					last[p.Namespace] = t
				}
			}
		}()
		DeferCleanup(func(ctx SpecContext) { w.Stop(); <-watched }, NodeTimeout(2*time.Minute))
		var sims []sim
		for i := range 10 {
			ns := fmt.Sprintf("ratelimit-default-%d", i)
			namespace(ctx, ns)
			bind(ctx, ns, ns)
			apply(ctx, fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: placement1, namespace: %s}
spec:
  numberOfClusters: 1
`, ns))
			sims = append(sims, sim{Name: ns + "-a", Labels: inSet(ns)}, sim{Name: ns + "-b", Labels: inSet(ns)})
		}
		clusters(ctx, sims...)
		Eventually(func(g Gomega) {
			for i := range 10 {
				g.Expect(decided(ctx, fmt.Sprintf("ratelimit-default-%d", i), "placement1")).To(HaveLen(1))
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			for i := range 10 {
				g.Expect(scored(ctx, fmt.Sprintf("ratelimit-default-%d", i), "placement1")).To(ConsistOf(HaveSuffix(":100")))
			}
		}, "2s").Should(Succeed())
		mu.Lock()
		defer mu.Unlock()
		Expect(regressions).To(BeEmpty(), "status.lastScoreUpdateTime went back: the status was written from a stale copy")
	}, SpecTimeout(5*time.Minute))
})
