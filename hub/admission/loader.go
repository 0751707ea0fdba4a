package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/policy"
)

// Loader keeps the Handler's policies in step with the policy ConfigMaps: the embedded
// defaults plus every labelled ConfigMap in Namespace that compiles and passes its tests. A
// refused version leaves the ConfigMap's last good version in force (or none) and is reported
// once by a Warning Event on the ConfigMap (reason PolicyRejected) and the log; an accepted
// one by a Normal Event (PolicyLoaded).
//
// The last good versions are kept in the ConfigMap StateName (not a policy ConfigMap) so that a
// hub restarting while a ConfigMap holds a refused version still enforces the version before it:
// a broken push never silently turns a policy off.
//
// The first load runs as the Loader starts, ConfigMaps or none; until it is done the Handler
// (built with AwaitLoad) holds requests, the hub is not ready and the webhook server applies no
// configuration, so no hub start, restart or new replica answers with the embedded policies
// alone.
type Loader struct {
	Handler *Handler
	// Embedded is the source every set starts from.
	Embedded policy.Source
	// Namespace holds the policy ConfigMaps; default policy.DefaultNamespace.
	Namespace string
	// Reader reads ConfigMaps uncached (the manager caches only their metadata); Client writes
	// the state ConfigMap.
	Reader client.Reader
	Client client.Client
	// StateName is the ConfigMap in Namespace keeping the last good versions; default
	// DefaultStateName.
	StateName  string
	Authorizer policy.Authorizer
	Recorder   events.EventRecorder
	// Resync re-registers the webhook when the policies' rules change.
	Resync func()
	Logger logr.Logger

	// Only the reconcile goroutine touches these (one worker).
	good     map[types.NamespacedName]version // last accepted version of each ConfigMap
	reported map[types.NamespacedName]string  // resourceVersion last reported (loaded or rejected)
	restored bool                             // good was read from the state ConfigMap
	saved    string                           // the state last written

	// view is the resourceVersion of each policy ConfigMap (by name) the set in force was built
	// from; stored after the set, read by current from the webhook server's goroutine.
	view atomic.Pointer[map[string]string]
}

// DefaultStateName is the ConfigMap keeping the last good version of each policy ConfigMap.
const DefaultStateName = "flotilla-policies-last-good"

// stateFieldManager owns the state ConfigMap.
const stateFieldManager = "flotilla-admission"

// maxState keeps the state ConfigMap under the API server's 1 MiB object limit.
const maxState = 900 * 1024

type version struct {
	ResourceVersion string            `json:"resourceVersion"`
	Files           map[string]string `json:"files"`
}

func (v version) source(key types.NamespacedName) policy.Source {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Data: v.Files}
	return policy.SourceFromConfigMap(cm)
}

// loaderKey is the one request every ConfigMap event maps to: the set is rebuilt as a whole.
var loaderKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "policies"}}

// SetupWithManager watches the metadata of labelled ConfigMaps in Namespace.
func (l *Loader) SetupWithManager(mgr ctrl.Manager) error {
	if l.Reader == nil {
		l.Reader = mgr.GetAPIReader()
	}
	if l.Client == nil {
		l.Client = mgr.GetClient()
	}
	if l.Recorder == nil {
		l.Recorder = mgr.GetEventRecorder("flotilla-admission")
	}
	if l.Logger.GetSink() == nil {
		l.Logger = mgr.GetLogger().WithName("admission")
	}
	l.defaults()
	isPolicy := func(o client.Object) bool {
		return o.GetNamespace() == l.Namespace && o.GetLabels()[policy.ConfigMapLabel] == policy.ConfigMapLabelValue
	}
	every := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("admission-policies").
		// Every hub replica serves the webhook, so every replica loads the policies.
		WithOptions(controller.Options{NeedLeaderElection: &every}).
		// The first load, also when no policy ConfigMap exists (no event would come).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(loaderKey)
			return nil
		})).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{loaderKey}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return isPolicy(e.Object) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return isPolicy(e.Object) },
			GenericFunc: func(e event.GenericEvent) bool { return isPolicy(e.Object) },
			// Taking the label off removes the policy too.
			UpdateFunc: func(e event.UpdateEvent) bool { return isPolicy(e.ObjectOld) || isPolicy(e.ObjectNew) },
		})).
		Complete(l)
}

// defaults fills in the zero values; Reconcile may also be called without a manager.
func (l *Loader) defaults() {
	if l.Namespace == "" {
		l.Namespace = policy.DefaultNamespace
	}
	if l.StateName == "" {
		l.StateName = DefaultStateName
	}
	if l.good == nil {
		l.good, l.reported = map[types.NamespacedName]version{}, map[types.NamespacedName]string{}
	}
}

// Reconcile rebuilds the set from the ConfigMaps, in name order: each ConfigMap's current
// version is tried against the defaults and the ConfigMaps accepted before it; if refused, its
// last good version is tried instead.
func (l *Loader) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	l.defaults()
	list := &corev1.ConfigMapList{}
	if err := l.Reader.List(ctx, list, client.InNamespace(l.Namespace), client.MatchingLabels{policy.ConfigMapLabel: policy.ConfigMapLabelValue}); err != nil {
		return reconcile.Result{}, fmt.Errorf("admission: listing policy ConfigMaps in %s: %w", l.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	view := map[string]string{}
	for i := range list.Items {
		view[list.Items[i].Name] = list.Items[i].ResourceVersion
	}
	if !l.restored {
		if err := l.restore(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	sources := []policy.Source{l.Embedded}
	set, err := policy.Compile(ctx, sources, policy.Options{Authorizer: l.Authorizer, SkipTests: true})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("admission: embedded policies: %w", err)
	}
	good := map[types.NamespacedName]version{}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		current := version{ResourceVersion: cm.ResourceVersion, Files: policyFiles(cm)}
		candidate, cerr := l.try(ctx, sources, current.source(key))
		if cerr == nil {
			set, sources, good[key] = candidate, append(sources, current.source(key)), current
			l.report(cm, nil)
			continue
		}
		if errors.Is(cerr, context.Canceled) {
			return reconcile.Result{}, cerr
		}
		l.report(cm, cerr)
		if last, ok := l.good[key]; ok && last.ResourceVersion != current.ResourceVersion {
			if candidate, err := l.try(ctx, sources, last.source(key)); err == nil {
				set, sources, good[key] = candidate, append(sources, last.source(key)), last
				l.Logger.Info("keeping the last good version of a refused policy ConfigMap", "configmap", key.String(), "resourceVersion", last.ResourceVersion)
			}
		}
	}
	l.good = good
	for key := range l.reported {
		if !listed(list, key) {
			delete(l.reported, key)
		}
	}
	changed := l.Handler.SetPolicies(set)
	l.view.Store(&view)
	if changed && l.Resync != nil {
		l.Resync()
	}
	l.Logger.V(1).Info("policies in force", "policies", len(set.Policies()), "configmaps", len(good))
	return reconcile.Result{}, l.save(ctx)
}

// current reports whether the policy ConfigMaps are still as the set in force was built from
// them: a fresh list (a consistent read of the API server, not a cache) names the same
// ConfigMaps at the same resourceVersions. Every resourceVersion moves with every change, so
// a replica whose view is current has the set any other current replica has.
func (l *Loader) current(ctx context.Context) (bool, error) {
	view := l.view.Load()
	if view == nil {
		return false, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := l.Reader.List(ctx, list, client.InNamespace(l.Namespace), client.MatchingLabels{policy.ConfigMapLabel: policy.ConfigMapLabelValue}); err != nil {
		return false, fmt.Errorf("admission: listing policy ConfigMaps in %s: %w", l.Namespace, err)
	}
	if len(list.Items) != len(*view) {
		return false, nil
	}
	for _, cm := range list.Items {
		if rv, ok := (*view)[cm.Name]; !ok || rv != cm.ResourceVersion {
			return false, nil
		}
	}
	return true, nil
}

// policyFiles are a ConfigMap's .rego keys.
func policyFiles(cm *corev1.ConfigMap) map[string]string {
	files := map[string]string{}
	for _, f := range policy.SourceFromConfigMap(cm).Files {
		files[f.Name] = f.Content
	}
	return files
}

// restore reads the last good versions a previous run saved.
func (l *Loader) restore(ctx context.Context) error {
	cm := &corev1.ConfigMap{}
	err := l.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: l.StateName}, cm)
	if apierrors.IsNotFound(err) {
		// Nothing to save until a ConfigMap is accepted: a hub without policies writes nothing.
		l.restored, l.saved = true, stateKey(map[string]string{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("admission: reading the last good policies (ConfigMap %s/%s): %w", l.Namespace, l.StateName, err)
	}
	for name, raw := range cm.Data {
		var v version
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			l.Logger.Error(err, "ignoring an unreadable entry of the last good policies", "configmap", l.Namespace+"/"+l.StateName, "key", name)
			continue
		}
		l.good[types.NamespacedName{Namespace: l.Namespace, Name: name}] = v
	}
	l.restored, l.saved = true, stateKey(cm.Data)
	return nil
}

// save writes the last good versions when they changed.
func (l *Loader) save(ctx context.Context) error {
	data := map[string]any{}
	plain := map[string]string{}
	size := 0
	for key, v := range l.good {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		data[key.Name], plain[key.Name] = string(b), string(b)
		size += len(b)
	}
	if stateKey(plain) == l.saved {
		return nil
	}
	if size > maxState {
		l.Logger.Error(nil, "the last good policies are too large to keep across restarts", "bytes", size, "limit", maxState)
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.StateName}}
	if err := apply.Fields(ctx, l.Client, cm, stateFieldManager, false, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/managed-by": "flotilla-hub"}},
		"data":     data,
	}); err != nil {
		return fmt.Errorf("admission: saving the last good policies (ConfigMap %s/%s): %w", l.Namespace, l.StateName, err)
	}
	l.saved = stateKey(plain)
	return nil
}

// stateKey is a comparable form of the state's data.
func stateKey(data map[string]string) string {
	b, _ := json.Marshal(data) // map keys are sorted
	return string(b)
}

// try compiles and tests sources plus v; only v's tests need to pass anew, but tests run over
// all sources, which are cheap and known good.
func (l *Loader) try(ctx context.Context, sources []policy.Source, src policy.Source) (*policy.Set, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return policy.Compile(ctx, append(append([]policy.Source(nil), sources...), src), policy.Options{Authorizer: l.Authorizer})
}

// report records the outcome of a ConfigMap's version once.
func (l *Loader) report(cm *corev1.ConfigMap, err error) {
	key := client.ObjectKeyFromObject(cm)
	if l.reported[key] == cm.ResourceVersion {
		return
	}
	l.reported[key] = cm.ResourceVersion
	if err != nil {
		l.Handler.metrics.rejected.WithLabelValues(key.String()).Inc()
		l.Logger.Error(err, "policy ConfigMap refused; its last good version (if any) stays in force", "configmap", key.String(), "resourceVersion", cm.ResourceVersion)
		l.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, policy.EventReasonRejected, "Load", "refused: %s", truncate(err.Error(), 1000))
		return
	}
	l.Logger.Info("policy ConfigMap loaded", "configmap", key.String(), "resourceVersion", cm.ResourceVersion)
	l.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, policy.EventReasonLoaded, "Load", "loaded %d file(s) at resourceVersion %s", len(policy.SourceFromConfigMap(cm).Files), cm.ResourceVersion)
}

func listed(list *corev1.ConfigMapList, key types.NamespacedName) bool {
	for i := range list.Items {
		if list.Items[i].Name == key.Name && list.Items[i].Namespace == key.Namespace {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
