package placement

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/plugins/dist"
)

// installPlugin installs a Prioritizer WasmPlugin with module (uncompressed) and config, as an
// admin would (a ConfigMap and the WasmPlugin), removed after the spec.
func installPlugin(ctx context.Context, name string, module []byte, config string, policyName flotillav1alpha1.FailurePolicy) {
	GinkgoHelper()
	zst, err := wasm.Compress(module)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "plugin-" + name},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}}
	Expect(hubClient.Create(ctx, cm)).To(Succeed())
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type: flotillav1alpha1.WasmPluginType("Prioritizer"), FailurePolicy: policyName,
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
			Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}},
	}}
	if config != "" {
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(config)}
	}
	Expect(hubClient.Create(ctx, wp)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, wp))).To(Succeed())
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, cm))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Eventually(func(g Gomega) {
		got := &flotillav1alpha1.WasmPlugin{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, "Ready")).To(BeTrue(), "WasmPlugin %s not Ready: %+v", name, got.Status.Conditions)
	}).Should(Succeed())
}

// pluginPlacement asks for one cluster of set by the Plugin prioritizer plugin alone.
func pluginPlacement(ns, name, plugin string) string {
	return fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: %s, namespace: %s}
spec:
  numberOfClusters: 1
  prioritizerPolicy:
    mode: Exact
    configurations:
    - scoreCoordinate: {type: Plugin, plugin: {name: %s}}
      weight: 1
`, name, ns, plugin)
}

var _ = Describe("Third-party prioritizer plugins", func() {
	It("change the outcome, and a new pluginConfig is used at once (hot reload)", func(ctx SpecContext) {
		const ns = "plugin-affinity"
		namespace(ctx, ns)
		bind(ctx, ns, "affinity")
		// By name alone aff-a would win: the plugin must be what picks aff-c.
		clusters(ctx,
			sim{Name: "aff-a", Labels: inSet("affinity", "env", "dev")},
			sim{Name: "aff-b", Labels: inSet("affinity", "env", "staging")},
			sim{Name: "aff-c", Labels: inSet("affinity", "env", "prod")},
		)
		affinity, err := dist.Get("prioritizer-affinity")
		Expect(err).NotTo(HaveOccurred())
		module, err := affinity.Wasm()
		Expect(err).NotTo(HaveOccurred())
		installPlugin(ctx, "env-affinity", module, `{"labels": [{"key": "env", "value": "prod", "score": 100}]}`, "")
		apply(ctx, pluginPlacement(ns, "placement1", "env-affinity"))
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"aff-c"}))

		By("the plugin's config now prefers staging: the decision follows")
		wp := &flotillav1alpha1.WasmPlugin{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Name: "env-affinity"}, wp)).To(Succeed())
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(`{"labels": [{"key": "env", "value": "staging", "score": 100}]}`)}
		Expect(hubClient.Update(ctx, wp)).To(Succeed())
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"aff-b"}))
	}, SpecTimeout(5*time.Minute))

	It("that fail at run time keep the decisions (failurePolicy Fail) or are skipped (Ignore), saying so", func(ctx SpecContext) {
		const ns = "plugin-broken"
		namespace(ctx, ns)
		bind(ctx, ns, "broken")
		clusters(ctx,
			sim{Name: "broken-a", Labels: inSet("broken")},
			sim{Name: "broken-b", Labels: inSet("broken")},
		)
		// The misbehave guest answers score with text, not scores: every call fails.
		guest := wasmtest.Misbehave(GinkgoT(), wasmtest.V1)
		installPlugin(ctx, "broken-fail", guest, "", flotillav1alpha1.FailurePolicyFail)
		installPlugin(ctx, "broken-ignore", guest, "", flotillav1alpha1.FailurePolicyIgnore)

		apply(ctx, pluginPlacement(ns, "with-fail", "broken-fail"), pluginPlacement(ns, "with-ignore", "broken-ignore"))
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(placementOf(ctx, ns, "with-fail").Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(clusterv1beta1.PlacementReasonNotAllDecisionsScheduled))
			g.Expect(c.Message).To(ContainSubstring("prioritizer Plugin/broken-fail"))
		}).Should(Succeed())
		Expect(decided(ctx, ns, "with-fail")).To(BeEmpty())
		Eventually(func() []placementEvent { return events(ctx, ns, "with-fail") }).Should(ContainElement(And(
			HaveField("Type", "Warning"), HaveField("Reason", "PrioritizerFailed"), HaveField("Note", ContainSubstring("decisions kept")))))

		// Ignore: decided as if the plugin were not configured (by name), and told.
		Eventually(func() []string { return decided(ctx, ns, "with-ignore") }).Should(Equal([]string{"broken-a"}))
		Eventually(func() []placementEvent { return events(ctx, ns, "with-ignore") }).Should(ContainElement(And(
			HaveField("Type", "Warning"), HaveField("Reason", "PrioritizerFailed"),
			HaveField("Note", ContainSubstring("prioritizer skipped (failurePolicy Ignore): Plugin/broken-ignore")))))
	}, SpecTimeout(5*time.Minute))
})
