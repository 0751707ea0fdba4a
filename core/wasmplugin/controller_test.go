package wasmplugin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func zstd(b []byte) []byte {
	GinkgoHelper()
	out, err := wasm.Compress(b)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// putModule creates or replaces ConfigMap name with blob under key.
func putModule(ctx context.Context, name, key string, blob []byte) {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: hubNamespace, Name: name}}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.BinaryData = map[string][]byte{key: blob}
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		return
	}
	Expect(err).NotTo(HaveOccurred())
	cm.BinaryData = map[string][]byte{key: blob}
	Expect(k8s.Update(ctx, cm)).To(Succeed())
}

type pluginOpts struct {
	typ    flotillav1alpha1.WasmPluginType
	key    string
	sha256 string
	config string
	limits *flotillav1alpha1.WasmPluginLimits
}

func createPlugin(ctx context.Context, name, configMap string, o pluginOpts) *flotillav1alpha1.WasmPlugin {
	GinkgoHelper()
	if o.typ == "" {
		o.typ = flotillav1alpha1.PluginTypePrioritizer
	}
	if o.key == "" {
		// A Go-built module is ~2 MB, over the 1 MiB ConfigMap limit, so tests store it
		// compressed as `flotilla plugin push` does.
		o.key = flotillav1alpha1.SourceKeyWasmZstd
	}
	wp := &flotillav1alpha1.WasmPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flotillav1alpha1.WasmPluginSpec{
			Type:   o.typ,
			Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: hubNamespace, Name: configMap, Key: o.key}},
			SHA256: o.sha256,
			Limits: o.limits,
		},
	}
	if o.config != "" {
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(o.config)}
	}
	Expect(k8s.Create(ctx, wp)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, wp))).To(Succeed())
		Eventually(func() bool { _, ok := registry.Get(name); return ok }).WithContext(ctx).Should(BeFalse())
	})
	return wp
}

func getPlugin(ctx context.Context, name string) *flotillav1alpha1.WasmPlugin {
	GinkgoHelper()
	wp := &flotillav1alpha1.WasmPlugin{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, wp)).To(Succeed())
	return wp
}

// readyReason polls the Ready condition as "Status/Reason" for the current generation.
func readyReason(ctx context.Context, name string) func() string {
	return func() string {
		wp := &flotillav1alpha1.WasmPlugin{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, wp); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != wp.Generation || wp.Status.ObservedGeneration != wp.Generation {
			return "pending"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func readyMessage(ctx context.Context, name string) string {
	GinkgoHelper()
	c := meta.FindStatusCondition(getPlugin(ctx, name).Status.Conditions, flotillav1alpha1.ConditionReady)
	Expect(c).NotTo(BeNil())
	return c.Message
}

func callVersion(ctx context.Context, name string) string {
	out, err := registry.Call(ctx, name, "version", nil)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

var _ = Describe("WasmPlugin", func() {
	var v1, v2 []byte
	BeforeEach(func() {
		v1 = wasmtest.Misbehave(GinkgoT(), wasmtest.V1)
		v2 = wasmtest.Misbehave(GinkgoT(), wasmtest.Variant{Version: "v2", ABIVersion: "1"})
	})

	It("loads a zstd module with a matching sha256, reports it in status and serves it", func(ctx SpecContext) {
		putModule(ctx, "good", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "good", "good", pluginOpts{key: flotillav1alpha1.SourceKeyWasmZstd, sha256: wasm.Digest(v1), config: `{"weight":3}`})
		Eventually(readyReason(ctx, "good")).Should(Equal("True/Loaded"))

		wp := getPlugin(ctx, "good")
		Expect(wp.Status.Digest).To(Equal(wasm.Digest(v1)))
		Expect(wp.Status.ShortDigest).To(Equal(wasm.Digest(v1)[:12]))
		Expect(wp.Status.Size).To(BeEquivalentTo(len(v1)))
		Expect(wp.Status.ABIVersion).To(BeEquivalentTo(1))
		Expect(wp.Spec.FailurePolicy).To(Equal(flotillav1alpha1.FailurePolicyFail), "defaulted by the CRD")

		m, ok := registry.Get("good")
		Expect(ok).To(BeTrue())
		Expect(m.Digest()).To(Equal(wasm.Digest(v1)))
		Expect(callVersion(ctx, "good")).To(Equal("v1"))
		out, err := registry.Call(ctx, "good", "config", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(MatchJSON(`{"weight":3}`))
		Expect(m.Deterministic()).To(BeFalse(), "only ManifestTransformers run without host clocks")

		Expect(wasmplugin.Serving(ctx, k8s, registry, "good", flotillav1alpha1.PluginTypePrioritizer)).To(BeTrue())
		_, err = wasmplugin.Serving(ctx, k8s, registry, "good", flotillav1alpha1.PluginTypeAddOnTemplate)
		Expect(err).To(MatchError(ContainSubstring("WasmPlugin good: spec.type is Prioritizer, not AddOnTemplate")))
	})

	It("loads a ManifestTransformer deterministic, and Serving says when it serves the current spec", func(ctx SpecContext) {
		putModule(ctx, "transformer", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		wp := createPlugin(ctx, "transformer", "transformer", pluginOpts{typ: flotillav1alpha1.PluginTypeManifestTransformer})
		Eventually(readyReason(ctx, "transformer")).Should(Equal("True/Loaded"))
		m, ok := registry.Get("transformer")
		Expect(ok).To(BeTrue())
		Expect(m.Type()).To(Equal(abi.TypeManifestTransformer))
		Expect(m.Deterministic()).To(BeTrue())
		Expect(wasmplugin.Serving(ctx, k8s, registry, "transformer", flotillav1alpha1.PluginTypeManifestTransformer)).To(BeTrue())

		// A newer generation than Ready observed: loading, not serving.
		wp = getPlugin(ctx, "transformer")
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(`{"reject":true}`)}
		Expect(k8s.Update(ctx, wp)).To(Succeed())
		Eventually(readyReason(ctx, "transformer")).Should(Equal("False/ConfigRejected"))
		_, err := wasmplugin.Serving(ctx, k8s, registry, "transformer", flotillav1alpha1.PluginTypeManifestTransformer)
		Expect(err).To(MatchError(ContainSubstring("WasmPlugin transformer is not ready: ConfigRejected")))

		_, err = wasmplugin.Serving(ctx, k8s, registry, "absent", flotillav1alpha1.PluginTypeManifestTransformer)
		Expect(err).To(MatchError(ContainSubstring("reading WasmPlugin absent")))
	})

	It("hot-reloads a changed ConfigMap, swapping the module and notifying subscribers", func(ctx SpecContext) {
		events, cancel := registry.Subscribe(abi.TypePrioritizer)
		defer cancel()
		putModule(ctx, "reload", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "reload", "reload", pluginOpts{})
		Eventually(readyReason(ctx, "reload")).Should(Equal("True/Loaded"))
		Eventually(events).Should(Receive(Equal(wasm.Event{Type: abi.TypePrioritizer, Name: "reload", Digest: wasm.Digest(v1)})))
		first, _ := registry.Get("reload")

		putModule(ctx, "reload", flotillav1alpha1.SourceKeyWasmZstd, zstd(v2))
		Eventually(events).Should(Receive(Equal(wasm.Event{Type: abi.TypePrioritizer, Name: "reload", Digest: wasm.Digest(v2)})))
		Expect(callVersion(ctx, "reload")).To(Equal("v2"))
		Eventually(func() string { return getPlugin(ctx, "reload").Status.Digest }).Should(Equal(wasm.Digest(v2)))
		_, err := first.Call(ctx, "version", nil)
		Expect(wasm.CallErrorKindOf(err)).To(Equal(wasm.KindClosed), "the replaced module is closed")
	})

	It("refuses a module whose sha256 differs and serves nothing", func(ctx SpecContext) {
		putModule(ctx, "mismatch", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "mismatch", "mismatch", pluginOpts{sha256: wasm.Digest(v2)})
		Eventually(readyReason(ctx, "mismatch")).Should(Equal("False/DigestMismatch"))
		Expect(readyMessage(ctx, "mismatch")).To(And(ContainSubstring(wasm.Digest(v1)), ContainSubstring(wasm.Digest(v2))))
		Expect(getPlugin(ctx, "mismatch").Status.Digest).To(BeEmpty())
		_, ok := registry.Get("mismatch")
		Expect(ok).To(BeFalse())
		// Users can tell it is configured but broken, and with which failure policy.
		Expect(registry.Unavailable(abi.TypePrioritizer)).To(ContainElement(And(
			HaveField("Name", "mismatch"), HaveField("Reason", wasm.ReasonDigestMismatch), HaveField("FailurePolicy", wasm.FailurePolicyFail))))
		Expect(k8s.Delete(ctx, getPlugin(ctx, "mismatch"))).To(Succeed())
		Eventually(func() []wasm.Unavailable { return registry.Unavailable(abi.TypePrioritizer) }).ShouldNot(ContainElement(HaveField("Name", "mismatch")))
	})

	It("reports a missing ConfigMap, and loads once the ConfigMap appears", func(ctx SpecContext) {
		createPlugin(ctx, "late-source", "late-source", pluginOpts{})
		Eventually(readyReason(ctx, "late-source")).Should(Equal("False/SourceNotFound"))
		Expect(readyMessage(ctx, "late-source")).To(ContainSubstring(hubNamespace + "/late-source not found"))

		putModule(ctx, "late-source", "other-key.wasm", []byte("not this one"))
		Eventually(func() string { return readyMessage(ctx, "late-source") }).Should(ContainSubstring(`no key "plugin.wasm.zst"`))
		putModule(ctx, "late-source", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		Eventually(readyReason(ctx, "late-source")).Should(Equal("True/Loaded"))
		Expect(callVersion(ctx, "late-source")).To(Equal("v1"))
	})

	It("stops serving a plugin whose ConfigMap is deleted", func(ctx SpecContext) {
		putModule(ctx, "vanishing", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "vanishing", "vanishing", pluginOpts{})
		Eventually(readyReason(ctx, "vanishing")).Should(Equal("True/Loaded"))
		Expect(k8s.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: hubNamespace, Name: "vanishing"}})).To(Succeed())
		Eventually(readyReason(ctx, "vanishing")).Should(Equal("False/SourceNotFound"))
		Eventually(func() bool { _, ok := registry.Get("vanishing"); return ok }).Should(BeFalse())
	})

	It("reports a missing export for the plugin's type", func(ctx SpecContext) {
		putModule(ctx, "wrong-type", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "wrong-type", "wrong-type", pluginOpts{typ: flotillav1alpha1.PluginTypeCSRApproval})
		Eventually(readyReason(ctx, "wrong-type")).Should(Equal("False/MissingExport"))
		Expect(readyMessage(ctx, "wrong-type")).To(ContainSubstring("review_csr"))
	})

	It("reports a config rejected by validate_config, then loads once the config is fixed", func(ctx SpecContext) {
		putModule(ctx, "picky", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "picky", "picky", pluginOpts{config: `{"reject":true}`})
		Eventually(readyReason(ctx, "picky")).Should(Equal("False/ConfigRejected"))
		Expect(readyMessage(ctx, "picky")).To(ContainSubstring("config rejected: field reject is set"))

		wp := getPlugin(ctx, "picky")
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(`{"fine":true}`)}
		Expect(k8s.Update(ctx, wp)).To(Succeed())
		Eventually(readyReason(ctx, "picky")).Should(Equal("True/Loaded"))
	})

	It("reports a validate_config that runs out of time, without caching the verdict", func(ctx SpecContext) {
		putModule(ctx, "slow-check", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "slow-check", "slow-check", pluginOpts{config: `{"hang":true}`,
			limits: &flotillav1alpha1.WasmPluginLimits{Timeout: &metav1.Duration{Duration: 200e6}}})
		Eventually(readyReason(ctx, "slow-check")).Should(Equal("False/ConfigRejected"))
		Expect(readyMessage(ctx, "slow-check")).To(ContainSubstring("200ms call timeout"))

		// A verdict that depends on timing is retried: the same inputs load the module again and
		// the reconcile asks to be requeued. A definite rejection is remembered and not retried.
		r, loads := ownReconciler()
		for i := 1; i <= 2; i++ {
			res, err := r.Reconcile(loads.ctx(ctx), reconcile.Request{NamespacedName: types.NamespacedName{Name: "slow-check"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(BeNumerically(">", 0))
			Expect(loads.count("WasmPlugin failed to load")).To(Equal(i), "load attempts after %d reconciles of the same inputs", i)
		}

		putModule(ctx, "rejecting", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "rejecting", "rejecting", pluginOpts{config: `{"reject":true}`})
		Eventually(readyReason(ctx, "rejecting")).Should(Equal("False/ConfigRejected"))
		for range 2 {
			res, err := r.Reconcile(loads.ctx(ctx), reconcile.Request{NamespacedName: types.NamespacedName{Name: "rejecting"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.RequeueAfter).To(BeZero())
		}
		Expect(loads.count("WasmPlugin failed to load")).To(Equal(3), "a definite rejection is loaded once, then remembered")
	})

	It("reports a decompression bomb as too large", func(ctx SpecContext) {
		putModule(ctx, "bomb", flotillav1alpha1.SourceKeyWasmZstd, zstd(make([]byte, 4*maxModuleBytes)))
		createPlugin(ctx, "bomb", "bomb", pluginOpts{key: flotillav1alpha1.SourceKeyWasmZstd})
		Eventually(readyReason(ctx, "bomb")).Should(Equal("False/TooLarge"))
	})

	It("reports bytes that are not Wasm as an invalid module", func(ctx SpecContext) {
		putModule(ctx, "junk", flotillav1alpha1.SourceKeyWasm, []byte("#!/bin/sh\necho not wasm\n"))
		createPlugin(ctx, "junk", "junk", pluginOpts{key: flotillav1alpha1.SourceKeyWasm})
		Eventually(readyReason(ctx, "junk")).Should(Equal("False/InvalidModule"))
	})

	It("clamps limits above the hub maxima and says so", func(ctx SpecContext) {
		putModule(ctx, "greedy", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		huge := resource.MustParse("64Gi")
		createPlugin(ctx, "greedy", "greedy", pluginOpts{limits: &flotillav1alpha1.WasmPluginLimits{Memory: &huge, Timeout: &metav1.Duration{Duration: 24 * 3600e9}}})
		Eventually(readyReason(ctx, "greedy")).Should(Equal("True/Loaded"))
		Expect(readyMessage(ctx, "greedy")).To(And(ContainSubstring("limits.memory"), ContainSubstring("clamped"), ContainSubstring("limits.timeout")))
		m, _ := registry.Get("greedy")
		Expect(m.Limits().MemoryBytes).To(Equal(engine.Options().MaxMemoryBytes))
	})

	It("reports non-positive limits as an invalid spec", func(ctx SpecContext) {
		putModule(ctx, "zero-limit", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		zero := resource.MustParse("0")
		createPlugin(ctx, "zero-limit", "zero-limit", pluginOpts{limits: &flotillav1alpha1.WasmPluginLimits{Memory: &zero}})
		Eventually(readyReason(ctx, "zero-limit")).Should(Equal("False/InvalidSpec"))
		Expect(readyMessage(ctx, "zero-limit")).To(ContainSubstring("spec.limits.memory"))
	})

	It("stops serving a deleted WasmPlugin", func(ctx SpecContext) {
		putModule(ctx, "deleted", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		wp := createPlugin(ctx, "deleted", "deleted", pluginOpts{})
		Eventually(readyReason(ctx, "deleted")).Should(Equal("True/Loaded"))
		Expect(k8s.Delete(ctx, wp)).To(Succeed())
		Eventually(func() bool { _, ok := registry.Get("deleted"); return ok }).Should(BeFalse())
	})

	It("keeps the serving module when reading the source fails transiently", func(ctx SpecContext) {
		putModule(ctx, "flaky", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "flaky", "flaky", pluginOpts{})
		Eventually(readyReason(ctx, "flaky")).Should(Equal("True/Loaded"))

		// A second reconciler with its own registry, whose ConfigMap reads can be made to fail.
		var failing atomic.Bool
		reader, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		flaky := interceptor.NewClient(reader, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, isCM := obj.(*corev1.ConfigMap); isCM && failing.Load() {
					return apierrors.NewServiceUnavailable("etcd is having a moment")
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		own := wasm.NewRegistry()
		r := &wasmplugin.Reconciler{Client: k8s, Reader: flaky, Engine: engine, Registry: own}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "flaky"}}
		_, err = r.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		before, ok := own.Get("flaky")
		Expect(ok).To(BeTrue())

		failing.Store(true)
		_, err = r.Reconcile(ctx, req)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsServiceUnavailable(errors.Unwrap(err)) || strings.Contains(err.Error(), "etcd is having a moment")).To(BeTrue())
		after, ok := own.Get("flaky")
		Expect(ok).To(BeTrue())
		Expect(after).To(BeIdenticalTo(before))
		out, err := own.Call(ctx, "flaky", "version", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("v1"))
		Expect(readyReason(ctx, "flaky")()).To(Equal("True/Loaded"))
		_, err = own.Remove(ctx, "flaky")
		Expect(err).NotTo(HaveOccurred())
	})

	It("does not recompile when nothing changed", func(ctx SpecContext) {
		putModule(ctx, "stable", flotillav1alpha1.SourceKeyWasmZstd, zstd(v1))
		createPlugin(ctx, "stable", "stable", pluginOpts{})
		Eventually(readyReason(ctx, "stable")).Should(Equal("True/Loaded"))

		// A reconciler of its own, called directly, so each reconcile is observed as it finishes.
		own, loads := ownReconciler()
		// Quiet, as the manager runs it: the suite's controller reconciles the same plugin,
		// and a status write that loses that race is retried, not an error.
		r := apply.Quiet(own)
		req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "stable"}}
		_, err := r.Reconcile(loads.ctx(ctx), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(loads.count("WasmPlugin loaded")).To(Equal(1))
		m, ok := own.Registry.Get("stable")
		Expect(ok).To(BeTrue())

		// An unrelated change to the ConfigMap: a reconcile with the same inputs reuses the module.
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: hubNamespace, Name: "stable"}, cm)).To(Succeed())
		cm.Labels = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		_, err = r.Reconcile(loads.ctx(ctx), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(loads.count("WasmPlugin loaded")).To(Equal(1), "the second reconcile loaded the module again")
		cur, _ := own.Registry.Get("stable")
		Expect(cur).To(BeIdenticalTo(m))

		// A real change (the module bytes) does load again: the count above can move.
		putModule(ctx, "stable", flotillav1alpha1.SourceKeyWasmZstd, zstd(v2))
		_, err = r.Reconcile(loads.ctx(ctx), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(loads.count("WasmPlugin loaded")).To(Equal(2))
		cur, _ = own.Registry.Get("stable")
		Expect(cur).NotTo(BeIdenticalTo(m))
	})
})

// loadLog counts the reconciler's log lines by message.
type loadLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *loadLog) ctx(ctx context.Context) context.Context {
	return logf.IntoContext(ctx, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
		fmt.Fprintln(GinkgoWriter, prefix, args)
	}, funcr.Options{}))
}

func (l *loadLog) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, `"msg"="`+msg+`"`) {
			n++
		}
	}
	return n
}

// ownReconciler is a WasmPlugin reconciler with a registry of its own, beside the manager's,
// whose reconciles a test calls and observes directly. Its modules are closed after the spec.
func ownReconciler() (*wasmplugin.Reconciler, *loadLog) {
	reader, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	own := wasm.NewRegistry()
	DeferCleanup(func(ctx SpecContext) {
		for _, t := range []abi.PluginType{abi.TypePrioritizer, abi.TypeCSRApproval, abi.TypeFeedbackExtractor, abi.TypeAddOnTemplate} {
			for _, m := range own.List(t) {
				_, err := own.Remove(ctx, m.Name())
				Expect(err).NotTo(HaveOccurred())
			}
		}
	})
	return &wasmplugin.Reconciler{Client: k8s, Reader: reader, Engine: engine, Registry: own}, &loadLog{}
}

var _ = Describe("WasmPlugin API validation", func() {
	It("rejects specs the CRD schema forbids", func(ctx SpecContext) {
		cm := &flotillav1alpha1.ConfigMapSource{Namespace: hubNamespace, Name: "x"}
		for name, spec := range map[string]flotillav1alpha1.WasmPluginSpec{
			"no-source":    {Type: flotillav1alpha1.PluginTypePrioritizer},
			"bad-type":     {Type: "Scheduler", Source: flotillav1alpha1.WasmPluginSource{ConfigMap: cm}},
			"bad-sha":      {Type: flotillav1alpha1.PluginTypePrioritizer, SHA256: "abc", Source: flotillav1alpha1.WasmPluginSource{ConfigMap: cm}},
			"bad-policy":   {Type: flotillav1alpha1.PluginTypePrioritizer, FailurePolicy: "Retry", Source: flotillav1alpha1.WasmPluginSource{ConfigMap: cm}},
			"bad-key":      {Type: flotillav1alpha1.PluginTypePrioritizer, Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: hubNamespace, Name: "x", Key: "plugin.tar"}}},
			"no-namespace": {Type: flotillav1alpha1.PluginTypePrioritizer, Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Name: "x"}}},
		} {
			wp := &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "invalid-" + name}, Spec: spec}
			err := k8s.Create(ctx, wp)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want Invalid, got %v", name, err)
		}
	})

	It("defaults the key and the failure policy", func(ctx SpecContext) {
		wp := &flotillav1alpha1.WasmPlugin{
			ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
			Spec: flotillav1alpha1.WasmPluginSpec{Type: flotillav1alpha1.PluginTypeFeedbackExtractor,
				Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: hubNamespace, Name: "defaults"}}},
		}
		Expect(k8s.Create(ctx, wp)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, wp)).To(Succeed()) })
		got := getPlugin(ctx, "defaults")
		Expect(got.Spec.Source.ConfigMap.Key).To(Equal(flotillav1alpha1.SourceKeyWasm))
		Expect(got.Spec.FailurePolicy).To(Equal(flotillav1alpha1.FailurePolicyFail))
	})
})
