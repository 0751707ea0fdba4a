package mwrs

import (
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
)

var _ = Describe("Rollback (work.flotilla.dev/rollback-on-failure)", func() {
	It("puts the updated clusters back on the previous template when maxFailures stops a rollout, and holds until the template changes", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-rollback", "mwrs-rollback", "app"
		cs := names("rb", 4)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "rollback")...)
		placement(ctx, ns, "p", set, []string{"app", "rollback"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, hold, nil)
		// v3 degrades wherever it lands; the others succeed.
		a.setDecide(func(w *workv1.ManifestWork) outcome {
			if strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), `"v3"`) {
				return degrade
			}
			return succeed
		})
		// Two at a time; one failure is tolerated, the second stops the rollout.
		replicaSet(ctx, ns, rs, "v1", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 2, maxFailures: 1}}}"},
			"")
		patch(ctx, &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rs}},
			`{"metadata": {"annotations": {"`+mwrs.RollbackAnnotation+`": "true"}}}`)
		// Complete for the current generation (the status of the previous one says Complete too).
		complete := func(g Gomega) {
			r := getRS(ctx, ns, rs)
			c := condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
			g.Expect(c).To(conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
			g.Expect(c.ObservedGeneration).To(Equal(r.Generation))
			g.Expect(r.Status.Summary.Updated).To(Equal(len(cs)))
		}
		Eventually(complete).Should(Succeed())
		v1 := hashes(ctx, ns, rs)
		Expect(v1).To(HaveLen(1))
		setVersion(ctx, ns, rs, "v2")
		Eventually(complete).Should(Succeed())
		v2 := hashes(ctx, ns, rs)
		Expect(v2).To(HaveLen(1))
		Expect(v2[0]).NotTo(Equal(v1[0]))

		By("a broken v3: the clusters it reaches degrade, the second failure stops the rollout, all go back to v2")
		setVersion(ctx, ns, rs, "v3")
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			rb := condition(r, mwrs.ConditionRolledBack)
			g.Expect(rb).To(conditionOf(mwrs.ConditionRolledBack, "True", mwrs.ReasonMaxFailuresBreached))
			g.Expect(rb.ObservedGeneration).To(Equal(r.Generation))
			// The first two, or three when the third was admitted between the two failures.
			g.Expect(rb.Message).To(Or(ContainSubstring("rolled back to "+v2[0]+" on 2 clusters ("+cs[0]+", "+cs[1]+")"),
				ContainSubstring("rolled back to "+v2[0]+" on 3 clusters ("+cs[0]+", "+cs[1]+", "+cs[2]+")")))
			// Every work carries v2 again: the two updated ones went back, the others never moved.
			g.Expect(hashes(ctx, ns, rs)).To(Equal(v2))
		}).Should(Succeed())
		var v3 string
		for _, h := range a.hashesSeen() {
			if h != v1[0] && h != v2[0] {
				v3 = h
			}
		}
		Expect(a.appeared(v3)).To(Or(ConsistOf(cs[:2]), ConsistOf(cs[:3])), "v3 went on after the rollout stopped")
		Eventually(func() []corev1.Event { return events(ctx, ns, rs, mwrs.EventRolledBack) }).ShouldNot(BeEmpty())

		By("holding: v3 is not rolled out again while the spec stays")
		Consistently(func() []string { return hashes(ctx, ns, rs) }).Should(Equal(v2))

		By("a fixed v4 rolls out from the start")
		setVersion(ctx, ns, rs, "v4")
		Eventually(complete).Should(Succeed())
		r := getRS(ctx, ns, rs)
		Expect(condition(r, mwrs.ConditionRolledBack)).To(conditionOf(mwrs.ConditionRolledBack, "False", mwrs.ReasonNotRolledBack))

		By("the controller keeps the last templates as ControllerRevisions owned by the replica set")
		revs := &appsv1.ControllerRevisionList{}
		Expect(hubClient.List(ctx, revs, client.InNamespace(ns), ownerLabel(ns, rs))).To(Succeed())
		Expect(revs.Items).To(HaveLen(3)) // v2, v3, v4: v1 pruned
		for _, cr := range revs.Items {
			Expect(cr.OwnerReferences).To(ContainElement(HaveField("Name", rs)))
		}
	}, SpecTimeout(5*time.Minute))
})

var _ = Describe("Rollback target", func() {
	It("goes back to the last template that completed, not to a broken one rolled back before", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-rollback-target", "mwrs-rollback-target", "app"
		cs := names("rt", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "rollback-target")...)
		placement(ctx, ns, "p", set, []string{"app", "rollback-target"}, "")
		decided(ctx, ns, "p", cs)
		a := startAgent(ns, rs, hold, nil)
		// A succeeds; B, C and D degrade wherever they land.
		a.setDecide(func(w *workv1.ManifestWork) outcome {
			if strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), `"A"`) {
				return succeed
			}
			return degrade
		})
		// One at a time, no failure tolerated: a broken template reaches one cluster and stops.
		replicaSet(ctx, ns, rs, "A", []string{"{name: p, rolloutStrategy: {type: Progressive, progressive: {maxConcurrency: 1}}}"}, "")
		patch(ctx, &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rs}},
			`{"metadata": {"annotations": {"`+mwrs.RollbackAnnotation+`": "true"}}}`)
		Eventually(func(g Gomega) {
			r := getRS(ctx, ns, rs)
			c := condition(r, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
			g.Expect(c).To(conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete))
			g.Expect(c.ObservedGeneration).To(Equal(r.Generation))
			g.Expect(r.Status.Summary.Updated).To(Equal(len(cs)))
		}).Should(Succeed(), "template A completes on %v", cs)
		hashA := hashes(ctx, ns, rs)
		Expect(hashA).To(HaveLen(1))

		var seen []string // templates rolled back already
		// rolledBackTo waits until the current generation is rolled back to template A on
		// the first cluster, and returns the rolled-back template's hash.
		rolledBackTo := func(version string) string {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				r := getRS(ctx, ns, rs)
				rb := condition(r, mwrs.ConditionRolledBack)
				g.Expect(rb).To(conditionOf(mwrs.ConditionRolledBack, "True", mwrs.ReasonMaxFailuresBreached))
				g.Expect(rb.ObservedGeneration).To(Equal(r.Generation))
				g.Expect(rb.Message).To(ContainSubstring("rolled back to " + hashA[0] + " on 1 clusters (" + cs[0] + ")"))
				g.Expect(hashes(ctx, ns, rs)).To(Equal(hashA))
			}).Should(Succeed(), "the broken template %s is rolled back to A (%s) on %s, and every work carries A", version, hashA[0], cs[0])
			for _, h := range a.hashesSeen() {
				if h != hashA[0] && slices.Contains(a.appeared(h), cs[0]) && !slices.Contains(seen, h) {
					return h
				}
			}
			Fail("the agent saw no template of version " + version)
			return ""
		}

		By("B breaks on the first cluster and goes back to A")
		setVersion(ctx, ns, rs, "B")
		hashB := rolledBackTo("B")
		seen = append(seen, hashB)

		By("C breaks on the first cluster and goes back to A, the last template that completed, not to B")
		setVersion(ctx, ns, rs, "C")
		hashC := rolledBackTo("C")
		Expect(hashC).NotTo(Equal(hashB))
		Expect(a.appeared(hashB)).To(ConsistOf(cs[0]), "B reached a cluster other than the first")
		seen = append(seen, hashC)

		By("D breaks too and goes back to A, whose revision is kept although three newer ones exist")
		setVersion(ctx, ns, rs, "D")
		rolledBackTo("D")
		Consistently(func() []string { return hashes(ctx, ns, rs) }).Should(Equal(hashA), "a work left template A after D was rolled back")
	}, SpecTimeout(5*time.Minute))
})

// events lists the Events of reason about the replica set ns/name.
func events(ctx SpecContext, ns, name, reason string) []corev1.Event {
	GinkgoHelper()
	list := &corev1.EventList{}
	Expect(hubClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
