package work

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

var _ = Describe("Feedback scraped by Watch", Ordered, func() {
	// An agent that polls only every 10 minutes and may watch one resource: a feedback value
	// that follows a change within the spec's time came from the watch.
	const name = "watcher"
	var a *runningAgent
	BeforeAll(func(ctx SpecContext) {
		a = joinExtraWith(name, klusterlet.WorkOptions{StatusSyncInterval: 10 * time.Minute, EvictionGracePeriod: evictionGrace, MaxFeedbackWatch: 1})
		DeferCleanup(func(ctx SpecContext) { a.stop() }, NodeTimeout(2*time.Minute))
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(suiteCtx, namespace("watched")))).To(Succeed())
	}, NodeTimeout(5*time.Minute))

	It("reports a change of a watched resource at once, and polls past the watch limit, saying so", func(ctx SpecContext) {
		c := managed[cluster2].client
		for _, n := range []string{"first", "second"} {
			Expect(c.Create(ctx, configMap("watched", n, map[string]string{"v": "1"}))).To(Succeed())
		}
		w := newWork(name, "watch-feedback", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"first","namespace":"watched"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"second","namespace":"watched"}}`)
		for _, n := range []string{"first", "second"} {
			w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "watched", Name: n},
				UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
				FeedbackScrapeType: workv1.FeedbackWatchType,
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "v", Path: ".data.v"}}}}})
		}
		createWork(w)
		value := func(ordinal int) func(g Gomega) []workv1.FeedbackValue {
			return func(g Gomega) []workv1.FeedbackValue {
				ms := getWork(g, w).Status.ResourceStatus.Manifests
				g.Expect(ms).To(HaveLen(2))
				return ms[ordinal].StatusFeedbacks.Values
			}
		}
		v := func(s string) workv1.FeedbackValue {
			return workv1.FeedbackValue{Name: "v", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(s)}}
		}
		Eventually(value(0)).Should(ConsistOf(v("1")))
		Eventually(value(1)).Should(ConsistOf(v("1")))
		// One of the two is watched; the other says it is polled.
		Eventually(func(g Gomega) []string {
			var msgs []string
			for _, m := range getWork(g, w).Status.ResourceStatus.Manifests {
				for _, c := range m.Conditions {
					if c.Type == workv1.ManifestStatusFeedbackSynced {
						msgs = append(msgs, c.Message)
					}
				}
			}
			return msgs
		}).Should(ConsistOf("", And(ContainSubstring("limit of 1 watched resources"), ContainSubstring("polled every 10m0s"))))

		watched := 0
		for i, m := range getWork(Default, w).Status.ResourceStatus.Manifests {
			if c := findCond(m.Conditions, workv1.ManifestStatusFeedbackSynced); c != nil && c.Message == "" {
				watched = i
			}
		}
		cm := &corev1.ConfigMap{}
		names := []string{"first", "second"}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "watched", Name: names[watched]}, cm)).To(Succeed())
		cm.Data["v"] = "2"
		Expect(c.Update(ctx, cm)).To(Succeed())
		Eventually(value(watched)).Should(ConsistOf(v("2")))
	}, SpecTimeout(5*time.Minute))
})

func findCond(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
