// Package wasmplugin reconciles WasmPlugin objects into the Wasm host: it reads the
// module from its source, loads it through the shared wasm.Engine, swaps it into the
// wasm.Registry that extension points call, and reports the outcome in status.
//
// Failed loads. A WasmPlugin whose current spec and source do not produce a loadable
// module is removed from the Registry, whatever was serving before: its users then
// see it as not Ready and apply spec.failurePolicy. Serving an older module while
// status says Ready=False would make behaviour depend on history (and change at the
// next hub restart, when the old bytes are no longer anywhere). This includes a deleted
// ConfigMap or key (SourceNotFound): deleting the source is a deliberate act. Such a
// plugin is recorded with Registry.MarkUnavailable so users can tell "configured but
// broken" (apply failurePolicy) from "not configured". Only
// transient failures keep the module that is serving: an API error while reading the
// source, or the reconcile being cancelled mid-load. Those are retried with backoff
// and do not touch status.
package wasmplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// ConfigMapIndex is the field index of WasmPlugins by "<namespace>/<name>" of their
// source ConfigMap, so a ConfigMap change reaches exactly the plugins that use it.
const ConfigMapIndex = "flotilla.dev/source-configmap"

// statusFieldManager owns the WasmPlugin status the controller applies.
const statusFieldManager = apply.FieldManagerPrefix + "wasmplugin"

// Reconciler loads WasmPlugins. Client reads and writes WasmPlugins (cached); Reader
// reads ConfigMaps uncached, so the manager caches only ConfigMap metadata rather than
// every module's bytes.
type Reconciler struct {
	Client   client.Client
	Reader   client.Reader
	Engine   *wasm.Engine
	Registry *wasm.Registry
	// Types, when set, limits the controller to WasmPlugins of these types: others are not
	// loaded and their status is left to whoever serves them (the klusterlet loads only
	// FeedbackExtractors, so on a hub that is also a managed cluster it leaves the hub's
	// plugins to the hub).
	Types []abi.PluginType

	mu sync.Mutex
	// attempted maps a plugin name to the fingerprint of the inputs last loaded (or
	// refused), so status writes and resyncs do not recompile.
	attempted map[string]attempt
}

type attempt struct {
	fingerprint string
	module      *wasm.Module // nil when the attempt failed
	err         *wasm.LoadError
}

// SetupWithManager registers the controller and its ConfigMap index with mgr; with types, it
// loads only WasmPlugins of those types (see Reconciler.Types).
func SetupWithManager(mgr ctrl.Manager, engine *wasm.Engine, registry *wasm.Registry, types ...abi.PluginType) error {
	if engine == nil || registry == nil {
		return errors.New("wasmplugin: SetupWithManager needs an engine and a registry")
	}
	// The hub's shared scheme may predate this group; registering twice is harmless.
	if err := flotillav1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("wasmplugin: adding flotilla.dev/v1alpha1 to the scheme: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Engine: engine, Registry: registry, Types: types}
	return r.SetupWithManager(mgr)
}

// SetupWithManager wires r into mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &flotillav1alpha1.WasmPlugin{}, ConfigMapIndex, indexConfigMap); err != nil {
		return fmt.Errorf("wasmplugin: indexing WasmPlugins by source ConfigMap: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("wasmplugin").
		For(&flotillav1alpha1.WasmPlugin{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.pluginsForConfigMap)).
		// Compiling is CPU-bound; two at a time keeps the hub responsive.
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		// A load cut short by shutdown (a cold compile can take a second) is no failure.
		Complete(apply.Quiet(r))
}

func indexConfigMap(obj client.Object) []string {
	wp, ok := obj.(*flotillav1alpha1.WasmPlugin)
	if !ok || wp.Spec.Source.ConfigMap == nil {
		return nil
	}
	return []string{wp.Spec.Source.ConfigMap.Namespace + "/" + wp.Spec.Source.ConfigMap.Name}
}

func (r *Reconciler) pluginsForConfigMap(ctx context.Context, obj client.Object) []reconcile.Request {
	var list flotillav1alpha1.WasmPluginList
	if err := r.Client.List(ctx, &list, client.MatchingFields{ConfigMapIndex: obj.GetNamespace() + "/" + obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing WasmPlugins for ConfigMap", "configMap", obj.GetNamespace()+"/"+obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, wp := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: wp.Name}})
	}
	return reqs
}

// +kubebuilder:rbac:groups=flotilla.dev,resources=wasmplugins,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.dev,resources=wasmplugins/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// timingRetry is how soon a load that failed only because a guest ran out of time is
// retried: such a verdict may be an artefact of a busy hub, so it is not cached.
const timingRetry = time.Minute

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	var wp flotillav1alpha1.WasmPlugin
	if err := r.Client.Get(ctx, req.NamespacedName, &wp); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.unload(ctx, name)
		}
		return reconcile.Result{}, fmt.Errorf("getting WasmPlugin %s: %w", name, err)
	}
	if !wp.DeletionTimestamp.IsZero() || !r.handles(abi.PluginType(wp.Spec.Type)) {
		return reconcile.Result{}, r.unload(ctx, name)
	}

	spec, fingerprint, lerr, err := r.resolve(ctx, &wp)
	if err != nil {
		// Transient: keep whatever is serving and retry.
		return reconcile.Result{}, err
	}
	if lerr == nil {
		var m *wasm.Module
		if m, lerr = r.load(ctx, spec, fingerprint); lerr == nil {
			return reconcile.Result{}, r.writeStatus(ctx, &wp, ready(m))
		}
		if ctx.Err() != nil {
			return reconcile.Result{}, fmt.Errorf("loading WasmPlugin %s: %w", name, ctx.Err())
		}
	}
	// A definite failure: nothing from an older spec or source keeps serving.
	var result reconcile.Result
	if timingDependent(lerr) {
		fingerprint = ""
		result.RequeueAfter = timingRetry
	}
	if err := r.dropModule(ctx, &wp, fingerprint, lerr); err != nil {
		return reconcile.Result{}, err
	}
	return result, r.writeStatus(ctx, &wp, failed(lerr))
}

func (r *Reconciler) handles(t abi.PluginType) bool {
	return len(r.Types) == 0 || slices.Contains(r.Types, t)
}

// timingDependent reports a load failure caused by a guest call timing out (in
// validate_config, or while starting an instance), which a less busy hub might not see.
func timingDependent(le *wasm.LoadError) bool {
	k := wasm.CallErrorKindOf(le)
	return k == wasm.KindTimeout || k == wasm.KindCanceled
}

// resolve reads the source and builds the ModuleSpec. A *wasm.LoadError describes a
// definite problem with the spec or source; a plain error is transient.
func (r *Reconciler) resolve(ctx context.Context, wp *flotillav1alpha1.WasmPlugin) (wasm.ModuleSpec, string, *wasm.LoadError, error) {
	return Resolve(ctx, r.Reader, r.Engine, wp)
}

// Resolve reads wp's module from its source through reader and builds the ModuleSpec engine
// loads (limits, config, determinism as the hub loads it), with the fingerprint of its inputs.
// A *wasm.LoadError describes a definite problem with the spec or source; a plain error is
// transient. `flotilla render mwrs` loads transform plugins with it.
func Resolve(ctx context.Context, reader client.Reader, engine *wasm.Engine, wp *flotillav1alpha1.WasmPlugin) (wasm.ModuleSpec, string, *wasm.LoadError, error) {
	name := wp.Name
	spec := wasm.ModuleSpec{
		Name:          name,
		Type:          abi.PluginType(wp.Spec.Type),
		SHA256:        wp.Spec.SHA256,
		FailurePolicy: wasm.FailurePolicy(wp.Spec.FailurePolicy),
		Deterministic: abi.Deterministic(abi.PluginType(wp.Spec.Type)),
	}
	if wp.Spec.PluginConfig != nil {
		spec.Config = wp.Spec.PluginConfig.Raw
	}
	if l := wp.Spec.Limits; l != nil {
		if l.Memory != nil {
			if l.Memory.Sign() <= 0 {
				return spec, "", specErr(name, "spec.limits.memory must be positive, got %s", l.Memory.String()), nil
			}
			spec.Limits.MemoryBytes = uint64(l.Memory.Value())
		}
		if l.Timeout != nil {
			if l.Timeout.Duration <= 0 {
				return spec, "", specErr(name, "spec.limits.timeout must be positive, got %s", l.Timeout.Duration), nil
			}
			spec.Limits.CallTimeout = l.Timeout.Duration
		}
	}
	src := wp.Spec.Source.ConfigMap
	if src == nil {
		return spec, "", specErr(name, "spec.source has no supported member (want configMap)"), nil
	}
	key := src.Key
	if key == "" {
		key = flotillav1alpha1.SourceKeyWasm
	}
	var cm corev1.ConfigMap
	if err := reader.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: src.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return spec, "", &wasm.LoadError{Plugin: name, Reason: wasm.ReasonSourceNotFound,
				Message: fmt.Sprintf("spec.source.configMap: ConfigMap %s/%s not found", src.Namespace, src.Name)}, nil
		}
		return spec, "", nil, fmt.Errorf("WasmPlugin %s: reading spec.source.configMap %s/%s: %w", name, src.Namespace, src.Name, err)
	}
	blob, ok := cm.BinaryData[key]
	if !ok {
		text, inData := cm.Data[key]
		if !inData {
			return spec, "", &wasm.LoadError{Plugin: name, Reason: wasm.ReasonSourceNotFound,
				Message: fmt.Sprintf("spec.source.configMap: ConfigMap %s/%s has no key %q", src.Namespace, src.Name, key)}, nil
		}
		blob = []byte(text)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%d\x00%s\x00", spec.Type, spec.SHA256, spec.FailurePolicy, key,
		spec.Limits.MemoryBytes, spec.Limits.CallTimeout, spec.Config)
	h.Write(blob)
	fingerprint := hex.EncodeToString(h.Sum(nil))
	wasmBytes, err := wasm.Decompress(name, key, blob, engine.Options().MaxModuleBytes)
	if err != nil {
		var le *wasm.LoadError
		if errors.As(err, &le) {
			return spec, fingerprint, le, nil
		}
		return spec, fingerprint, nil, err
	}
	spec.Wasm = wasmBytes
	return spec, fingerprint, nil, nil
}

// load returns the module for fingerprint, loading and swapping it in when new.
func (r *Reconciler) load(ctx context.Context, spec wasm.ModuleSpec, fingerprint string) (*wasm.Module, *wasm.LoadError) {
	if a, ok := r.lastAttempt(spec.Name); ok && a.fingerprint == fingerprint {
		if a.module != nil {
			if cur, ok := r.Registry.Get(spec.Name); ok && cur == a.module {
				return a.module, nil
			}
		} else if a.err != nil {
			return nil, a.err
		}
	}
	logger := log.FromContext(ctx)
	start := time.Now()
	m, err := r.Engine.Load(ctx, spec)
	if err != nil {
		var le *wasm.LoadError
		if !errors.As(err, &le) {
			le = &wasm.LoadError{Plugin: spec.Name, Reason: wasm.ReasonInvalidModule, Message: err.Error(), Err: err}
		}
		if ctx.Err() == nil && !timingDependent(le) {
			r.remember(spec.Name, attempt{fingerprint: fingerprint, err: le})
		}
		logger.Info("WasmPlugin failed to load", "reason", le.Reason, "message", le.Message)
		return nil, le
	}
	if err := r.Registry.Set(ctx, m); err != nil {
		// Closing the replaced module failed; the new one serves regardless.
		logger.Error(err, "closing the replaced module")
	}
	r.remember(spec.Name, attempt{fingerprint: fingerprint, module: m})
	logger.Info("WasmPlugin loaded", "digest", m.Digest(), "bytes", m.Size(), "abiVersion", m.ABIVersion(), "took", time.Since(start).String())
	return m, nil
}

// dropModule stops serving wp and records it as unavailable, so users apply its
// failure policy instead of silently running without it.
func (r *Reconciler) dropModule(ctx context.Context, wp *flotillav1alpha1.WasmPlugin, fingerprint string, lerr *wasm.LoadError) error {
	name := wp.Name
	if fingerprint != "" {
		r.remember(name, attempt{fingerprint: fingerprint, err: lerr})
	} else {
		r.forget(name)
	}
	policy := wasm.FailurePolicy(wp.Spec.FailurePolicy)
	if policy == "" {
		policy = wasm.FailurePolicyFail
	}
	err := r.Registry.MarkUnavailable(ctx, wasm.Unavailable{
		Name: name, Type: abi.PluginType(wp.Spec.Type), FailurePolicy: policy, Reason: lerr.Reason, Message: lerr.Message,
	})
	if err != nil {
		return fmt.Errorf("WasmPlugin %s: closing the module it no longer serves: %w", name, err)
	}
	return nil
}

func (r *Reconciler) unload(ctx context.Context, name string) error {
	r.forget(name)
	if _, err := r.Registry.Remove(ctx, name); err != nil {
		return fmt.Errorf("WasmPlugin %s: closing its module: %w", name, err)
	}
	return nil
}

func (r *Reconciler) lastAttempt(name string) (attempt, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.attempted[name]
	return a, ok
}

func (r *Reconciler) remember(name string, a attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempted == nil {
		r.attempted = map[string]attempt{}
	}
	r.attempted[name] = a
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.attempted, name)
}

func specErr(name, format string, args ...any) *wasm.LoadError {
	return &wasm.LoadError{Plugin: name, Reason: wasm.ReasonInvalidSpec, Message: fmt.Sprintf(format, args...)}
}

// outcome is the status a reconcile wants to write.
type outcome struct {
	cond       metav1.Condition
	digest     string
	size       int64
	abiVersion int32
}

func ready(m *wasm.Module) outcome {
	msg := fmt.Sprintf("serving sha256:%s (%d bytes, ABI version %d)", shortDigest(m.Digest()), m.Size(), m.ABIVersion())
	if w := m.Warnings(); len(w) > 0 {
		msg += "; " + strings.Join(w, "; ")
	}
	return outcome{
		cond:       metav1.Condition{Type: flotillav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: string(wasm.ReasonLoaded), Message: msg},
		digest:     m.Digest(),
		size:       int64(m.Size()),
		abiVersion: int32(m.ABIVersion()),
	}
}

func failed(le *wasm.LoadError) outcome {
	msg := le.Message
	if len(msg) > 4096 {
		msg = msg[:4096] + "…"
	}
	return outcome{cond: metav1.Condition{Type: flotillav1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(le.Reason), Message: msg}}
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func (r *Reconciler) writeStatus(ctx context.Context, wp *flotillav1alpha1.WasmPlugin, o outcome) error {
	orig := wp.DeepCopy()
	o.cond.ObservedGeneration = wp.Generation
	meta.SetStatusCondition(&wp.Status.Conditions, o.cond)
	wp.Status.Digest = o.digest
	wp.Status.ShortDigest = shortDigest(o.digest)
	wp.Status.Size = o.size
	wp.Status.ABIVersion = o.abiVersion
	wp.Status.ObservedGeneration = wp.Generation
	if equalStatus(orig.Status, wp.Status) {
		return nil
	}
	// Only this controller writes the status: applied whole, guarded by the resourceVersion read.
	if err := apply.Guarded(ctx, r.Client, orig, statusFieldManager, true, map[string]any{"status": wp.Status}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("WasmPlugin %s: writing status: %w", wp.Name, err)
	}
	return nil
}

func equalStatus(a, b flotillav1alpha1.WasmPluginStatus) bool {
	if a.Digest != b.Digest || a.ShortDigest != b.ShortDigest || a.Size != b.Size || a.ABIVersion != b.ABIVersion ||
		a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
