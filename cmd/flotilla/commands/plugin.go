package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// pluginFieldManager owns what `flotilla plugin push` applies.
const pluginFieldManager = "flotilla-plugin-push"

// maxConfigMapPayload leaves room for metadata under the API server's 1 MiB object limit.
const maxConfigMapPayload = 1000 * 1024

func newPluginCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Push Wasm plugins to a hub, or run them locally",
		Long: `Wasm plugins extend Flotilla at five points: placement prioritizers (Prioritizer),
cluster CSR approval (CSRApproval), ManifestWork status feedback (FeedbackExtractor),
add-on templates (AddOnTemplate) and ManifestWorkReplicaSet override transforms
(ManifestTransformer). See PLUGINS.md for the ABI and the Go SDK.`,
	}
	cmd.AddCommand(newPluginPushCommand(), newPluginTestCommand())
	return cmd
}

type pushOptions struct {
	name, typ, config, namespace, configMap, kubeconfig string
	failurePolicy, memory                               string
	callTimeout, wait                                   time.Duration
	skipLocalCheck                                      bool
}

func newPluginPushCommand() *cobra.Command {
	var o pushOptions
	cmd := &cobra.Command{
		Use:   "push FILE --name NAME --type TYPE",
		Short: "Compress a module, store it in a ConfigMap and apply its WasmPlugin, then wait until Ready",
		Long: `push installs or updates a Wasm plugin on a hub:

  1. reads FILE (a .wasm module; .wasm.zst and .wasm.gz are decompressed first) and,
     unless --skip-local-check, loads it locally through the same host the hub runs,
     so a missing export or a rejected --config fails before anything is applied;
  2. zstd-compresses it and server-side-applies the ConfigMap NAMESPACE/CONFIGMAP with
     the module under binaryData key plugin.wasm.zst (a ConfigMap holds at most 1 MiB);
  3. server-side-applies the cluster-scoped WasmPlugin NAME with spec.sha256 set to the
     digest of the uncompressed module, so the hub never loads other bytes;
  4. waits until the hub reports Ready for this generation and digest, and prints the
     status. If the hub reports Ready=False, push exits non-zero with the reason
     (SourceNotFound, DigestMismatch, InvalidModule, MissingExport, ConfigRejected,
     TooLarge, InvalidSpec) and the hub's message.

Re-running push with the same inputs changes nothing; with a new module or config it
hot-reloads the plugin on the hub.`,
		Example: `  flotilla plugin push prioritizer.wasm --name spread --type Prioritizer --config '{"label":"zone"}'
  flotilla plugin push approve.wasm --name auto-approve --type CSRApproval --kubeconfig hub.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPluginPush(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "WasmPlugin name (required)")
	f.StringVar(&o.typ, "type", "", "plugin type: Prioritizer, CSRApproval, FeedbackExtractor, AddOnTemplate or ManifestTransformer (required)")
	f.StringVar(&o.config, "config", "", "pluginConfig as JSON, handed to the plugin (default: none)")
	f.StringVar(&o.namespace, "namespace", "open-cluster-management-hub", "namespace of the ConfigMap holding the module")
	f.StringVar(&o.configMap, "configmap", "", "ConfigMap name (default: wasmplugin-NAME)")
	f.StringVar(&o.failurePolicy, "failure-policy", "", "Fail or Ignore: what users do when the plugin fails (default: Fail)")
	f.StringVar(&o.memory, "memory", "", "memory limit per instance, e.g. 64Mi (default: hub default)")
	f.DurationVar(&o.callTimeout, "call-timeout", 0, "per-call timeout, e.g. 500ms (default: hub default)")
	f.DurationVar(&o.wait, "wait", 2*time.Minute, "how long to wait for the hub to report Ready")
	f.BoolVar(&o.skipLocalCheck, "skip-local-check", false, "do not load the module locally before pushing")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the hub (default: $KUBECONFIG or ~/.kube/config)")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("type")
	return cmd
}

func parsePluginType(s string) (abi.PluginType, error) {
	t := abi.PluginType(s)
	if abi.RequiredExports(t) == nil {
		return "", fmt.Errorf("--type %q: want Prioritizer, CSRApproval, FeedbackExtractor, AddOnTemplate or ManifestTransformer", s)
	}
	return t, nil
}

// readModule reads FILE and returns the uncompressed module, choosing by suffix.
func readModule(path string) ([]byte, error) {
	blob, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading module: %w", err)
	}
	key := filepath.Base(path)
	if !strings.HasSuffix(key, ".wasm.zst") && !strings.HasSuffix(key, ".wasm.gz") {
		key = wasm.KeyPlain
	}
	mod, err := wasm.Decompress(path, key, blob, wasm.DefaultMaxModuleBytes)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(mod, []byte("\x00asm")) {
		return nil, fmt.Errorf("%s is not a Wasm module (no \\0asm header)", path)
	}
	return mod, nil
}

func pluginScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := flotillav1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

func runPluginPush(ctx context.Context, stdout, stderr io.Writer, file string, o pushOptions) error {
	typ, err := parsePluginType(o.typ)
	if err != nil {
		return err
	}
	if o.configMap == "" {
		o.configMap = "wasmplugin-" + o.name
	}
	if o.config != "" && !json.Valid([]byte(o.config)) {
		return fmt.Errorf("--config is not valid JSON")
	}
	spec := flotillav1alpha1.WasmPluginSpec{
		Type:          flotillav1alpha1.WasmPluginType(typ),
		FailurePolicy: flotillav1alpha1.FailurePolicy(o.failurePolicy),
	}
	if o.failurePolicy != "" && o.failurePolicy != string(flotillav1alpha1.FailurePolicyFail) && o.failurePolicy != string(flotillav1alpha1.FailurePolicyIgnore) {
		return fmt.Errorf("--failure-policy %q: want Fail or Ignore", o.failurePolicy)
	}
	var limits wasm.Limits
	if o.memory != "" || o.callTimeout != 0 {
		spec.Limits = &flotillav1alpha1.WasmPluginLimits{}
		if o.memory != "" {
			q, err := resource.ParseQuantity(o.memory)
			if err != nil || q.Sign() <= 0 {
				return fmt.Errorf("--memory %q: want a positive quantity such as 64Mi", o.memory)
			}
			spec.Limits.Memory = &q
			limits.MemoryBytes = uint64(q.Value())
		}
		if o.callTimeout < 0 {
			return fmt.Errorf("--call-timeout must be positive")
		}
		if o.callTimeout > 0 {
			spec.Limits.Timeout = &metav1.Duration{Duration: o.callTimeout}
			limits.CallTimeout = o.callTimeout
		}
	}
	if o.config != "" {
		spec.PluginConfig = &apiextensionsv1.JSON{Raw: []byte(o.config)}
	}

	mod, err := readModule(file)
	if err != nil {
		return err
	}
	digest := wasm.Digest(mod)
	spec.SHA256 = digest
	if !o.skipLocalCheck {
		if err := localCheck(ctx, o.name, typ, mod, []byte(o.config), limits); err != nil {
			return fmt.Errorf("local check (skip with --skip-local-check): %w", err)
		}
	}
	compressed, err := wasm.Compress(mod)
	if err != nil {
		return err
	}
	if len(compressed) > maxConfigMapPayload {
		return fmt.Errorf("%s compresses to %d bytes, more than a ConfigMap can hold (%d); make the module smaller (see PLUGINS.md)", file, len(compressed), maxConfigMapPayload)
	}
	spec.Source.ConfigMap = &flotillav1alpha1.ConfigMapSource{Namespace: o.namespace, Name: o.configMap, Key: flotillav1alpha1.SourceKeyWasmZstd}

	cfg, err := loadRESTConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := pluginScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("connecting to the hub: %w", err)
	}

	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   o.namespace,
			Name:        o.configMap,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "flotilla", "flotilla.dev/wasmplugin": o.name},
			Annotations: map[string]string{"flotilla.dev/sha256": digest},
		},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: compressed},
	}
	if err := c.Patch(ctx, cm, client.Apply, client.FieldOwner(pluginFieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("applying ConfigMap %s/%s: namespace %q does not exist (create it or pass --namespace): %w", o.namespace, o.configMap, o.namespace, err)
		}
		return fmt.Errorf("applying ConfigMap %s/%s: %w", o.namespace, o.configMap, err)
	}
	wp := &flotillav1alpha1.WasmPlugin{
		TypeMeta:   metav1.TypeMeta{APIVersion: flotillav1alpha1.GroupVersion.String(), Kind: "WasmPlugin"},
		ObjectMeta: metav1.ObjectMeta{Name: o.name},
		Spec:       spec,
	}
	if err := c.Patch(ctx, wp, client.Apply, client.FieldOwner(pluginFieldManager), client.ForceOwnership); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("applying WasmPlugin %s: the hub does not serve flotilla.dev/v1alpha1 WasmPlugin (install the CRDs: flotilla crds install): %w", o.name, err)
		}
		return fmt.Errorf("applying WasmPlugin %s: %w", o.name, err)
	}
	fmt.Fprintf(stderr, "applied ConfigMap %s/%s (%d bytes zstd, %d uncompressed) and WasmPlugin %s; waiting for Ready\n",
		o.namespace, o.configMap, len(compressed), len(mod), o.name)

	got, cond, err := waitForPlugin(ctx, c, o.name, digest, o.wait)
	if err != nil {
		return err
	}
	printPluginStatus(stdout, got, cond)
	if cond.Status != metav1.ConditionTrue {
		return fmt.Errorf("WasmPlugin %s is not Ready: %s: %s", o.name, cond.Reason, cond.Message)
	}
	return nil
}

// localCheck loads the module the way the hub will, with a throwaway engine.
func localCheck(ctx context.Context, name string, typ abi.PluginType, mod, config []byte, limits wasm.Limits) error {
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{CacheDir: defaultWasmCacheDir()})
	if err != nil {
		return err
	}
	defer engine.Close(context.WithoutCancel(ctx))
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: name, Type: typ, Wasm: mod, Config: config, Limits: limits,
		Deterministic: abi.Deterministic(typ)})
	if err != nil {
		return err
	}
	return m.Close(ctx)
}

// waitForPlugin polls until the hub has judged the current generation. A Ready=True
// condition only counts once status.digest is the pushed digest.
func waitForPlugin(ctx context.Context, c client.Client, name, digest string, timeout time.Duration) (*flotillav1alpha1.WasmPlugin, metav1.Condition, error) {
	var got flotillav1alpha1.WasmPlugin
	var cond metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		cur := meta.FindStatusCondition(got.Status.Conditions, flotillav1alpha1.ConditionReady)
		if cur == nil || cur.ObservedGeneration != got.Generation || got.Status.ObservedGeneration != got.Generation {
			return false, nil
		}
		if cur.Status == metav1.ConditionTrue && got.Status.Digest != digest {
			return false, nil
		}
		cond = *cur
		return true, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, cond, fmt.Errorf("WasmPlugin %s: no Ready verdict for generation %d within %s; is a hub running the WasmPlugin controller against this cluster?", name, got.Generation, timeout)
		}
		return nil, cond, fmt.Errorf("waiting for WasmPlugin %s: %w", name, err)
	}
	return &got, cond, nil
}

func printPluginStatus(w io.Writer, wp *flotillav1alpha1.WasmPlugin, cond metav1.Condition) {
	fmt.Fprintf(w, "WasmPlugin %s\n", wp.Name)
	fmt.Fprintf(w, "  type:        %s\n", wp.Spec.Type)
	fmt.Fprintf(w, "  ready:       %s (%s)\n", cond.Status, cond.Reason)
	fmt.Fprintf(w, "  message:     %s\n", cond.Message)
	if wp.Status.Digest != "" {
		fmt.Fprintf(w, "  digest:      sha256:%s\n", wp.Status.Digest)
		fmt.Fprintf(w, "  size:        %d bytes\n", wp.Status.Size)
		fmt.Fprintf(w, "  abiVersion:  %d\n", wp.Status.ABIVersion)
	}
	if src := wp.Spec.Source.ConfigMap; src != nil {
		fmt.Fprintf(w, "  source:      configmap %s/%s key %s\n", src.Namespace, src.Name, src.Key)
	}
	fmt.Fprintf(w, "  generation:  %d\n", wp.Status.ObservedGeneration)
}

func defaultWasmCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "flotilla", "wasm-cache")
}

type testOptions struct {
	typ, input, export, config, memory, cacheDir string
	callTimeout                                  time.Duration
	verbose                                      bool
}

func newPluginTestCommand() *cobra.Command {
	var o testOptions
	cmd := &cobra.Command{
		Use:   "test FILE --type TYPE --input INPUT.json",
		Short: "Run a plugin locally through the hub's Wasm host and print its output and timing",
		Long: `test loads FILE (.wasm, .wasm.zst or .wasm.gz) in the same sandbox the hub and
agents use (same limits, validation, Extism ABI and decoders), calls it once with the
input, calls it again warm, and prints the decoded output on stdout and timings on
stderr: load (compile + validation; the compiled code is cached in --cache-dir),
first call and warm call.

The input is JSON, by type:
  Prioritizer        a list of clusters [{"name","labels","claims","allocatable",
                     "capacity","addOnScores"}] (or {"clusters": [...]}); test calls
                     declare_inputs, encodes the declared attributes in the binary
                     score layout, calls score and prints {"scores": [...]}
  CSRApproval        a review_csr request; prints the decision
  FeedbackExtractor  an extract_feedback request; prints the values
  AddOnTemplate      a render_addon request; prints the manifests
  ManifestTransformer a transform_manifest request; prints the manifest it makes
                     (a returned patch applied, with the hub's checks) and fails
                     when the two calls answer differently
Resource values are milli-units. With --export, the input file's bytes are passed to
that export unchanged and its raw output is printed.`,
		Example: `  flotilla plugin test spread.wasm --type Prioritizer --input clusters.json
  flotilla plugin test approve.wasm --type CSRApproval --input csr.json --config '{"groups":["system:bootstrappers"]}'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPluginTest(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.typ, "type", "", "plugin type: Prioritizer, CSRApproval, FeedbackExtractor, AddOnTemplate or ManifestTransformer (required)")
	f.StringVar(&o.input, "input", "", "input JSON file (required)")
	f.StringVar(&o.export, "export", "", "call this export with the raw input instead of the type's main export")
	f.StringVar(&o.config, "config", "", "pluginConfig as JSON")
	f.StringVar(&o.memory, "memory", "", "memory limit per instance, e.g. 64Mi (default: hub default)")
	f.DurationVar(&o.callTimeout, "call-timeout", 0, "per-call timeout (default: hub default)")
	f.StringVar(&o.cacheDir, "cache-dir", defaultWasmCacheDir(), "compilation cache directory (empty: no disk cache)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print guest log lines (down to debug) on stderr")
	_ = cmd.MarkFlagRequired("type")
	_ = cmd.MarkFlagRequired("input")
	return cmd
}

func runPluginTest(ctx context.Context, stdout, stderr io.Writer, file string, o testOptions) error {
	typ, err := parsePluginType(o.typ)
	if err != nil {
		return err
	}
	if o.config != "" && !json.Valid([]byte(o.config)) {
		return fmt.Errorf("--config is not valid JSON")
	}
	var limits wasm.Limits
	if o.memory != "" {
		q, err := resource.ParseQuantity(o.memory)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--memory %q: want a positive quantity such as 64Mi", o.memory)
		}
		limits.MemoryBytes = uint64(q.Value())
	}
	limits.CallTimeout = o.callTimeout
	input, err := os.ReadFile(o.input)
	if err != nil {
		return fmt.Errorf("reading --input: %w", err)
	}
	mod, err := readModule(file)
	if err != nil {
		return err
	}
	logger := logr.Discard()
	level := wasm.LogOff
	if o.verbose {
		level = wasm.LogDebug
		logger = newLogger(stderr, 3)
	}
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{CacheDir: o.cacheDir, Logger: logger, GuestLogLevel: level})
	if err != nil {
		return err
	}
	defer engine.Close(context.WithoutCancel(ctx))

	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	start := time.Now()
	m, err := engine.Load(ctx, wasm.ModuleSpec{Name: name, Type: typ, Wasm: mod, Config: []byte(o.config), Limits: limits,
		Deterministic: abi.Deterministic(typ)})
	if err != nil {
		return err
	}
	loadTime := time.Since(start)

	run, err := pluginRunner(m, typ, o.export, input)
	if err != nil {
		return err
	}
	start = time.Now()
	out, err := run(ctx)
	if err != nil {
		return err
	}
	first := time.Since(start)
	start = time.Now()
	again, err := run(ctx)
	if err != nil {
		return fmt.Errorf("warm call: %w", err)
	}
	if abi.Deterministic(typ) && o.export == "" && !bytes.Equal(out, again) {
		return fmt.Errorf("plugin %s answered the same input differently (its output must depend on the input alone):\n%s\n%s", name, out, again)
	}
	warm := time.Since(start)

	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if len(out) == 0 || out[len(out)-1] != '\n' {
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stderr, "plugin %s: sha256:%s, %d bytes, ABI version %d\n", name, m.Digest(), m.Size(), m.ABIVersion())
	fmt.Fprintf(stderr, "load %s  first call %s  warm call %s\n", roundDur(loadTime), roundDur(first), roundDur(warm))
	return nil
}

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// jsonMessage is implemented by the abi request and result types.
type jsonMessage interface {
	DecodeJSON([]byte) error
	AppendJSON([]byte) []byte
}

type validating interface{ Validate() error }

// pluginRunner returns a call that performs one invocation and renders its output.
func pluginRunner(m *wasm.Module, typ abi.PluginType, export string, input []byte) (func(context.Context) ([]byte, error), error) {
	if export != "" {
		return func(ctx context.Context) ([]byte, error) { return m.Call(ctx, export, input) }, nil
	}
	switch typ {
	case abi.TypePrioritizer:
		clusters, err := decodeClusters(input)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) ([]byte, error) { return scoreClusters(ctx, m, clusters) }, nil
	case abi.TypeCSRApproval:
		return typedRunner(m, abi.ExportReviewCSR, input, &abi.CSRReview{}, func() jsonMessage { return &abi.CSRDecision{} })
	case abi.TypeFeedbackExtractor:
		return typedRunner(m, abi.ExportExtractFeedback, input, &abi.FeedbackRequest{}, func() jsonMessage { return &abi.FeedbackResult{} })
	case abi.TypeAddOnTemplate:
		return typedRunner(m, abi.ExportRenderAddOn, input, &abi.AddOnRequest{}, func() jsonMessage { return &abi.AddOnResult{} })
	case abi.TypeManifestTransformer:
		var req abi.TransformRequest
		if err := req.DecodeJSON(input); err != nil {
			return nil, fmt.Errorf("--input is not a valid %s request: %w", abi.ExportTransformManifest, err)
		}
		if len(req.Manifest) == 0 {
			return nil, fmt.Errorf("--input is not a valid %s request: manifest: must be set", abi.ExportTransformManifest)
		}
		payload := req.AppendJSON(nil)
		return func(ctx context.Context) ([]byte, error) {
			out, err := m.Call(ctx, abi.ExportTransformManifest, payload)
			if err != nil {
				return nil, err
			}
			made, err := override.ApplyTransformOutput(m.Name(), req.Manifest, out)
			if err != nil {
				return nil, err
			}
			return indentJSON(made), nil
		}, nil
	}
	return nil, fmt.Errorf("unsupported plugin type %q", typ)
}

// typedRunner validates the input against the request type (so a typo in the input
// file is reported as such, not as a plugin failure) and decodes the output strictly.
func typedRunner(m *wasm.Module, export string, input []byte, req jsonMessage, newResult func() jsonMessage) (func(context.Context) ([]byte, error), error) {
	if err := req.DecodeJSON(input); err != nil {
		return nil, fmt.Errorf("--input is not a valid %s request: %w", export, err)
	}
	payload := req.AppendJSON(nil)
	return func(ctx context.Context) ([]byte, error) {
		out, err := m.Call(ctx, export, payload)
		if err != nil {
			return nil, err
		}
		res := newResult()
		if err := res.DecodeJSON(out); err != nil {
			return nil, wasm.InvalidOutput(m.Name(), export, err, "%v", err)
		}
		if v, ok := res.(validating); ok {
			if err := v.Validate(); err != nil {
				return nil, wasm.InvalidOutput(m.Name(), export, err, "%v", err)
			}
		}
		return indentJSON(res.AppendJSON(nil)), nil
	}, nil
}

func decodeClusters(input []byte) (abi.ClusterList, error) {
	var list abi.ClusterList
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var wrapped struct {
			Clusters abi.ClusterList `json:"clusters"`
		}
		if err := json.Unmarshal(trimmed, &wrapped); err != nil {
			return nil, fmt.Errorf("--input: want a list of clusters or {\"clusters\": [...]}: %w", err)
		}
		list = wrapped.Clusters
	} else if err := json.Unmarshal(trimmed, &list); err != nil {
		return nil, fmt.Errorf("--input: want a list of clusters or {\"clusters\": [...]}: %w", err)
	}
	for i, c := range list {
		if c.Name == "" {
			return nil, fmt.Errorf("--input: clusters[%d].name is empty", i)
		}
	}
	return list, nil
}

// scoreClusters runs one scheduling cycle as placement does: declaration, compact
// input of the declared attributes only, one score call for all clusters.
func scoreClusters(ctx context.Context, m *wasm.Module, clusters abi.ClusterList) ([]byte, error) {
	out, err := m.Call(ctx, abi.ExportDeclareInputs, nil)
	if err != nil {
		return nil, err
	}
	var decl abi.PrioritizerInputs
	if err := decl.DecodeJSON(out); err != nil {
		return nil, wasm.InvalidOutput(m.Name(), abi.ExportDeclareInputs, err, "%v", err)
	}
	if err := decl.Validate(); err != nil {
		return nil, wasm.InvalidOutput(m.Name(), abi.ExportDeclareInputs, err, "%v", err)
	}
	in, err := abi.EncodeScoreInput(nil, &decl, clusters)
	if err != nil {
		return nil, fmt.Errorf("encoding the score input: %w", err)
	}
	out, err = m.Call(ctx, abi.ExportScore, in)
	if err != nil {
		return nil, err
	}
	scores, err := abi.DecodeScores(out, len(clusters), nil)
	if err != nil {
		return nil, wasm.InvalidOutput(m.Name(), abi.ExportScore, err, "%v", err)
	}
	type scored struct {
		Cluster string `json:"cluster"`
		Score   int64  `json:"score"`
	}
	res := struct {
		Scores []scored `json:"scores"`
	}{Scores: make([]scored, len(clusters))}
	for i, c := range clusters {
		res.Scores[i] = scored{Cluster: c.Name, Score: scores[i]}
	}
	return json.MarshalIndent(res, "", "  ")
}

func indentJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return b
	}
	return buf.Bytes()
}
