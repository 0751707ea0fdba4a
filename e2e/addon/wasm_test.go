package addon

import (
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

// sizedExample is the example plugin plugins/examples/addon-sized, built for wasip1.
func sizedExample() []byte {
	GinkgoHelper()
	_, file, _, _ := runtime.Caller(0)
	return wasmrun.Build(GinkgoT(), filepath.Join(filepath.Dir(file), "..", "..", "plugins", "examples", "addon-sized"))
}

// setPlugin creates or updates WasmPlugin name (type AddOnTemplate) serving module from a
// ConfigMap, and waits until the hub serves it.
func setPlugin(name string, module []byte) {
	GinkgoHelper()
	zst, err := wasm.Compress(module)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "plugin-" + name}}
	Eventually(func(g Gomega) {
		err := hubClient.Get(suiteCtx, client.ObjectKeyFromObject(cm), cm)
		cm.BinaryData = map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}
		if isNotFound(err) {
			g.Expect(hubClient.Create(suiteCtx, cm)).To(Succeed())
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(hubClient.Update(suiteCtx, cm)).To(Succeed())
	}).Should(Succeed())
	wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Eventually(func(g Gomega) {
		err := hubClient.Get(suiteCtx, client.ObjectKeyFromObject(wp), wp)
		wp.Spec = flotillav1alpha1.WasmPluginSpec{Type: flotillav1alpha1.PluginTypeAddOnTemplate, SHA256: wasm.Digest(module),
			Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: cm.Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}}}
		if isNotFound(err) {
			g.Expect(hubClient.Create(suiteCtx, wp)).To(Succeed())
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(hubClient.Update(suiteCtx, wp)).To(Succeed())
	}).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(hubClient.Get(suiteCtx, client.ObjectKeyFromObject(wp), wp)).To(Succeed())
		c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(wp.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).Should(Succeed())
}

var _ = Describe("an add-on whose template is a Wasm plugin", Ordered, func() {
	const name = "sized"
	var good []byte

	BeforeAll(func(ctx SpecContext) {
		good = sizedExample()
		setPlugin("addon-sized", good)
		DeferCleanup(func(ctx SpecContext) {
			deleteAndWait(&flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "addon-sized"}})
			deleteAndWait(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "plugin-addon-sized"}})
		}, NodeTimeout(2*time.Minute))
		create(&addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: addonv1alpha1.ClusterManagementAddOnSpec{
				SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "flotilla.dev", Resource: "wasmplugins"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "addon-sized"}}},
				InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
			}})
		enable(cluster1, name)
	}, NodeTimeout(5*time.Minute))

	It("deploys what the plugin renders for the cluster: replicas sized from its allocatable CPU", func(ctx SpecContext) {
		mc := &clusterv1.ManagedCluster{}
		Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster1}, mc)).To(Succeed())
		cpu := mc.Status.Allocatable["cpu"]
		want := int32(1)
		switch m := cpu.MilliValue(); {
		case m >= 16000:
			want = 3
		case m >= 4000:
			want = 2
		}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-agent"}}
		Eventually(onManaged(cluster1, d)).Should(BeTrue())
		Expect(d.Spec.Replicas).To(HaveValue(Equal(want)), "allocatable cpu %s", cpu.String())
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed))
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).Should(cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable))
		GinkgoWriter.Println("rendered replicas", strconv.Itoa(int(want)))
	}, SpecTimeout(5*time.Minute))

	It("keeps the deployed version when a new version of the plugin traps, and says so on the add-on", func(ctx SpecContext) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: addonNS, Name: name + "-agent"}}
		Expect(managed[cluster1].client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		before := d.Generation
		setPlugin("addon-sized", wasmtest.Misbehave(GinkgoT(), wasmtest.V1))
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(And(
			cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeFailed),
			HaveField("Message", And(ContainSubstring("WasmPlugin addon-sized"), ContainSubstring("boom from guest")))))
		Consistently(func() int64 {
			Expect(managed[cluster1].client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			return d.Generation
		}, "2s").Should(Equal(before))
		Expect(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionAvailable)(Default)).To(cond(metav1.ConditionTrue, addonv1alpha1.AddonAvailableReasonProbeAvailable))

		By("the good version back, the add-on is upgraded again")
		setPlugin("addon-sized", good)
		Eventually(mcaCondition(cluster1, name, addonv1alpha1.ManagedClusterAddOnConditionProgressing)).Should(cond(metav1.ConditionFalse, addonv1alpha1.ProgressingReasonUpgradeSucceed))
	}, SpecTimeout(5*time.Minute))
})
