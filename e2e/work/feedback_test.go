package work

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/klusterlet/plugins"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// The WellKnownStatus feedback rule is served by FeedbackExtractor Wasm plugins the
// klusterlet loads on its managed cluster: its own feedback-wellknown, and any an admin
// installs there directly or through a ManifestWork.

// extractorPluginNamespace holds the test plugins' ConfigMaps on the managed cluster.
const extractorPluginNamespace = "feedback-plugins"

var (
	extractorBuild     sync.Once
	extractorWasmBytes []byte
	tinyBuild          sync.Once
	tinyWasmBytes      []byte
)

// extractorWasm is testdata/extractor (Go, ~2 MB), built once.
func extractorWasm() []byte {
	GinkgoHelper()
	extractorBuild.Do(func() {
		out := filepath.Join(os.TempDir(), "flotilla-e2e-work-extractor.wasm")
		cmd := exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", out, "./testdata/extractor")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		b, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "building the extractor test plugin: %s", b)
		extractorWasmBytes, err = os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
	})
	Expect(extractorWasmBytes).NotTo(BeEmpty(), "the extractor test plugin failed to build earlier")
	return extractorWasmBytes
}

// tinyWasm is testdata/tiny (C, a few KB), built once with clang and wasi-libc, which `make
// test` installs (`make wasi-toolchain`).
func tinyWasm() []byte {
	GinkgoHelper()
	tinyBuild.Do(func() {
		out := filepath.Join(os.TempDir(), "flotilla-e2e-work-tiny.wasm")
		cmd := exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-Wextra", "-Werror",
			"-Wl,--strip-all", "-o", out, "./testdata/tiny/extractor.c")
		b, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "building the C test plugin (run `make wasi-toolchain` for clang, lld and wasi-libc): %s", b)
		tinyWasmBytes, err = os.ReadFile(out)
		Expect(err).NotTo(HaveOccurred())
	})
	Expect(tinyWasmBytes).NotTo(BeEmpty(), "the C test plugin failed to build earlier")
	return tinyWasmBytes
}

// extractorObjects are the ConfigMap (zstd module) and WasmPlugin of a FeedbackExtractor
// with pluginConfig config ("" for none), as an admin would write them.
func extractorObjects(name string, module []byte, config string) (*corev1.ConfigMap, *flotillav1alpha1.WasmPlugin) {
	GinkgoHelper()
	zst, err := wasm.Compress(module)
	Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: extractorPluginNamespace, Name: name},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: zst}}
	wp := &flotillav1alpha1.WasmPlugin{TypeMeta: metav1.TypeMeta{APIVersion: flotillav1alpha1.GroupVersion.String(), Kind: "WasmPlugin"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flotillav1alpha1.WasmPluginSpec{
			Type:   flotillav1alpha1.PluginTypeFeedbackExtractor,
			Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: extractorPluginNamespace, Name: name, Key: flotillav1alpha1.SourceKeyWasmZstd}},
			SHA256: wasm.Digest(module),
		}}
	if config != "" {
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(config)}
	}
	return cm, wp
}

// installExtractor creates a FeedbackExtractor on the managed cluster directly, removed
// after the spec, and waits until the klusterlet serves it.
func installExtractor(cluster, name string, module []byte, config string) {
	GinkgoHelper()
	c := managed[cluster].client
	Expect(client.IgnoreAlreadyExists(c.Create(suiteCtx, namespace(extractorPluginNamespace)))).To(Succeed())
	cm, wp := extractorObjects(name, module, config)
	Expect(c.Create(suiteCtx, cm)).To(Succeed())
	Expect(c.Create(suiteCtx, wp)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, wp))).To(Succeed())
		Expect(client.IgnoreNotFound(c.Delete(ctx, cm))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	Eventually(pluginReady(cluster, name)).Should(cond(metav1.ConditionTrue, "Loaded"))
}

// pluginReady is the Ready condition of WasmPlugin name on the managed cluster, for its
// current generation.
func pluginReady(cluster, name string) func(g Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		wp := &flotillav1alpha1.WasmPlugin{}
		g.Expect(managed[cluster].client.Get(suiteCtx, client.ObjectKey{Name: name}, wp)).To(Succeed())
		c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
		if c == nil || c.ObservedGeneration != wp.Generation {
			return nil
		}
		return c
	}
}

// wellKnownStatus asks for the WellKnownStatus feedback of one resource of w.
func wellKnownStatus(w *workv1.ManifestWork, id workv1.ResourceIdentifier) *workv1.ManifestWork {
	w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
		ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}})
	return w
}

// feedbackValues are the feedback values of manifest ordinal of w.
func feedbackValues(w *workv1.ManifestWork, ordinal int32) func(g Gomega) []workv1.FeedbackValue {
	return func(g Gomega) []workv1.FeedbackValue {
		for _, m := range getWork(g, w).Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Ordinal == ordinal {
				return m.StatusFeedbacks.Values
			}
		}
		return nil
	}
}

func integerValue(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
}

func stringValue(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
}

const certificateCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {kind: Certificate, listKind: CertificateList, plural: certificates, singular: certificate}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

var _ = Describe("WellKnownStatus feedback", func() {
	It("reports a Deployment's ReadyReplicas, Replicas and AvailableReplicas with the klusterlet's own extractor", func(ctx SpecContext) {
		// The klusterlet installed and loaded feedback-wellknown on its managed cluster.
		Eventually(pluginReady(cluster1, "feedback-wellknown")).Should(cond(metav1.ConditionTrue, "Loaded"))
		wp := &flotillav1alpha1.WasmPlugin{}
		Expect(managed[cluster1].client.Get(ctx, client.ObjectKey{Name: "feedback-wellknown"}, wp)).To(Succeed())
		Expect(wp.Labels).To(HaveKeyWithValue(wasmplugin.InstalledByLabel, plugins.InstalledBy))
		Expect(wp.Spec.Source.ConfigMap.Namespace).To(Equal(registration.DefaultAgentNamespace))
		// Extractors run on managed clusters: the hub does not install it.
		err := hubClient.Get(ctx, client.ObjectKey{Name: "feedback-wellknown"}, &flotillav1alpha1.WasmPlugin{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub's WasmPlugin feedback-wellknown: %v", err)

		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("wellknown")))).To(Succeed())
		dep := deployment("wellknown", "web", "nginx")
		dep.Spec.Replicas = ptr.To[int32](2)
		w := createWork(wellKnownStatus(newWork(cluster1, "wellknown-deployment", dep),
			workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "wellknown", Name: "web"}))
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete))

		// The managed cluster's deployment controller, scheduler and KWOK Node make the two
		// replicas ready, as on a real cluster.
		Eventually(feedbackValues(w, 0)).Should(ConsistOf(
			integerValue(workv1.WellKnownReadyReplicas, 2),
			integerValue(workv1.WellKnownReplicas, 2),
			integerValue(workv1.WellKnownAvailableReplicas, 2)))
		Expect(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)(Default)).To(cond(metav1.ConditionTrue, "StatusFeedbackSynced"))
	}, SpecTimeout(5*time.Minute))

	It("serves a new kind with a third party's extractor installed on the managed cluster", func(ctx SpecContext) {
		c := managed[cluster1].client
		crd := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(certificateCRD), &crd.Object)).To(Succeed())
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, crd))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, crd))).To(Succeed()) }, NodeTimeout(2*time.Minute))
		// As cert-manager's chart does: its kinds aggregated to admin, which the work agent has.
		edit := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-edit",
			Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, edit))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, edit))).To(Succeed()) }, NodeTimeout(2*time.Minute))
		installExtractor(cluster1, "certificates", extractorWasm(), `{"group": "cert-manager.io", "kind": "Certificate"}`)

		Expect(client.IgnoreAlreadyExists(c.Create(ctx, namespace("certs")))).To(Succeed())
		cert := `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {namespace: certs, name: web}
spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: letsencrypt}}
`
		w := createWork(wellKnownStatus(newWork(cluster1, "wellknown-certificate", cert),
			workv1.ResourceIdentifier{Group: "cert-manager.io", Resource: "certificates", Namespace: "certs", Name: "web"}))
		Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(cond(metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete))
		// No status yet: no values, and that is no failure.
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(cond(metav1.ConditionTrue, "StatusFeedbackSynced"))
		Expect(feedbackValues(w, 0)(Default)).To(BeEmpty())

		// cert-manager (not running here) would report the issued certificate like this.
		Eventually(func(g Gomega) {
			live := &unstructured.Unstructured{}
			live.SetAPIVersion("cert-manager.io/v1")
			live.SetKind("Certificate")
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "certs", Name: "web"}, live)).To(Succeed())
			live.Object["status"] = map[string]any{
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready"}},
				"notAfter":   "2027-01-01T00:00:00Z",
			}
			g.Expect(c.Status().Update(ctx, live)).To(Succeed())
		}).Should(Succeed())
		Eventually(feedbackValues(w, 0)).Should(ConsistOf(stringValue("Ready", "True"), stringValue("NotAfter", "2027-01-01T00:00:00Z")))
	}, SpecTimeout(5*time.Minute))

	It("serves a new kind with an extractor sent through a ManifestWork, and stops when the work is deleted", func(ctx SpecContext) {
		// The plugin's own work: its ConfigMap and WasmPlugin, applied by the work agent.
		module := tinyWasm()
		pluginCM, pluginWP := extractorObjects("tiny", module, "")
		pluginCM.BinaryData = map[string][]byte{flotillav1alpha1.SourceKeyWasm: module}
		pluginCM.Namespace = registration.DefaultAgentNamespace
		pluginWP.Spec.Source.ConfigMap = &flotillav1alpha1.ConfigMapSource{Namespace: registration.DefaultAgentNamespace, Name: "tiny", Key: flotillav1alpha1.SourceKeyWasm}
		pw := newWork(cluster1, "tiny-extractor", pluginCM, pluginWP)
		size := 0
		for _, m := range pw.Spec.Workload.Manifests {
			size += len(m.Raw)
		}
		Expect(size).To(BeNumerically("<", 500*1024), "OCM's hub limits a work's manifests to 500 KiB")
		pw = createWork(pw)
		Eventually(workCondition(pw, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, workv1.WorkAppliedReasonComplete))
		Eventually(pluginReady(cluster1, "tiny")).Should(cond(metav1.ConditionTrue, "Loaded"))

		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("tiny")))).To(Succeed())
		w := createWork(wellKnownStatus(newWork(cluster1, "wellknown-configmap", configMap("tiny", "settings", map[string]string{"k": "v"})),
			workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "tiny", Name: "settings"}))
		Eventually(feedbackValues(w, 0)).Should(ContainElements(stringValue("ExtractedBy", "tiny"),
			HaveField("Name", "InputBytes")))
		Expect(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)(Default)).To(cond(metav1.ConditionTrue, "StatusFeedbackSynced"))

		// Deleting the plugin's work removes the plugin: nothing serves ConfigMaps any more.
		Expect(hubClient.Delete(ctx, pw)).To(Succeed())
		Eventually(gone(cluster1, &flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "tiny"}})).Should(BeTrue())
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(And(cond(metav1.ConditionFalse, "StatusFeedbackSyncFailed"),
			HaveField("Message", ContainSubstring("no FeedbackExtractor plugin serves ConfigMap (core group)"))))
		Expect(manifestCondition(w, 0, workv1.ManifestApplied)(Default)).To(cond(metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete))
	}, SpecTimeout(5*time.Minute))

	It("reports a trapping extractor as StatusFeedbackSynced=False naming it, and keeps the manifest applied", func(ctx SpecContext) {
		installExtractor(cluster1, "trapping", extractorWasm(), `{"group": "", "kind": "ServiceAccount", "mode": "trap"}`)
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("trapping")))).To(Succeed())
		sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "trapping", Name: "robot"}}
		w := createWork(wellKnownStatus(newWork(cluster1, "wellknown-trap", sa),
			workv1.ResourceIdentifier{Resource: "serviceaccounts", Namespace: "trapping", Name: "robot"}))
		// Its failurePolicy is Fail (the default): its failure is the rule's, no other plugin's.
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(And(cond(metav1.ConditionFalse, "StatusFeedbackSyncFailed"),
			HaveField("Message", HavePrefix(`Sync status feedback failed: WellKnownStatus of ServiceAccount (core group): wasm plugin "trapping": export extract_feedback: Trap: `))))
		Expect(manifestCondition(w, 0, workv1.ManifestApplied)(Default)).To(cond(metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete))
		Expect(workCondition(w, workv1.WorkApplied)(Default)).To(cond(metav1.ConditionTrue, workv1.WorkAppliedReasonComplete))
		Expect(live(cluster1, sa)(Default)).NotTo(BeNil())
	}, SpecTimeout(5*time.Minute))

	It("reports a kind no extractor serves as StatusFeedbackSynced=False, and applies it regardless", func(ctx SpecContext) {
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(ctx, namespace("unserved")))).To(Succeed())
		secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "unserved", Name: "token"}, StringData: map[string]string{"token": "t"}}
		w := createWork(wellKnownStatus(newWork(cluster1, "wellknown-unserved", secret),
			workv1.ResourceIdentifier{Resource: "secrets", Namespace: "unserved", Name: "token"}))
		Eventually(manifestCondition(w, 0, workv1.ManifestStatusFeedbackSynced)).Should(And(cond(metav1.ConditionFalse, "StatusFeedbackSyncFailed"),
			HaveField("Message", ContainSubstring("WellKnownStatus: no FeedbackExtractor plugin serves Secret (core group)"))))
		Expect(manifestCondition(w, 0, workv1.ManifestApplied)(Default)).To(cond(metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete))
		Eventually(func() error {
			return managed[cluster1].client.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})
