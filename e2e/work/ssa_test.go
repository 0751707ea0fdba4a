package work

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

var _ = Describe("ServerSideApply ignoreFields", func() {
	ssaIgnoring := func(ns, name string, fields ...workv1.IgnoreField) []workv1.ManifestConfigOption {
		return []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: ns, Name: name},
			UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
				ServerSideApply: &workv1.ServerSideApplyConfig{IgnoreFields: fields}}}}
	}
	scale := func(cluster, ns, name string, replicas int) {
		GinkgoHelper()
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
		Expect(managed[cluster].client.Patch(suiteCtx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch,
			client.FieldOwner("an-autoscaler"))).To(Succeed())
	}
	replicas := func(cluster, ns, name string) func(g Gomega) int32 {
		return func(g Gomega) int32 {
			d := live(cluster, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})(g)
			g.Expect(d).NotTo(BeNil())
			return *d.Spec.Replicas
		}
	}
	// bump applies a new generation changing the image, and waits until it is applied.
	bump := func(w *workv1.ManifestWork, d *appsv1.Deployment, image string) {
		GinkgoHelper()
		cur := getWork(Default, w)
		d.Spec.Template.Spec.Containers[0].Image = image
		cur.Spec.Workload.Manifests = manifests(d)
		updateSpec(cur)
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Eventually(func(g Gomega) string {
			cur := live(cluster1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name}})(g)
			g.Expect(cur).NotTo(BeNil())
			return cur.Spec.Template.Spec.Containers[0].Image
		}).Should(Equal(image))
	}

	It("leaves a field alone once the object exists with OnSpokePresent (jsonPaths), applying the rest", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("ignore")))).To(Succeed())
		d := deployment("ignore", "present", "busybox:1")
		d.Spec.Replicas = ptr.To[int32](2)
		w := newWork(cluster1, "ignore-present", d)
		w.Spec.ManifestConfigs = ssaIgnoring("ignore", "present", workv1.IgnoreField{
			Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JSONPaths: []string{".spec.replicas"}})
		createWork(w)
		Eventually(replicas(cluster1, "ignore", "present")).Should(BeEquivalentTo(2))
		scale(cluster1, "ignore", "present", 5)
		bump(w, d, "busybox:2")
		Expect(replicas(cluster1, "ignore", "present")(Default)).To(BeEquivalentTo(5))
	}, SpecTimeout(5*time.Minute))

	It("keeps a field the manifest sets until another actor changes it with OnSpokeChange (jsonPointers and jqPathExpressions)", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("ignore")))).To(Succeed())
		d := deployment("ignore", "change", "busybox:1")
		d.Spec.Replicas = ptr.To[int32](2)
		w := newWork(cluster1, "ignore-change", d)
		w.Spec.ManifestConfigs = ssaIgnoring("ignore", "change", workv1.IgnoreField{
			Condition: workv1.IgnoreFieldsConditionOnSpokeChange, JSONPointers: []string{"/spec/replicas"},
			JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "sidecar") | .image`}})
		createWork(w)
		Eventually(replicas(cluster1, "ignore", "change")).Should(BeEquivalentTo(2))
		// Not changed on the spoke: a new manifest value is applied.
		cur := getWork(Default, w)
		d.Spec.Replicas = ptr.To[int32](3)
		cur.Spec.Workload.Manifests = manifests(d)
		updateSpec(cur)
		Eventually(replicas(cluster1, "ignore", "change")).Should(BeEquivalentTo(3))
		// Changed on the spoke: the spoke's value stays through new generations.
		scale(cluster1, "ignore", "change", 6)
		bump(w, d, "busybox:2")
		Expect(replicas(cluster1, "ignore", "change")(Default)).To(BeEquivalentTo(6))
	}, SpecTimeout(5*time.Minute))

	It("reports a selector it cannot use as AppliedManifestSSAIgnoreFieldError", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("ignore")))).To(Succeed())
		d := deployment("ignore", "bad", "busybox:1")
		d.Spec.Replicas = ptr.To[int32](1)
		w := newWork(cluster1, "ignore-bad", d)
		// A path expression the webhook lets through, which fails on the object.
		w.Spec.ManifestConfigs = ssaIgnoring("ignore", "bad", workv1.IgnoreField{
			Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{".spec.replicas[]"}})
		createWork(w)
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestSSAIgnoreFieldError"),
			HaveField("Message", `ignoreFields[0].jqPathExpressions[0] ".spec.replicas[]": cannot iterate over: number (1)`)))
	}, SpecTimeout(5*time.Minute))

	It("fails only the manifest whose jq expression passes a bound, and keeps applying the rest", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("ignore")))).To(Succeed())
		keys := func(n int) map[string]string {
			data := make(map[string]string, n)
			for i := 0; i < n; i++ {
				data[fmt.Sprintf("k%05d", i)] = "v"
			}
			return data
		}
		ignoring := func(name, expr string) workv1.ManifestConfigOption {
			return workv1.ManifestConfigOption{
				ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "ignore", Name: name},
				UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
					ServerSideApply: &workv1.ServerSideApplyConfig{IgnoreFields: []workv1.IgnoreField{{
						Condition: workv1.IgnoreFieldsConditionOnSpokePresent, JQPathExpressions: []string{expr}}}}}}
		}
		// Both expressions pass the webhook: bounded in kind, but not on these objects.
		w := newWork(cluster1, "ignore-bounds",
			configMap("ignore", "many-keys", keys(10001)),
			configMap("ignore", "slow", keys(1000)),
			configMap("ignore", "plain", map[string]string{"a": "b"}))
		w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{
			ignoring("many-keys", ".data[]"),
			ignoring("slow", ".data[] as $a | .data[] as $b | .data[] | select(false)"),
		}
		createWork(w)
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestSSAIgnoreFieldError"),
			HaveField("Message", `ignoreFields[0].jqPathExpressions[0] ".data[]": selects more than 10000 fields (the cap of one expression)`)),
			"the many-keys manifest's Applied condition")
		Eventually(manifestCondition(w, 1, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestSSAIgnoreFieldError"),
			HaveField("Message", `ignoreFields[0].jqPathExpressions[0] ".data[] as $a | .data[] as $b | .data[] | select(false)": did not finish within 250ms (the deadline of one expression)`)),
			"the slow manifest's Applied condition")
		Eventually(manifestCondition(w, 2, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestComplete"),
			"the plain manifest's Applied condition")
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionFalse, "AppliedManifestWorkFailed"))
		Expect(live(cluster1, configMap("ignore", "plain", nil))(Default)).NotTo(BeNil(), "ConfigMap ignore/plain on %s", cluster1)
		Expect(live(cluster1, configMap("ignore", "many-keys", nil))(Default)).To(BeNil(), "ConfigMap ignore/many-keys on %s", cluster1)

		By("a work created after it applies: the agent serves on")
		other := newWork(cluster1, "ignore-bounds-other", configMap("ignore", "other", map[string]string{"a": "b"}))
		createWork(other)
		Eventually(workCondition(other, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Eventually(live(cluster1, configMap("ignore", "other", nil))).ShouldNot(BeNil(), "ConfigMap ignore/other on %s", cluster1)
	}, SpecTimeout(5*time.Minute))
})
