package work

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	klwork "github.com/flotilla-dev/flotilla/klusterlet/work"
)

// manifests turns objects (typed or YAML strings) into ManifestWork manifests.
func manifests(objs ...any) []workv1.Manifest {
	GinkgoHelper()
	out := make([]workv1.Manifest, 0, len(objs))
	for _, o := range objs {
		var raw []byte
		var err error
		if s, ok := o.(string); ok {
			raw, err = yaml.YAMLToJSON([]byte(s))
		} else {
			raw, err = json.Marshal(o)
		}
		Expect(err).NotTo(HaveOccurred())
		out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out
}

func newWork(cluster, name string, objs ...any) *workv1.ManifestWork {
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests(objs...)}},
	}
}

// createWork creates w on the hub and deletes it (waiting until it is gone) after the spec.
func createWork(w *workv1.ManifestWork) *workv1.ManifestWork {
	GinkgoHelper()
	Expect(hubClient.Create(suiteCtx, w)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, w))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue(), "ManifestWork %s/%s was not released", w.Namespace, w.Name)
	}, NodeTimeout(2*time.Minute))
	return w
}

// updateSpec writes cur's spec to the hub; when the agent's status write got there first, it
// puts the same spec on the current object.
func updateSpec(cur *workv1.ManifestWork) {
	GinkgoHelper()
	spec := cur.Spec.DeepCopy()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &workv1.ManifestWork{}
		if err := hubClient.Get(suiteCtx, client.ObjectKeyFromObject(cur), latest); err != nil {
			return err
		}
		latest.Spec = *spec
		return hubClient.Update(suiteCtx, latest)
	})).To(Succeed())
}

func getWork(g Gomega, w *workv1.ManifestWork) *workv1.ManifestWork {
	cur := &workv1.ManifestWork{}
	g.Expect(hubClient.Get(suiteCtx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
	return cur
}

// workCondition returns a work-level condition for the work's current generation.
func workCondition(w *workv1.ManifestWork, t string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		cur := getWork(g, w)
		c := meta.FindStatusCondition(cur.Status.Conditions, t)
		if c == nil || c.ObservedGeneration != cur.Generation {
			return nil
		}
		return c
	}
}

// manifestCondition returns condition t of manifest ordinal for the work's current generation.
func manifestCondition(w *workv1.ManifestWork, ordinal int32, t string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		cur := getWork(g, w)
		for _, m := range cur.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Ordinal == ordinal {
				c := meta.FindStatusCondition(m.Conditions, t)
				if c == nil || c.ObservedGeneration != cur.Generation {
					return nil
				}
				return c
			}
		}
		return nil
	}
}

func cond(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), HaveField("Status", status), HaveField("Reason", reason))
}

func appliedName(w *workv1.ManifestWork) string {
	return klwork.HubHash(fleet.Hub.Config.Host) + "-" + w.Name
}

func deployment(ns, name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}},
			},
		},
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// live reads obj's current state from cluster, nil when it does not exist.
func live[T client.Object](cluster string, obj T) func(g Gomega) T {
	return func(g Gomega) T {
		err := managed[cluster].client.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			var zero T
			return zero
		}
		g.Expect(err).NotTo(HaveOccurred())
		return obj
	}
}

func gone(cluster string, obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(managed[cluster].client.Get(suiteCtx, client.ObjectKeyFromObject(obj), obj))
	}
}

var _ = Describe("ManifestWork", func() {
	It("deploys the seeds' hello-work-demo, reports status as the seeds show and anchors it in an AppliedManifestWork", func(ctx SpecContext) {
		w := createWork(&workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster1, Name: "hello-work-demo"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: default
spec:
  selector:
    matchLabels:
      app: hello
  template:
    metadata:
      labels:
        app: hello
    spec:
      containers:
        - name: hello
          image: quay.io/asmacdo/busybox
          command:
            ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600']
`)}}})
		Eventually(workCondition(w, workv1.WorkApplied)).Should(And(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"),
			HaveField("Message", "Apply manifest work complete")))
		Eventually(workCondition(w, workv1.WorkAvailable)).Should(And(cond(metav1.ConditionTrue, "ResourcesAvailable"),
			HaveField("Message", "All resources are available")))
		cur := getWork(Default, w)
		Expect(cur.Finalizers).To(ContainElement(workv1.ManifestWorkFinalizer))
		Expect(cur.Status.ResourceStatus.Manifests).To(HaveLen(1))
		m := cur.Status.ResourceStatus.Manifests[0]
		Expect(m.ResourceMeta).To(Equal(workv1.ManifestResourceMeta{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment",
			Resource: "deployments", Name: "hello", Namespace: "default"}))
		Expect(m.Conditions).To(ContainElements(
			And(cond(metav1.ConditionTrue, "AppliedManifestComplete"), HaveField("Type", "Applied"), HaveField("Message", "Apply manifest complete")),
			And(cond(metav1.ConditionTrue, "ResourceAvailable"), HaveField("Type", "Available"), HaveField("Message", "Resource is available"))))

		d := live(cluster1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}})(Default)
		Expect(d).NotTo(BeNil())
		Expect(d.Spec.Template.Spec.Containers[0].Command).To(Equal([]string{"sh", "-c", `echo "Hello, Kubernetes!" && sleep 3600`}))
		amw := &workv1.AppliedManifestWork{}
		Expect(managed[cluster1].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, amw)).To(Succeed())
		Expect(amw.Spec.HubHash).To(Equal(klwork.HubHash(fleet.Hub.Config.Host)))
		Expect(amw.Spec.ManifestWorkName).To(Equal(w.Name))
		Expect(amw.Spec.AgentID).NotTo(BeEmpty())
		Expect(amw.Finalizers).To(ContainElement(workv1.AppliedManifestWorkFinalizer))
		Eventually(func(g Gomega) []workv1.AppliedManifestResourceMeta {
			g.Expect(managed[cluster1].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, amw)).To(Succeed())
			return amw.Status.AppliedResources
		}).Should(ConsistOf(workv1.AppliedManifestResourceMeta{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "default", Name: "hello"},
			Version:            "v1", UID: string(d.UID)}))
		Expect(d.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "AppliedManifestWork"), HaveField("Name", amw.Name), HaveField("UID", amw.UID))))
		// The other cluster got nothing.
		Expect(gone(cluster2, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}})()).To(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("applies a new generation, deletes a manifest dropped from the work and puts back what another writer changed", func(ctx SpecContext) {
		w := createWork(newWork(cluster1, "update", namespace("update"), configMap("update", "a", map[string]string{"k": "1"}),
			configMap("update", "b", map[string]string{"k": "1"})))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "update", Name: "a"}}
		b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "update", Name: "b"}}
		Expect(live(cluster1, a)(Default).Data).To(HaveKeyWithValue("k", "1"))

		// Another writer on the managed cluster changes a: the Update strategy puts it back.
		a.Data["k"] = "tampered"
		Expect(managed[cluster1].client.Update(ctx, a)).To(Succeed())
		Eventually(func(g Gomega) map[string]string { return live(cluster1, a)(g).Data }).Should(HaveKeyWithValue("k", "1"))

		cur := getWork(Default, w)
		cur.Spec.Workload.Manifests = manifests(namespace("update"), configMap("update", "a", map[string]string{"k": "2"}))
		updateSpec(cur)
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Eventually(func(g Gomega) map[string]string { return live(cluster1, a)(g).Data }).Should(HaveKeyWithValue("k", "2"))
		Eventually(gone(cluster1, b)).Should(BeTrue())
		Expect(getWork(Default, w).Status.ResourceStatus.Manifests).To(HaveLen(2))

		// Deleting the work (Foreground by default) deletes everything it applied, namespace
		// included, before the work goes.
		Expect(hubClient.Delete(ctx, cur)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())
		Expect(gone(cluster1, a)()).To(BeTrue())
		Expect(managed[cluster1].client.Get(ctx, client.ObjectKey{Name: appliedName(w)}, &workv1.AppliedManifestWork{})).
			To(Satisfy(apierrors.IsNotFound))
	}, SpecTimeout(5*time.Minute))

	It("holds a work with the finalizer the hub's webhook added at create, without an agent write, and adds it itself when missing", func(ctx SpecContext) {
		// The hub's finalizer webhook is in effect once a dry run comes back with the finalizer.
		Eventually(func(g Gomega) []string {
			probe := newWork(cluster1, "finalizer-probe", configMap("default", "finalizer-probe", nil))
			g.Expect(hubClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			return probe.Finalizers
		}).WithTimeout(30*time.Second).Should(ContainElement(workv1.ManifestWorkFinalizer),
			"waiting for the hub's webhook to add the finalizer to a dry-run create")
		// The agent's writes to a work: the finalizer (main resource) and its status.
		agentWrote := func(w *workv1.ManifestWork, subresource string) bool {
			for _, f := range w.ManagedFields {
				if f.Manager == "flotilla-work-agent" && f.Subresource == subresource {
					return true
				}
			}
			return false
		}

		w := createWork(newWork(cluster1, "finalizer", configMap("default", "finalizer", map[string]string{"k": "v"})))
		Expect(w.Finalizers).To(ConsistOf(workv1.ManifestWorkFinalizer), "the created work's finalizers")
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		cur := getWork(Default, w)
		Expect(agentWrote(cur, "status")).To(BeTrue(), "the agent's status write in managedFields %v", cur.ManagedFields)
		Expect(agentWrote(cur, "")).To(BeFalse(), "the agent wrote the work (not its status) although the finalizer was there: %v", cur.ManagedFields)

		// A work without it (created while the webhook was not in effect): the agent adds it.
		patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/finalizers","value":["`+
			workv1.ManifestWorkFinalizer+`"]},{"op":"remove","path":"/metadata/finalizers"}]`))
		Expect(hubClient.Patch(ctx, cur, patch)).To(Succeed())
		Eventually(func(g Gomega) []string { return getWork(g, w).Finalizers }).
			Should(ConsistOf(workv1.ManifestWorkFinalizer), "waiting for the agent to add the finalizer back")
		Expect(agentWrote(getWork(Default, w), "")).To(BeTrue(), "the agent's finalizer write in managedFields")

		// Deleting it still waits for the agent to remove what it applied.
		Expect(hubClient.Delete(ctx, cur)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue(), "waiting for the work to be released")
		Expect(gone(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "finalizer"}})()).
			To(BeTrue(), "the work was released before its ConfigMap was deleted")
	}, SpecTimeout(3*time.Minute))

	It("keeps resources on Orphan, and only the orphaned ones on SelectivelyOrphan", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("orphans")))).To(Succeed())
		orphan := newWork(cluster1, "orphan", configMap("orphans", "kept", map[string]string{"k": "v"}))
		orphan.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan}
		createWork(orphan)
		selective := newWork(cluster1, "selective-delete-work", configMap("orphans", "helloworld", nil), deployment("orphans", "helloworld", "busybox"))
		selective.Spec.DeleteOption = &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
			SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
				{Group: "", Resource: "configmaps", Namespace: "orphans", Name: "helloworld"}}}}
		createWork(selective)
		for _, w := range []*workv1.ManifestWork{orphan, selective} {
			Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		}
		kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "orphans", Name: "kept"}}
		Expect(live(cluster1, kept)(Default).OwnerReferences).To(BeEmpty())

		for _, w := range []*workv1.ManifestWork{orphan, selective} {
			Expect(hubClient.Delete(ctx, w)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
			}).Should(BeTrue())
		}
		Expect(live(cluster1, kept)(Default)).NotTo(BeNil())
		Expect(live(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "orphans", Name: "helloworld"}})(Default)).NotTo(BeNil())
		Expect(gone(cluster1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "orphans", Name: "helloworld"}})()).To(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("keeps a resource two works declare until the last of them is deleted", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("shared")))).To(Succeed())
		first := createWork(newWork(cluster1, "shared-1", configMap("shared", "both", map[string]string{"k": "v"})))
		second := createWork(newWork(cluster1, "shared-2", configMap("shared", "both", map[string]string{"k": "v"})))
		for _, w := range []*workv1.ManifestWork{first, second} {
			Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		}
		both := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "both"}}
		Eventually(func(g Gomega) []metav1.OwnerReference { return live(cluster1, both)(g).OwnerReferences }).Should(HaveLen(2))
		Expect(hubClient.Delete(ctx, first)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(first), &workv1.ManifestWork{}))
		}).Should(BeTrue())
		cm := live(cluster1, both)(Default)
		Expect(cm).NotTo(BeNil())
		Expect(cm.OwnerReferences).To(ConsistOf(HaveField("Name", appliedName(second))))
		Expect(hubClient.Delete(ctx, second)).To(Succeed())
		Eventually(gone(cluster1, both)).Should(BeTrue())
	}, SpecTimeout(5*time.Minute))

	It("creates but never updates a CreateOnly manifest", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("createonly")))).To(Succeed())
		w := newWork(cluster1, "create-only", configMap("createonly", "cm", map[string]string{"k": "from-work"}))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "createonly", Name: "cm"},
			UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}}}
		createWork(w)
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "createonly", Name: "cm"}}
		Expect(live(cluster1, cm)(Default).Data).To(HaveKeyWithValue("k", "from-work"))
		cm.Data["k"] = "taken-over"
		Expect(managed[cluster1].client.Update(ctx, cm)).To(Succeed())
		// A new generation of the work is applied (observed below) and still leaves the content.
		cur := getWork(Default, w)
		cur.Spec.Workload.Manifests = manifests(configMap("createonly", "cm", map[string]string{"k": "from-work-v2"}))
		updateSpec(cur)
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(live(cluster1, cm)(Default).Data).To(HaveKeyWithValue("k", "taken-over"))
	}, SpecTimeout(5*time.Minute))

	It("applies nothing for ReadOnly and still reports the live object and its feedback", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("readonly")))).To(Succeed())
		Expect(managed[cluster1].client.Create(ctx, configMap("readonly", "existing", map[string]string{"owner": "someone-else"}))).To(Succeed())
		w := newWork(cluster1, "read-only", `
apiVersion: v1
kind: ConfigMap
metadata:
  name: existing
  namespace: readonly
`, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: missing
  namespace: readonly
`)
		ro := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
			{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "readonly", Name: "existing"}, UpdateStrategy: ro,
				FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{{Name: "owner", Path: ".data.owner"}}}}},
			{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "readonly", Name: "missing"}, UpdateStrategy: ro},
		}
		createWork(w)
		Eventually(manifestCondition(w, 0, workv1.ManifestAvailable)).Should(cond(metav1.ConditionTrue, "ResourceAvailable"))
		Eventually(manifestCondition(w, 1, workv1.ManifestAvailable)).Should(cond(metav1.ConditionFalse, "ResourceNotAvailable"))
		Eventually(func(g Gomega) []workv1.FeedbackValue {
			ms := getWork(g, w).Status.ResourceStatus.Manifests
			g.Expect(ms).To(HaveLen(2))
			return ms[0].StatusFeedbacks.Values
		}).Should(ConsistOf(workv1.FeedbackValue{Name: "owner", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("someone-else")}}))
		Expect(gone(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "readonly", Name: "missing"}})()).To(BeTrue())
		existing := live(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "readonly", Name: "existing"}})(Default)
		Expect(existing.OwnerReferences).To(BeEmpty())
		Expect(existing.Data).To(Equal(map[string]string{"owner": "someone-else"}))
		// Deleting the work leaves what it only read.
		Expect(hubClient.Delete(ctx, w)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())
		Expect(live(cluster1, existing)(Default)).NotTo(BeNil())
	}, SpecTimeout(5*time.Minute))

	It("reports JSONPaths feedback and updates it only when a value changes", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("feedback")))).To(Succeed())
		w := newWork(cluster1, "feedback", deployment("feedback", "fb", "busybox"))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "feedback", Name: "fb"},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: "replicas", Path: ".spec.replicas"},
				{Name: "image", Path: ".spec.template.spec.containers[0].image"},
				{Name: "paused", Path: ".spec.paused"},
				{Name: "isAvailable", Path: `.status.conditions[?(@.type=="Available")].status`},
			}}}}}
		createWork(w)
		values := func(g Gomega) []workv1.FeedbackValue {
			ms := getWork(g, w).Status.ResourceStatus.Manifests
			g.Expect(ms).To(HaveLen(1))
			return ms[0].StatusFeedbacks.Values
		}
		Eventually(values).Should(ContainElements(
			workv1.FeedbackValue{Name: "replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](1)}},
			workv1.FeedbackValue{Name: "image", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("busybox")}}))
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(cond(metav1.ConditionTrue, "StatusFeedbackSynced"))
		// paused is unset: no value rather than an error.
		Expect(values(Default)).NotTo(ContainElement(HaveField("Name", "paused")))

		// A new generation that scales the Deployment changes the value reported.
		cur := getWork(Default, w)
		dep := deployment("feedback", "fb", "busybox")
		dep.Spec.Replicas = ptr.To[int32](3)
		cur.Spec.Workload.Manifests = manifests(dep)
		updateSpec(cur)
		Eventually(values).Should(ContainElement(
			workv1.FeedbackValue{Name: "replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To[int64](3)}}))
	}, SpecTimeout(5*time.Minute))

	It("reports a feedback path that selects a structure as StatusFeedbackSynced=False, and applies regardless", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("feedback")))).To(Succeed())
		w := newWork(cluster1, "feedback-bad", configMap("feedback", "structured", map[string]string{"k": "v"}))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "feedback", Name: "structured"},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: "data", Path: ".data"}, {Name: "k", Path: ".data.k"}}}}}}
		createWork(w)
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(And(cond(metav1.ConditionFalse, "StatusFeedbackSyncFailed"),
			HaveField("Message", And(ContainSubstring("data"), ContainSubstring("RawFeedbackJsonString")))))
		Expect(getWork(Default, w).Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values).To(ConsistOf(
			workv1.FeedbackValue{Name: "k", Value: workv1.FieldValue{Type: workv1.String, String: ptr.To("v")}}))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
	}, SpecTimeout(5*time.Minute))

	It("reports the seeds' Job without a selector as AppliedManifestFailed, and applies both of the seeds' fixes", func(ctx SpecContext) {
		job := `
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  namespace: default
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
`
		w := createWork(newWork(cluster2, "exmaple-job", job))
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestFailed"),
			HaveField("Message", And(HavePrefix("Failed to apply manifest: "), ContainSubstring("immutable")))))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionFalse, "AppliedManifestWorkFailed"))
		Expect(hubClient.Delete(ctx, w)).To(Succeed())
		Eventually(gone(cluster2, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pi"}})).Should(BeTrue())

		// Fix 1: a manual selector and matching labels.
		fixed := createWork(newWork(cluster2, "exmaple-job-1", `
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  namespace: default
spec:
  manualSelector: true
  selector:
    matchLabels:
      job: pi
  template:
    metadata:
      labels:
        job: pi
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
`))
		Eventually(workCondition(fixed, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(hubClient.Delete(ctx, fixed)).To(Succeed())
		Eventually(gone(cluster2, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pi"}})).Should(BeTrue())

		// Fix 2: ServerSideApply.
		ssa := newWork(cluster2, "exmaple-job-ssa", job)
		ssa.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Namespace: "default", Name: "pi"},
			UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}}}
		createWork(ssa)
		Eventually(workCondition(ssa, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		// A new generation applies the Job again, server-side, without touching its immutable fields.
		cur := getWork(Default, ssa)
		cur.Spec.Workload.Manifests = append(cur.Spec.Workload.Manifests, manifests(configMap("default", "pi-extra", nil))...)
		updateSpec(cur)
		Eventually(manifestCondition(ssa, 0, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestComplete"))
		Eventually(workCondition(ssa, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
	}, SpecTimeout(5*time.Minute))

	It("reports a server-side apply conflict naming the field, as in the seeds' two-works example", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(ctx, namespace("ssa")))).To(Succeed())
		ssa := func(manager string, force bool) *workv1.UpdateStrategy {
			s := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}
			if manager != "" {
				s.ServerSideApply = &workv1.ServerSideApplyConfig{FieldManager: manager, Force: force}
			}
			return s
		}
		id := workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "ssa", Name: "hello"}
		first := newWork(cluster2, "hello-work-demo", deployment("ssa", "hello", "busybox"))
		first.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: id, UpdateStrategy: ssa("", false)}}
		createWork(first)
		Eventually(workCondition(first, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))

		second := newWork(cluster2, "hello-work-replica-patch", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: ssa
spec:
  replicas: 3
`)
		second.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{ResourceIdentifier: id, UpdateStrategy: ssa("work-agent-another", true)}}
		createWork(second)
		Eventually(workCondition(second, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ssa", Name: "hello"}}
		Eventually(func(g Gomega) int32 { return *live(cluster2, d)(g).Spec.Replicas }).Should(BeEquivalentTo(3))

		// The first work now sets replicas too: conflict with work-agent-another on .spec.replicas.
		cur := getWork(Default, first)
		dep := deployment("ssa", "hello", "busybox")
		dep.Spec.Replicas = ptr.To[int32](1)
		cur.Spec.Workload.Manifests = manifests(dep)
		updateSpec(cur)
		Eventually(manifestCondition(first, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "ApplyConflict"),
			HaveField("Message", And(ContainSubstring("work-agent-another"), ContainSubstring(".spec.replicas")))))
		Expect(*live(cluster2, d)(Default).Spec.Replicas).To(BeEquivalentTo(3))
	}, SpecTimeout(5*time.Minute))

	It("reports a manifest it cannot map or apply, naming it, and applies the others", func(ctx SpecContext) {
		w := createWork(newWork(cluster2, "partly-bad", configMap("default", "good", nil), `
apiVersion: example.com/v1
kind: Nonexistent
metadata:
  name: nope
  namespace: default
`))
		Eventually(manifestCondition(w, 1, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestFailed"),
			HaveField("Message", And(ContainSubstring("manifests[1]"), ContainSubstring("Nonexistent")))))
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestComplete"))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionFalse, "AppliedManifestWorkFailed"))
	}, SpecTimeout(5*time.Minute))
})
