package mwrs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// Issue 27 (OCM's bug open-cluster-management-io/ocm#1346): a placement's clusters move
// between PlacementDecision pages (100 each) as clusters come and go; a cluster that only
// moved must never look gone to the consumers, which would delete its add-on and its work.
var _ = Describe("Decisions moving between pages", func() {
	DescribeTable("never delete the add-on or work of a cluster that stays selected",
		func(ctx SpecContext, suffix, strategy string) {
			ns, set, addon := "pages-"+suffix, "pages-"+suffix, "pages-addon-"+suffix
			// 150 clusters on two pages; then 50 whose names sort first push 50 of page 1
			// onto page 2 and page 2's last onto a third.
			stay := pageNames("pg"+suffix+"-m", 150)
			front := pageNames("pg"+suffix+"-a", 50)
			namespace(ctx, ns)
			bind(ctx, ns, set)
			clusters(ctx, set, sims(stay, "fleet", "in")...)
			placement(ctx, ns, "all", set, []string{"fleet", "in"}, strategy)
			replicaSet(ctx, ns, "pages", "v1", []string{"{name: all, rolloutStrategy: {type: All}}"}, "")
			apply(ctx, fmt.Sprintf(`
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: %s
  annotations: {addon.open-cluster-management.io/lifecycle: addon-manager}
spec:
  installStrategy:
    type: Placements
    placements: [{name: all, namespace: %s}]
`, addon, ns))
			waitFor := func(what string, want []string) {
				GinkgoHelper()
				Eventually(func() []string { return workClusters(ctx, ns, "pages") }).WithTimeout(90*time.Second).
					Should(Equal(want), "the replica set's works %s", what)
				Eventually(func() []string { return addonClusters(ctx, addon) }).WithTimeout(90*time.Second).
					Should(Equal(want), "the ManagedClusterAddOns %s", what)
			}
			waitFor("on the first 150 clusters", sorted(stay))

			deleted := watchDeletes(ctx, ns, addon)
			By("50 clusters whose names sort first join")
			clusters(ctx, set, sims(front, "fleet", "in")...)
			waitFor("after 50 clusters joined in front", sorted(stay, front))

			By("30 of them and 20 at the end leave the placement; 40 in the middle move back a page")
			leave := append(append([]string{}, front[:30]...), stay[130:]...)
			Expect(forEach(len(leave), func(i int) error {
				c := &clusterv1.ManagedCluster{}
				c.Name = leave[i]
				return hubClient.Patch(ctx, c, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"fleet":"out"}}}`)))
			})).To(Succeed())
			waitFor("after 50 clusters left", sorted(front[30:], stay[:130]))

			// The objects of every cluster that left are deleted; none of a cluster that stayed.
			Eventually(func() deletes { return deleted().distinct() }).WithTimeout(30*time.Second).
				Should(Equal(deletes{works: sorted(leave), addons: sorted(leave)}),
					"the clusters whose works and ManagedClusterAddOns had DELETED watch events: those that left the placement")
		},
		Entry("without decision groups", "1", "", SpecTimeout(10*time.Minute)),
		Entry("with decision groups of 70", "2", "decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 70}}", SpecTimeout(10*time.Minute)),
	)
})

// pageNames returns prefix-000 … prefix-(n-1).
func pageNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// addonClusters returns the sorted clusters that have ManagedClusterAddOn addon.
func addonClusters(ctx context.Context, addon string) []string {
	GinkgoHelper()
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	Expect(hubClient.List(ctx, list, client.MatchingFields{"metadata.name": addon})).To(Succeed())
	out := []string{}
	for _, m := range list.Items {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m.Namespace)
		}
	}
	sort.Strings(out)
	return out
}

type deletes struct{ works, addons []string }

// distinct keeps one of each cluster (sorted lists).
func (d deletes) distinct() deletes {
	return deletes{works: slices.Compact(d.works), addons: slices.Compact(d.addons)}
}

// watchDeletes watches the replica set ns/pages's works and the add-on's
// ManagedClusterAddOns from now on (until the spec ends); the function it returns gives the
// clusters whose objects were deleted so far (each as often as it was), sorted.
func watchDeletes(ctx context.Context, ns, addon string) func() deletes {
	GinkgoHelper()
	wctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var got deletes
	var wg sync.WaitGroup
	follow := func(w watch.Interface, add func(ns string)) {
		defer GinkgoRecover()
		defer wg.Done()
		defer w.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					if wctx.Err() != nil {
						return
					}
					// A closed watch would lose events: fail rather than count too few.
					Fail("a watch of deletions closed during the spec")
					return
				}
				if e.Type == watch.Deleted {
					o := e.Object.(client.Object)
					mu.Lock()
					add(o.GetNamespace())
					mu.Unlock()
				}
			}
		}
	}
	ww, err := hubClient.Watch(wctx, &workv1.ManifestWorkList{}, ownerLabel(ns, "pages"))
	Expect(err).NotTo(HaveOccurred())
	aw, err := hubClient.Watch(wctx, &addonv1alpha1.ManagedClusterAddOnList{}, client.MatchingFields{"metadata.name": addon})
	Expect(err).NotTo(HaveOccurred())
	wg.Add(2)
	go follow(ww, func(c string) { got.works = append(got.works, c) })
	go follow(aw, func(c string) { got.addons = append(got.addons, c) })
	DeferCleanup(func(ctx SpecContext) { cancel(); wg.Wait() }, NodeTimeout(2*time.Minute))
	return func() deletes {
		mu.Lock()
		defer mu.Unlock()
		out := deletes{works: append([]string{}, got.works...), addons: append([]string{}, got.addons...)}
		sort.Strings(out.works)
		sort.Strings(out.addons)
		return out
	}
}
