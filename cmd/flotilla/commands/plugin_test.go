package commands

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

// runFlotilla runs the root command with args and returns stdout, stderr and the error.
func runFlotilla(ctx context.Context, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPluginTestRunsTypedAndRawCalls(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	csr := writeFile(t, "approver.wasm", wasmtest.CSR(t))
	accepted := writeFile(t, "csr.json", []byte(`{"name":"csr-1","signerName":"kubernetes.io/kube-apiserver-client","username":"system:open-cluster-management:cluster1:agent","clusterName":"cluster1","clusterExists":true,"clusterAccepted":true}`))
	stdout, stderr, err := runFlotilla(ctx, "plugin", "test", csr, "--type", "CSRApproval", "--input", accepted)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(MatchJSON(`{"decision":"Approve","message":"cluster is accepted"}`))
	g.Expect(stderr).To(And(ContainSubstring("load "), ContainSubstring("first call "), ContainSubstring("warm call "), ContainSubstring("ABI version 1")))

	// Compressed modules are accepted; --export passes the input through unchanged.
	zst, err := wasm.Compress(wasmtest.Misbehave(t, wasmtest.V1))
	g.Expect(err).NotTo(HaveOccurred())
	mis := writeFile(t, "misbehave.wasm.zst", zst)
	raw := writeFile(t, "raw.json", []byte(`{"any":"bytes"}`))
	stdout, _, err = runFlotilla(ctx, "plugin", "test", mis, "--type", "Prioritizer", "--input", raw, "--export", "echo")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(Equal("{\"any\":\"bytes\"}\n"))

	// A prioritizer whose score output is not one int64 per cluster is named and explained.
	clusters := writeFile(t, "clusters.json", []byte(`[{"name":"a","labels":{"zone":"x"}},{"name":"b"}]`))
	_, _, err = runFlotilla(ctx, "plugin", "test", mis, "--type", "Prioritizer", "--input", clusters)
	g.Expect(err).To(HaveOccurred())
	g.Expect(wasm.CallErrorKindOf(err)).To(Equal(wasm.KindInvalidOutput))
	g.Expect(err.Error()).To(And(ContainSubstring(`"misbehave.wasm"`), ContainSubstring("score"), ContainSubstring("2 clusters")))

	// Input mistakes are reported as such, before the plugin runs.
	bad := writeFile(t, "bad.json", []byte(`[{"labels":{}}]`))
	_, _, err = runFlotilla(ctx, "plugin", "test", mis, "--type", "Prioritizer", "--input", bad)
	g.Expect(err).To(MatchError(ContainSubstring("clusters[0].name is empty")))
	_, _, err = runFlotilla(ctx, "plugin", "test", csr, "--type", "Scheduler", "--input", accepted)
	g.Expect(err).To(MatchError(ContainSubstring(`--type "Scheduler"`)))
	_, _, err = runFlotilla(ctx, "plugin", "test", accepted, "--type", "CSRApproval", "--input", accepted)
	g.Expect(err).To(MatchError(ContainSubstring("not a Wasm module")))
	// Load failures carry the host's reason.
	_, _, err = runFlotilla(ctx, "plugin", "test", csr, "--type", "Prioritizer", "--input", clusters)
	g.Expect(wasm.LoadReasonOf(err)).To(Equal(wasm.ReasonMissingExport))
}

func TestPluginTestManifestTransformer(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	sidecar := writeFile(t, "sidecar.wasm", wasmrun.Build(t, filepath.Join("..", "..", "..", "plugins", "examples", "transform-sidecar")))
	req := writeFile(t, "req.json", []byte(`{"cluster":{"name":"cluster1","claims":{"region.open-cluster-management.io":"eu"}},`+
		`"manifest":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"web"},"spec":{"containers":[{"name":"app","image":"a"}]}}}`))
	stdout, _, err := runFlotilla(ctx, "plugin", "test", sidecar, "--type", "ManifestTransformer", "--input", req, "--config", `{"image":"fluent-bit:3"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(MatchJSON(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"web"},"spec":{"containers":[{"name":"app","image":"a"},` +
		`{"name":"log-shipper","image":"fluent-bit:3","env":[{"name":"CLUSTER","value":"cluster1"},{"name":"REGION","value":"eu"}],"resources":{"requests":{"cpu":"20m"}}}]}}`))

	// A transform answering the same request differently is refused.
	mis := writeFile(t, "misbehave.wasm", wasmtest.Misbehave(t, wasmtest.V1))
	_, _, err = runFlotilla(ctx, "plugin", "test", mis, "--type", "ManifestTransformer", "--input", req)
	g.Expect(err).To(MatchError(ContainSubstring("plugin misbehave answered the same input differently")))
	noManifest := writeFile(t, "none.json", []byte(`{"cluster":{"name":"c"}}`))
	_, _, err = runFlotilla(ctx, "plugin", "test", sidecar, "--type", "ManifestTransformer", "--input", noManifest)
	g.Expect(err).To(MatchError(ContainSubstring("--input is not a valid transform_manifest request: manifest: must be set")))
}

func TestPluginPushAppliesAndWaitsForReady(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: "hub", CRDs: []string{"wasmplugins.flotilla.dev"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })

	scheme, err := pluginScheme()
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management-hub"}})).To(Succeed())

	// The hub side: the WasmPlugin controller with its engine and registry.
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{CacheDir: defaultWasmCacheDir(), Logger: testr.New(t)})
	g.Expect(err).NotTo(HaveOccurred())
	registry := wasm.NewRegistry()
	// Controller names repeat when the test runs more than once in a process (-count=N).
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Logger: testr.New(t),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wasmplugin.SetupWithManager(mgr, engine, registry)).To(Succeed())
	mgrCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = engine.Close(context.Background())
	})

	mod := wasmtest.CSR(t)
	file := writeFile(t, "approver.wasm", mod)
	stdout, stderr, err := runFlotilla(ctx, "plugin", "push", file, "--name", "approver", "--type", "CSRApproval",
		"--config", `{"mode":"strict"}`, "--memory", "32Mi", "--call-timeout", "750ms", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
	g.Expect(stdout).To(And(ContainSubstring("ready:       True (Loaded)"), ContainSubstring("sha256:"+wasm.Digest(mod))))
	g.Expect(stderr).To(ContainSubstring("applied ConfigMap open-cluster-management-hub/wasmplugin-approver"))

	var wp flotillav1alpha1.WasmPlugin
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "approver"}, &wp)).To(Succeed())
	g.Expect(wp.Spec.SHA256).To(Equal(wasm.Digest(mod)))
	g.Expect(wp.Spec.Limits.Timeout.Duration).To(Equal(750 * time.Millisecond))
	g.Expect(wp.Spec.Source.ConfigMap.Key).To(Equal(flotillav1alpha1.SourceKeyWasmZstd))
	var cm corev1.ConfigMap
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "open-cluster-management-hub", Name: "wasmplugin-approver"}, &cm)).To(Succeed())
	stored, err := wasm.Decompress("approver", flotillav1alpha1.SourceKeyWasmZstd, cm.BinaryData[flotillav1alpha1.SourceKeyWasmZstd], 1<<30)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored).To(Equal(mod))
	m, ok := registry.Get("approver")
	g.Expect(ok).To(BeTrue())
	g.Expect(m.Limits().MemoryBytes).To(BeEquivalentTo(32 << 20))

	// Pushing the same thing again is a no-op that still reports Ready.
	stdout, _, err = runFlotilla(ctx, "plugin", "push", file, "--name", "approver", "--type", "CSRApproval",
		"--config", `{"mode":"strict"}`, "--memory", "32Mi", "--call-timeout", "750ms", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(ContainSubstring("True (Loaded)"))
	m2, _ := registry.Get("approver")
	g.Expect(m2).To(BeIdenticalTo(m))

	// The local check stops a module that lacks the type's exports before anything is applied...
	wrong := writeFile(t, "misbehave.wasm", wasmtest.Misbehave(t, wasmtest.V1))
	_, _, err = runFlotilla(ctx, "plugin", "push", wrong, "--name", "wrong", "--type", "CSRApproval", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).To(MatchError(ContainSubstring("local check")))
	g.Expect(wasm.LoadReasonOf(err)).To(Equal(wasm.ReasonMissingExport))
	// ...and without it, the hub's verdict is reported with a non-zero exit.
	stdout, _, err = runFlotilla(ctx, "plugin", "push", wrong, "--name", "wrong", "--type", "CSRApproval", "--skip-local-check", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).To(MatchError(And(ContainSubstring("not Ready"), ContainSubstring("MissingExport"), ContainSubstring("review_csr"))))
	g.Expect(stdout).To(ContainSubstring("ready:       False (MissingExport)"))

	// A ManifestTransformer is pushed like any other and served deterministic.
	stdout, stderr, err = runFlotilla(ctx, "plugin", "push", wrong, "--name", "transformer", "--type", "ManifestTransformer", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
	g.Expect(stdout).To(ContainSubstring("ready:       True (Loaded)"))
	tm, ok := registry.Get("transformer")
	g.Expect(ok).To(BeTrue())
	g.Expect(tm.Deterministic()).To(BeTrue())

	_, _, err = runFlotilla(ctx, "plugin", "push", file, "--name", "elsewhere", "--type", "CSRApproval", "--namespace", "no-such-ns", "--kubeconfig", cp.KubeconfigPath)
	g.Expect(err).To(MatchError(ContainSubstring(`namespace "no-such-ns" does not exist`)))
}

func TestPluginCommandsHaveHelp(t *testing.T) {
	g := NewWithT(t)
	for _, args := range [][]string{{"plugin", "push", "--help"}, {"plugin", "test", "--help"}} {
		stdout, _, err := runFlotilla(t.Context(), args...)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stdout).To(And(ContainSubstring("--type"), ContainSubstring("Examples:")))
	}
	_, _, err := runFlotilla(t.Context(), "plugin", "push", "x.wasm", "--type", "CSRApproval")
	g.Expect(err).To(MatchError(ContainSubstring(`"name" not set`)))
}
