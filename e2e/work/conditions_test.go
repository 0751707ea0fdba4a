package work

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// jobManagedBy names the Job controller of these specs: the test itself. The managed clusters
// run no workloads yet (no kubelet; KWOK is coming), so the test does what a Job controller
// would and writes the Job's status through the status subresource; spec.managedBy keeps
// kube-controller-manager's Job controller off it.
const jobManagedBy = "flotilla.dev/e2e-job-controller"

// conditionsJob is the seeds' fixed Job (manual selector) with the test as its controller.
func conditionsJob(ns, name string, labels map[string]string) *batchv1.Job {
	sel := map[string]string{"job": name}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{
			ManagedBy:      ptr.To(jobManagedBy),
			ManualSelector: ptr.To(true),
			Selector:       &metav1.LabelSelector{MatchLabels: sel},
			BackoffLimit:   ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "pi", Image: "perl:5.34.0", Command: []string{"perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"}}}},
			},
		},
	}
}

// finishJob marks the Job succeeded the way the Job controller does: SuccessCriteriaMet,
// then Complete, with start and completion times and the succeeded count.
func finishJob(cluster string, job *batchv1.Job) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := live(cluster, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}})(g)
		g.Expect(cur).NotTo(BeNil())
		now := metav1.Now()
		cur.Status.StartTime, cur.Status.CompletionTime = &now, &now
		cur.Status.Succeeded = 1
		cur.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
		g.Expect(managed[cluster].client.Status().Update(suiteCtx, cur)).To(Succeed())
	}).Should(Succeed())
}

func celRule(condition string, exprs ...string) workv1.ConditionRule {
	return workv1.ConditionRule{Condition: condition, Type: workv1.CelConditionExpressionsType, CelExpressions: exprs}
}

var _ = Describe("Condition rules", func() {
	It("marks a Job Complete with the WellKnownConditions rule, the work Complete with it, and stops updating it", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("conditions")))).To(Succeed())
		w := newWork(cluster1, "job-complete", conditionsJob("conditions", "pi", nil), configMap("conditions", "job-input", map[string]string{"digits": "2000"}))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Namespace: "conditions", Name: "pi"},
			ConditionRules:     []workv1.ConditionRule{{Condition: workv1.ManifestComplete, Type: workv1.WellKnownConditionsType}},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: "succeeded", Path: ".status.succeeded"}}}},
		}}
		createWork(w)
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Eventually(manifestCondition(w, 0, workv1.ManifestComplete)).Should(And(cond(metav1.ConditionFalse, workv1.ConditionRuleEvaluated),
			HaveField("Message", "Job is not finished")))
		// Only the Job has a Complete rule: the work is as complete as the Job.
		Eventually(workCondition(w, workv1.WorkComplete)).Should(And(cond(metav1.ConditionFalse, "ConditionRulesAggregated"),
			HaveField("Message", "Job is not finished")))
		Expect(manifestCondition(w, 1, workv1.ManifestComplete)(Default)).To(BeNil())

		finishJob(cluster1, conditionsJob("conditions", "pi", nil))
		Eventually(manifestCondition(w, 0, workv1.ManifestComplete)).Should(And(cond(metav1.ConditionTrue, workv1.ConditionRuleEvaluated),
			HaveField("Message", "Job is finished")))
		Eventually(workCondition(w, workv1.WorkComplete)).Should(And(cond(metav1.ConditionTrue, "ConditionRulesAggregated"),
			HaveField("Message", "Job is finished")))

		// A new generation of the work changes the Job and the ConfigMap: the Complete Job is
		// not updated any more, the ConfigMap is; the Job's status and feedback keep coming.
		cur := getWork(Default, w)
		cur.Spec.Workload.Manifests = manifests(conditionsJob("conditions", "pi", map[string]string{"revision": "2"}),
			configMap("conditions", "job-input", map[string]string{"digits": "3000"}))
		updateSpec(cur)
		Eventually(manifestCondition(w, 0, workv1.ManifestComplete)).Should(cond(metav1.ConditionTrue, workv1.ConditionRuleEvaluated))
		Eventually(manifestCondition(w, 0, workv1.ManifestAvailable)).Should(cond(metav1.ConditionTrue, "ResourceAvailable"))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Eventually(func(g Gomega) map[string]string {
			return live(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "conditions", Name: "job-input"}})(g).Data
		}).Should(HaveKeyWithValue("digits", "3000"))
		job := live(cluster1, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "conditions", Name: "pi"}})(Default)
		Expect(job.Labels).NotTo(HaveKey("revision"))
		Consistently(func(g Gomega) map[string]string {
			return live(cluster1, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "conditions", Name: "pi"}})(g).Labels
		}, 3*statusSync, 500*time.Millisecond).ShouldNot(HaveKey("revision"))
		Expect(getWork(Default, w).Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values).To(ConsistOf(
			workv1.FeedbackValue{Name: "succeeded", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}}))
	}, SpecTimeout(5*time.Minute))

	It("evaluates CEL rules over a ConfigMap's data with message and messageExpression, reports broken ones without blocking apply, and prunes removed ones", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(ctx, namespace("conditions")))).To(Succeed())
		rules := []workv1.ConditionRule{
			func() workv1.ConditionRule {
				r := celRule("Ready", "object.data.phase == 'done'")
				r.Message = "phase checked"
				return r
			}(),
			func() workv1.ConditionRule {
				r := celRule("Phase", "has(object.data.phase)", "object.data.phase != ''")
				r.MessageExpression = `result ? "phase is " + object.data.phase : "no phase"`
				return r
			}(),
			celRule("Broken", "object.data.phase =="),
			celRule("NotBool", "object.data.phase"),
			celRule("Missing", "object.data.missing == 'x'"),
		}
		w := newWork(cluster2, "cel-rules", configMap("conditions", "state", map[string]string{"phase": "running"}))
		id := workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "conditions", Name: "state"}
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: id, ConditionRules: rules}}
		createWork(w)

		Eventually(manifestCondition(w, 0, "Ready")).Should(And(cond(metav1.ConditionFalse, workv1.ConditionRuleEvaluated),
			HaveField("Message", "phase checked")))
		Eventually(manifestCondition(w, 0, "Phase")).Should(And(cond(metav1.ConditionTrue, workv1.ConditionRuleEvaluated),
			HaveField("Message", "phase is running")))
		Eventually(manifestCondition(w, 0, "Broken")).Should(And(cond(metav1.ConditionFalse, workv1.ConditionRuleExpressionError),
			HaveField("Message", ContainSubstring("Syntax error"))))
		Eventually(manifestCondition(w, 0, "NotBool")).Should(And(cond(metav1.ConditionFalse, workv1.ConditionRuleExpressionError),
			HaveField("Message", ContainSubstring("expected a bool result, got string"))))
		Eventually(manifestCondition(w, 0, "Missing")).Should(And(cond(metav1.ConditionFalse, workv1.ConditionRuleExpressionError),
			HaveField("Message", ContainSubstring("no such key: missing"))))
		// Broken expressions do not keep the manifest from being applied.
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestComplete"))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(live(cluster2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "conditions", Name: "state"}})(Default).Data).
			To(HaveKeyWithValue("phase", "running"))
		// The work aggregates every rule-made condition; with one manifest it keeps its message.
		Eventually(workCondition(w, "Ready")).Should(And(cond(metav1.ConditionFalse, "ConditionRulesAggregated"), HaveField("Message", "phase checked")))
		Eventually(workCondition(w, "Phase")).Should(And(cond(metav1.ConditionTrue, "ConditionRulesAggregated"), HaveField("Message", "phase is running")))
		Eventually(workCondition(w, "Broken")).Should(cond(metav1.ConditionFalse, "ConditionRulesAggregated"))
		Expect(workCondition(w, workv1.WorkComplete)(Default)).To(BeNil())

		// The ConfigMap reaches phase done, and the broken rules are dropped.
		cur := getWork(Default, w)
		cur.Spec.Workload.Manifests = manifests(configMap("conditions", "state", map[string]string{"phase": "done"}))
		cur.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: id, ConditionRules: rules[:2]}}
		updateSpec(cur)
		Eventually(manifestCondition(w, 0, "Ready")).Should(cond(metav1.ConditionTrue, workv1.ConditionRuleEvaluated))
		Eventually(manifestCondition(w, 0, "Phase")).Should(HaveField("Message", "phase is done"))
		Eventually(workCondition(w, "Ready")).Should(cond(metav1.ConditionTrue, "ConditionRulesAggregated"))
		Eventually(func(g Gomega) []string {
			cur := getWork(g, w)
			var types []string
			for _, c := range append(cur.Status.Conditions, cur.Status.ResourceStatus.Manifests[0].Conditions...) {
				types = append(types, c.Type)
			}
			return types
		}).ShouldNot(ContainElement(BeElementOf("Broken", "NotBool", "Missing")))
	}, SpecTimeout(5*time.Minute))

	It("deletes a Complete work ttlSecondsAfterFinished after it completed, and only a Complete one", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(ctx, namespace("conditions")))).To(Succeed())
		const ttl = 3
		completeWhenDone := []workv1.ConditionRule{celRule(workv1.ManifestComplete, "has(object.data.done) && object.data.done == 'true'")}
		done := newWork(cluster2, "ttl-done", configMap("conditions", "ttl-done", map[string]string{"done": "true"}))
		done.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: ptr.To[int64](ttl)}
		done.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "conditions", Name: "ttl-done"}, ConditionRules: completeWhenDone}}
		running := newWork(cluster2, "ttl-running", configMap("conditions", "ttl-running", map[string]string{"done": "false"}))
		running.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground, TTLSecondsAfterFinished: ptr.To[int64](0)}
		running.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "conditions", Name: "ttl-running"}, ConditionRules: completeWhenDone}}
		createWork(running)
		Eventually(workCondition(running, workv1.WorkComplete)).Should(cond(metav1.ConditionFalse, "ConditionRulesAggregated"))
		// When the hub deleted the work is what the API server recorded as its
		// deletionTimestamp (the work agent's finalizer holds it a moment): watched from
		// before its creation, so the check runs however late the test looks.
		deletedAt := deletionTimestamp(client.ObjectKeyFromObject(done))
		createWork(done)

		var completedAt time.Time
		Eventually(func(g Gomega) {
			cur := &workv1.ManifestWork{}
			err := hubClient.Get(ctx, client.ObjectKeyFromObject(done), cur)
			g.Expect(err).NotTo(HaveOccurred(), "the work went before it was seen Complete")
			c := meta.FindStatusCondition(cur.Status.Conditions, workv1.WorkComplete)
			g.Expect(c).To(cond(metav1.ConditionTrue, "ConditionRulesAggregated"))
			completedAt = c.LastTransitionTime.Time
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(done), &workv1.ManifestWork{}))
		}).Should(BeTrue())
		// Not before its time (both times have whole seconds, as the hub reads them too).
		Expect(deletedAt()).To(BeTemporally(">=", completedAt.Add(ttl*time.Second)), "deleted only ttlSecondsAfterFinished after it completed")
		// Deleting it deleted what it applied, as any deletion of the work does.
		Expect(gone(cluster2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "conditions", Name: "ttl-done"}})()).To(BeTrue())
		// The work that is not Complete stays, TTL 0 or not.
		Expect(hubClient.Get(ctx, client.ObjectKeyFromObject(running), &workv1.ManifestWork{})).To(Succeed())
		Expect(workCondition(running, workv1.WorkComplete)(Default)).To(cond(metav1.ConditionFalse, "ConditionRulesAggregated"))
	}, SpecTimeout(5*time.Minute))
})

// deletionTimestamp watches ManifestWork key from now until the spec ends; the function it
// returns waits until a version with a deletionTimestamp was seen and returns it: the time
// the API server recorded for the deletion.
func deletionTimestamp(key client.ObjectKey) func() time.Time {
	GinkgoHelper()
	wc, err := client.NewWithWatch(fleet.Hub.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(suiteCtx, &workv1.ManifestWorkList{}, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name})
	Expect(err).NotTo(HaveOccurred())
	deleted := make(chan time.Time, 1)
	go func() {
		for ev := range w.ResultChan() {
			if mw, ok := ev.Object.(*workv1.ManifestWork); ok && mw.DeletionTimestamp != nil {
				select {
				case deleted <- mw.DeletionTimestamp.Time:
				default: // the first one seen is kept
				}
			}
		}
	}()
	DeferCleanup(w.Stop)
	return func() time.Time {
		GinkgoHelper()
		var at time.Time
		Eventually(deleted).Should(Receive(&at), "ManifestWork %s with a deletionTimestamp", key)
		return at
	}
}
