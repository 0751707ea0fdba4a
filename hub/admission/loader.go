package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/core/policy"
)

// Loader keeps the Handler's policies in step with the policy ConfigMaps: the embedded
// defaults plus every labelled ConfigMap in Namespace that compiles and passes its tests. A
// refused version leaves the ConfigMap's last good version in force (or none) and is reported
// once by a Warning Event on the ConfigMap (reason PolicyRejected) and the log; an accepted
// one by a Normal Event (PolicyLoaded).
type Loader struct {
	Handler *Handler
	// Embedded is the source every set starts from.
	Embedded policy.Source
	// Namespace holds the policy ConfigMaps; default policy.DefaultNamespace.
	Namespace string
	// Reader reads ConfigMaps uncached (the manager caches only their metadata).
	Reader     client.Reader
	Authorizer policy.Authorizer
	Recorder   events.EventRecorder
	// Resync re-registers the webhook when the policies' rules change.
	Resync func()
	Logger logr.Logger

	// Only the reconcile goroutine touches these (one worker).
	good     map[types.NamespacedName]version // last accepted version of each ConfigMap
	reported map[types.NamespacedName]string  // resourceVersion last reported (loaded or rejected)
}

type version struct {
	resourceVersion string
	source          policy.Source
}

// loaderKey is the one request every ConfigMap event maps to: the set is rebuilt as a whole.
var loaderKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "policies"}}

// SetupWithManager watches the metadata of labelled ConfigMaps in Namespace.
func (l *Loader) SetupWithManager(mgr ctrl.Manager) error {
	if l.Namespace == "" {
		l.Namespace = policy.DefaultNamespace
	}
	if l.Reader == nil {
		l.Reader = mgr.GetAPIReader()
	}
	if l.Recorder == nil {
		l.Recorder = mgr.GetEventRecorder("flotilla-admission")
	}
	if l.Logger.GetSink() == nil {
		l.Logger = mgr.GetLogger().WithName("admission")
	}
	l.good, l.reported = map[types.NamespacedName]version{}, map[types.NamespacedName]string{}
	isPolicy := func(o client.Object) bool {
		return o.GetNamespace() == l.Namespace && o.GetLabels()[policy.ConfigMapLabel] == policy.ConfigMapLabelValue
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("admission-policies").
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

// Reconcile rebuilds the set from the ConfigMaps, in name order: each ConfigMap's current
// version is tried against the defaults and the ConfigMaps accepted before it; if refused, its
// last good version is tried instead.
func (l *Loader) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	list := &corev1.ConfigMapList{}
	if err := l.Reader.List(ctx, list, client.InNamespace(l.Namespace), client.MatchingLabels{policy.ConfigMapLabel: policy.ConfigMapLabelValue}); err != nil {
		return reconcile.Result{}, fmt.Errorf("admission: listing policy ConfigMaps in %s: %w", l.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	sources := []policy.Source{l.Embedded}
	set, err := policy.Compile(ctx, sources, policy.Options{Authorizer: l.Authorizer, SkipTests: true})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("admission: embedded policies: %w", err)
	}
	good := map[types.NamespacedName]version{}
	for i := range list.Items {
		cm := &list.Items[i]
		key := client.ObjectKeyFromObject(cm)
		current := version{resourceVersion: cm.ResourceVersion, source: policy.SourceFromConfigMap(cm)}
		candidate, cerr := l.try(ctx, sources, current)
		if cerr == nil {
			set, sources, good[key] = candidate, append(sources, current.source), current
			l.report(cm, nil)
			continue
		}
		if errors.Is(cerr, context.Canceled) {
			return reconcile.Result{}, cerr
		}
		l.report(cm, cerr)
		if last, ok := l.good[key]; ok && last.resourceVersion != current.resourceVersion {
			if candidate, err := l.try(ctx, sources, last); err == nil {
				set, sources, good[key] = candidate, append(sources, last.source), last
				l.Logger.Info("keeping the last good version of a refused policy ConfigMap", "configmap", key.String(), "resourceVersion", last.resourceVersion)
			}
		}
	}
	l.good = good
	for key := range l.reported {
		if _, ok := good[key]; !ok && !listed(list, key) {
			delete(l.reported, key)
		}
	}
	if l.Handler.SetPolicies(set) && l.Resync != nil {
		l.Resync()
	}
	l.Logger.V(1).Info("policies in force", "policies", len(set.Policies()), "configmaps", len(good))
	return reconcile.Result{}, nil
}

// try compiles and tests sources plus v; only v's tests need to pass anew, but tests run over
// all sources, which are cheap and known good.
func (l *Loader) try(ctx context.Context, sources []policy.Source, v version) (*policy.Set, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return policy.Compile(ctx, append(append([]policy.Source(nil), sources...), v.source), policy.Options{Authorizer: l.Authorizer})
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
