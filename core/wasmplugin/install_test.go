package wasmplugin_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

var _ = Describe("Installer", func() {
	It("installs a bundled plugin that the controller loads, and removes only what it installed", func(ctx SpecContext) {
		mod := wasmtest.Misbehave(GinkgoT(), wasmtest.V1)
		inst := wasmplugin.Installer{Client: k8s, Namespace: "bundled-plugins", FieldManager: "test-installer", InstalledBy: "test-installer"}
		p := wasmplugin.Bundled{Name: "bundled", Type: abi.TypePrioritizer, SHA256: wasm.Digest(mod), Compressed: zstd(mod), Config: []byte(`{"k":"v"}`)}
		Expect(inst.Apply(ctx, p)).To(Succeed())
		Expect(inst.Apply(ctx, p)).To(Succeed(), "applying again changes nothing")
		DeferCleanup(func(ctx SpecContext) { Expect(inst.Remove(ctx, "bundled")).To(Succeed()) })
		Eventually(readyReason(ctx, "bundled")).Should(Equal("True/Loaded"))
		Expect(callVersion(ctx, "bundled")).To(Equal("v1"))
		wp := getPlugin(ctx, "bundled")
		Expect(wp.Labels).To(HaveKeyWithValue(wasmplugin.InstalledByLabel, "test-installer"))
		Expect(wp.Spec.Source.ConfigMap).To(Equal(&flotillav1alpha1.ConfigMapSource{
			Namespace: "bundled-plugins", Name: wasmplugin.ConfigMapName("bundled"), Key: flotillav1alpha1.SourceKeyWasmZstd}))
		Expect(string(wp.Spec.PluginConfig.Raw)).To(Equal(`{"k":"v"}`))

		// Another installer's (or an admin's) plugin of the same name is left alone.
		other := wasmplugin.Installer{Client: k8s, Namespace: "bundled-plugins", FieldManager: "test-installer", InstalledBy: "someone-else"}
		Expect(other.Remove(ctx, "bundled")).To(Succeed())
		Expect(k8s.Get(ctx, types.NamespacedName{Name: "bundled"}, &flotillav1alpha1.WasmPlugin{})).To(Succeed())

		Expect(inst.Remove(ctx, "bundled")).To(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: "bundled"}, &flotillav1alpha1.WasmPlugin{}))).To(BeTrue())
		err := k8s.Get(ctx, types.NamespacedName{Namespace: "bundled-plugins", Name: wasmplugin.ConfigMapName("bundled")}, &corev1.ConfigMap{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		Eventually(func() bool { _, ok := registry.Get("bundled"); return ok }).Should(BeFalse())
		Expect(inst.Remove(ctx, "bundled")).To(Succeed(), "removing what is gone is fine")
	})

	It("installs several plugins sharing one module ConfigMap", func(ctx SpecContext) {
		mod := wasmtest.Misbehave(GinkgoT(), wasmtest.V1)
		inst := wasmplugin.Installer{Client: k8s, Namespace: "bundled-plugins", FieldManager: "test-installer", InstalledBy: "test-installer"}
		module := wasmplugin.Bundled{Name: "shared-module", Type: abi.TypePrioritizer, SHA256: wasm.Digest(mod), Compressed: zstd(mod)}
		Expect(inst.ApplyModule(ctx, module)).To(Succeed())
		cmKey := types.NamespacedName{Namespace: "bundled-plugins", Name: wasmplugin.ConfigMapName("shared-module")}
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cmKey.Namespace, Name: cmKey.Name}})).To(Succeed())
		})
		for _, name := range []string{"shared-a", "shared-b"} {
			p := module
			p.Name, p.Source, p.Compressed, p.Config = name, "shared-module", nil, []byte(`{"which":"`+name+`"}`)
			Expect(inst.ApplyPlugin(ctx, p)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(inst.Remove(ctx, name)).To(Succeed()) })
		}
		for _, name := range []string{"shared-a", "shared-b"} {
			Eventually(readyReason(ctx, name)).Should(Equal("True/Loaded"))
			wp := getPlugin(ctx, name)
			Expect(wp.Spec.Source.ConfigMap.Name).To(Equal(cmKey.Name))
			Expect(string(wp.Spec.PluginConfig.Raw)).To(Equal(`{"which":"` + name + `"}`))
		}
		// The plugins' own ConfigMap names were never written; removing one plugin keeps the shared module.
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: "bundled-plugins", Name: wasmplugin.ConfigMapName("shared-a")}, &corev1.ConfigMap{}))).To(BeTrue())
		Expect(inst.Remove(ctx, "shared-a")).To(Succeed())
		Expect(k8s.Get(ctx, cmKey, &corev1.ConfigMap{})).To(Succeed())
		Expect(getPlugin(ctx, "shared-b").Spec.Source.ConfigMap.Name).To(Equal(cmKey.Name))
	})
})

var _ = Describe("WasmPlugin controller limited to some types", func() {
	It("loads only WasmPlugins of its types and drops one whose type changes", func(ctx SpecContext) {
		guest, err := wasmtest.Build("feedback", "")
		Expect(err).NotTo(HaveOccurred())
		putModule(ctx, "typed-extractor", flotillav1alpha1.SourceKeyWasmZstd, zstd(guest))
		createPlugin(ctx, "typed-extractor", "typed-extractor", pluginOpts{typ: flotillav1alpha1.PluginTypeFeedbackExtractor})
		putModule(ctx, "typed-prioritizer", flotillav1alpha1.SourceKeyWasmZstd, zstd(wasmtest.Misbehave(GinkgoT(), wasmtest.V1)))
		createPlugin(ctx, "typed-prioritizer", "typed-prioritizer", pluginOpts{})
		Eventually(readyReason(ctx, "typed-extractor")).Should(Equal("True/Loaded"))
		Eventually(readyReason(ctx, "typed-prioritizer")).Should(Equal("True/Loaded"))

		reader, err := client.New(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		own := wasm.NewRegistry()
		r := &wasmplugin.Reconciler{Client: k8s, Reader: reader, Engine: engine, Registry: own, Types: []abi.PluginType{abi.TypeFeedbackExtractor}}
		DeferCleanup(func(ctx SpecContext) {
			for _, name := range []string{"typed-extractor", "typed-prioritizer"} {
				_, err := own.Remove(ctx, name)
				Expect(err).NotTo(HaveOccurred())
			}
		})
		for _, name := range []string{"typed-extractor", "typed-prioritizer"} {
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			Expect(err).NotTo(HaveOccurred())
		}
		m, ok := own.Get("typed-extractor")
		Expect(ok).To(BeTrue())
		Expect(m.FeedbackResources()).To(Equal([]abi.GroupKind{{Group: "apps", Kind: "Deployment"}}))
		Expect(own.FeedbackExtractors("apps", "Deployment")).To(ConsistOf(m))
		_, ok = own.Get("typed-prioritizer")
		Expect(ok).To(BeFalse(), "a Prioritizer was loaded by a FeedbackExtractor-only controller")

		// Its type changes: the limited controller stops serving it.
		wp := getPlugin(ctx, "typed-extractor")
		wp.Spec.Type = flotillav1alpha1.PluginTypePrioritizer
		Expect(k8s.Update(ctx, wp)).To(Succeed())
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "typed-extractor"}})
		Expect(err).NotTo(HaveOccurred())
		_, ok = own.Get("typed-extractor")
		Expect(ok).To(BeFalse())
		Expect(own.FeedbackExtractors("apps", "Deployment")).To(BeEmpty())
	})
})
