// Package mwrs is the hub's ManifestWorkReplicaSet controller: for each placement a replica
// set names, it creates, updates and deletes one ManifestWork (named as the replica set) in
// the namespace of every cluster the placement decided, following the placement reference's
// rollout strategy through core/rollout.
//
// A cluster's rollout state is read from its ManifestWork: no work, or one carrying an older
// template (its template-hash annotation differs), is ToApply; a current one is Progressing
// from the time the controller wrote it until the agent reports it Applied and Available for
// its generation (and, for every condition rule the template declares, that condition True),
// then Succeeded; Degraded=True makes it Failed (a condition rule named Degraded is how a
// template says what failure is). Applied=False and a condition rule False (a running Job's
// Complete) are "not yet": a cluster stuck there fails by progressDeadline. The engine decides which
// clusters to update now; the controller never writes a work the engine has not admitted,
// except to delete the work of a cluster no placement selects any more.
//
// With ManifestWorkReplicaSetOverrides naming the replica set (overrides.go), each selected
// cluster's desired work is the template rendered with them (hub/mwrs/override), once per
// reconcile; "the template" above is then that cluster's render and its hash, and the
// revision that rollback and its hold speak of is the template with the overrides. A cluster
// whose render fails is Failed (counted toward maxFailures) and its work is left as it is; one
// whose transform plugin is still loading waits (neither rendered nor failed) until the
// WasmPlugin's watch or a short requeue brings it back. Renders are cached by their inputs
// (plugins.go, rendercache.go), which each work records: the same inputs rendering another
// hash fail the cluster as not deterministic.
// Without overrides everything is as before they existed: same hashes, annotations, revisions.
package mwrs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
)

const (
	// ControllerName names the controller and, prefixed, its field manager.
	ControllerName = "manifestworkreplicaset"
	// FieldManager applies the generated works and the replica set's status.
	FieldManager = apply.FieldManagerPrefix + ControllerName

	// TemplateHashAnnotation on a generated work is the hash of the template it carries (the
	// cluster's render, with overrides).
	TemplateHashAnnotation = "work.flotilla.dev/template-hash"
	// UpdatedAtAnnotation on a generated work is when the controller last wrote its template
	// (RFC 3339): a cluster is Progressing since then.
	UpdatedAtAnnotation = "work.flotilla.dev/updated-at"
	// RolledBackFromAnnotation on a generated work is the revision (the template hash, without
	// overrides) a rollback took it back from. The hold on that template is read from the works themselves: the
	// rollback writes them before the replica set's status says RolledBack, so a reconcile
	// that sees a reverted work holds even when its cached status does not say so yet.
	RolledBackFromAnnotation = "work.flotilla.dev/rolled-back-from"
	// SucceededAtAnnotation on a generated work is "<template hash>,<RFC 3339 time>": when the
	// controller first saw the work succeed with that template. It is written only when the
	// work's conditions cannot tell, because they kept the status (and so the transition
	// time) they had with an earlier template, as the agent's conditions do.
	SucceededAtAnnotation = "work.flotilla.dev/succeeded-at"
	// soakFieldManager owns SucceededAtAnnotation (FieldManager's applies of a work state
	// its other fields and would drop it).
	soakFieldManager = FieldManager + "-soak"

	// parallelWrites bounds the work writes of one reconcile in flight at once.
	parallelWrites = 16

	// EventRolloutStopped is the Event of a rollout that maxFailures stopped.
	EventRolloutStopped = "RolloutStopped"

	// placementRefIndex indexes replica sets by the placements they name.
	placementRefIndex = "flotilla.dev/mwrs-placement"
	// ownerIndex indexes generated works by the replica set label's value.
	ownerIndex = "flotilla.dev/mwrs-owner"
)

// Reconciler runs ManifestWorkReplicaSets.
type Reconciler struct {
	Client client.Client
	// Recorder receives the replica set's Events; default the manager's.
	Recorder record.EventRecorder
	// Now is the clock; default time.Now.
	Now func() time.Time
	// CEL evaluates the celSelector of override rules (nil: such a rule fails its clusters).
	CEL override.CELMatcher
	// Transformer runs the transform rules' plugins (nil: such a rule fails its clusters).
	Transformer override.Transformer
	// Plugins tells whether transform plugins serve their current spec; default, for an
	// *override.WasmTransformer with a Reader, WasmPluginStates over its Reader and Registry.
	Plugins PluginStates
	// PluginRetry is how soon a replica set waiting for a plugin is reconciled again besides
	// the WasmPlugin watch; default 2 s.
	PluginRetry time.Duration
	// RenderCacheBytes bounds the render cache; 0: DefaultRenderCacheBytes, negative: no cache.
	RenderCacheBytes int64

	once    sync.Once
	initErr error
	cache   *renderCache
	metrics *renderMetrics
}

// init fills the defaults and makes the render cache and metrics, once.
func (r *Reconciler) init() error {
	r.once.Do(func() {
		if r.Now == nil {
			r.Now = time.Now
		}
		if r.PluginRetry == 0 {
			r.PluginRetry = defaultPluginRetry
		}
		if r.Plugins == nil {
			if wt, ok := r.Transformer.(*override.WasmTransformer); ok && wt.Reader != nil && wt.Registry != nil {
				r.Plugins = WasmPluginStates{Reader: wt.Reader, Registry: wt.Registry}
			}
		}
		switch {
		case r.RenderCacheBytes == 0:
			r.cache = newRenderCache(DefaultRenderCacheBytes)
		case r.RenderCacheBytes > 0:
			r.cache = newRenderCache(r.RenderCacheBytes)
		}
		r.metrics, r.initErr = registerRenderMetrics()
		if r.initErr != nil {
			r.initErr = fmt.Errorf("%s: %w", ControllerName, r.initErr)
		}
	})
	return r.initErr
}

func (r *Reconciler) renderer() renderer {
	return renderer{cel: r.CEL, transformer: r.Transformer, plugins: r.Plugins, cache: r.cache, metrics: r.metrics}
}

// SetupWithManager watches replica sets, their works, and the placements and decisions they
// follow.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.init(); err != nil {
		return err
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor(ControllerName) //nolint:staticcheck // core/v1 Events, as the rest of the hub
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &workv1alpha1.ManifestWorkReplicaSet{}, placementRefIndex, func(o client.Object) []string {
		var out []string
		for _, ref := range o.(*workv1alpha1.ManifestWorkReplicaSet).Spec.PlacementRefs {
			out = append(out, ref.Name)
		}
		return out
	}); err != nil {
		return fmt.Errorf("%s: indexing placement references: %w", ControllerName, err)
	}
	if err := idx.IndexField(context.Background(), &workv1.ManifestWork{}, ownerIndex, func(o client.Object) []string {
		if v := o.GetLabels()[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey]; v != "" {
			return []string{v}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("%s: indexing generated ManifestWorks: %w", ControllerName, err)
	}
	if err := idx.IndexField(context.Background(), &flotillav1alpha1.ManifestWorkReplicaSetOverride{}, overriddenIndex, replicaSetsOfOverride); err != nil {
		return fmt.Errorf("%s: indexing ManifestWorkReplicaSetOverrides by replica set: %w", ControllerName, err)
	}
	if err := idx.IndexField(context.Background(), &flotillav1alpha1.ManifestWorkReplicaSetOverride{}, pluginIndex, pluginsOfOverride); err != nil {
		return fmt.Errorf("%s: indexing ManifestWorkReplicaSetOverrides by plugin: %w", ControllerName, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&workv1alpha1.ManifestWorkReplicaSet{}).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			key, ok := ownerKey(o.GetLabels()[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey])
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: key}}
		})).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.byPlacement(ctx, o.GetNamespace(), o.GetName())
		})).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			if p := o.GetLabels()[clusterv1beta1.PlacementLabel]; p != "" {
				return r.byPlacement(ctx, o.GetNamespace(), p)
			}
			return nil
		})).
		Watches(&flotillav1alpha1.ManifestWorkReplicaSetOverride{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return overrideTargets(o.(*flotillav1alpha1.ManifestWorkReplicaSetOverride))
		})).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.byCluster),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				return renderFactsChanged(e.ObjectOld.(*clusterv1.ManagedCluster), e.ObjectNew.(*clusterv1.ManagedCluster))
			}})).
		Watches(&clusterv1beta2.ManagedClusterSet{}, handler.EnqueueRequestsFromMapFunc(r.overridden)).
		Watches(&flotillav1alpha1.WasmPlugin{}, handler.EnqueueRequestsFromMapFunc(r.byPlugin),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: pluginServingChanged})).
		Complete(apply.Quiet(r))
}

// byPlacement is the replica sets of namespace ns that name placement. A map function cannot
// return an error, so a failed list is logged: the placement's change then reaches its replica
// sets only with their next event.
func (r *Reconciler) byPlacement(ctx context.Context, ns, placement string) []reconcile.Request {
	list := &workv1alpha1.ManifestWorkReplicaSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{placementRefIndex: placement}); err != nil {
		log.FromContext(ctx).Error(err, "listing the ManifestWorkReplicaSets of a placement; its change reaches none of them", "placement", ns+"/"+placement)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// ownerKey parses the replica set label's "<namespace>.<name>". A namespace has no dots, so
// the first dot separates them.
func ownerKey(v string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(v, ".")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

func ownerValue(rs *workv1alpha1.ManifestWorkReplicaSet) string { return rs.Namespace + "." + rs.Name }

// Reconcile brings one replica set's works in line with its placements and strategies.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if err := r.init(); err != nil {
		return reconcile.Result{}, err
	}
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, rs); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	works, err := r.works(ctx, rs)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !rs.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.finalize(ctx, rs, works)
	}
	if !controllerutil.ContainsFinalizer(rs, workv1alpha1.ManifestWorkReplicaSetFinalizer) {
		if err := apply.Finalizer(ctx, r.Client, rs, FieldManager, workv1alpha1.ManifestWorkReplicaSetFinalizer); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWorkReplicaSet %s/%s: adding its finalizer: %w", rs.Namespace, rs.Name, err)
		}
	}

	allOverrides, err := listOverrides(ctx, r.Client, rs)
	if err != nil {
		return reconcile.Result{}, err
	}
	d, err := newDesired(rs, naming(allOverrides, rs))
	if err != nil {
		return reconcile.Result{}, err
	}
	prs := make([]*decisions.Placement, len(rs.Spec.PlacementRefs))
	for i, ref := range rs.Spec.PlacementRefs {
		if prs[i], err = readPlacement(ctx, r.Client, rs, ref); err != nil {
			return reconcile.Result{}, err
		}
	}
	// Every selected cluster is rendered once, before any rollout decision.
	if err := r.renderer().render(ctx, r.Client, rs, d, prs); err != nil {
		return reconcile.Result{}, err
	}
	// The same inputs must render the same work: a cluster whose work says otherwise fails.
	seen := make(map[string]*workWithAnnotations, len(works))
	for c, w := range works {
		seen[c] = &workWithAnnotations{inputs: w.Annotations[RenderInputsAnnotation], hash: w.Annotations[TemplateHashAnnotation]}
	}
	for _, c := range d.checkDeterminism(seen) {
		r.cache.remove(seen[c].inputs)
		if r.metrics != nil {
			r.metrics.failures.WithLabelValues(failureNondeterministic).Inc()
		}
	}
	now := r.Now()
	rev, prev, err := r.recordRevision(ctx, rs, d)
	if err != nil {
		return reconcile.Result{}, err
	}
	held := holds(rs, works, d.rev)
	st := &status{held: held, rev: d.rev, overrides: d.condition(rs.Generation, len(d.want)+len(d.failed)+len(d.waiting))}
	if rev == nil {
		st.unrecorded = fmt.Sprintf("revision %s (template and overrides) is over %d bytes: it is not recorded, so no rollback can return to it", d.rev, maxRevisionBytes)
	}
	var recheck time.Duration
	if len(d.waiting) > 0 {
		recheck = r.PluginRetry // besides the WasmPlugin watch
	}
	selected := map[string]bool{} // clusters some placement selects
	var prevRender *prevRenderer
	for i, ref := range rs.Spec.PlacementRefs {
		pr := prs[i]
		for _, g := range pr.Groups {
			for _, c := range g.Clusters {
				selected[c] = true
			}
		}
		states, err := clusterStates(pr.Groups, works, d.want, d.failed, &rs.Spec.ManifestWorkTemplate, now,
			func(w *workv1.ManifestWork) (time.Time, error) {
				return r.firstSeenSuccess(ctx, w, d.want[w.Namespace], now)
			})
		if err != nil {
			return reconcile.Result{}, err
		}
		res, err := rollout.Evaluate(rollout.Input{Strategy: ref.RolloutStrategy, Groups: pr.Groups, States: states, Now: now})
		if err != nil {
			st.invalid = append(st.invalid, fmt.Sprintf("placementRefs[%s].%v", ref.Name, err))
			continue
		}
		toUpdate := res.ToUpdate
		if held {
			toUpdate = nil // rolled back: this generation is not rolled out again
		}
		if rollbackEnabled(rs) && prev != nil && (held || res.Phase == rollout.PhaseStopped) {
			// The clusters that carry the new revision get the last completed one back,
			// rendered for them as it was then. The status names them all, those reverted
			// by an earlier reconcile (whose status write may have lost a race) included.
			if prevRender == nil {
				prevRender = &prevRenderer{r: r, rs: rs, prev: prev}
			}
			var back, kept []string
			revertedNow := false
			for _, g := range pr.Groups {
				for _, c := range g.Clusters {
					w := works[c]
					switch {
					case w != nil && d.want[c] != "" && w.Annotations[TemplateHashAnnotation] == d.want[c]:
						spec, h, ann, why, err := prevRender.render(ctx, pr.Name, g, c)
						if err != nil {
							return reconcile.Result{}, err
						}
						if why != "" {
							kept = append(kept, c+" ("+why+")")
							continue
						}
						if h == d.want[c] {
							continue // the previous revision renders this cluster the same
						}
						nw, err := r.applyWork(ctx, rs, ref.Name, c, spec, h, d.rev, now, ann)
						if err != nil {
							return reconcile.Result{}, err
						}
						works[c] = nw
						back, revertedNow = append(back, c), true
					case w != nil && w.Annotations[RolledBackFromAnnotation] == d.rev:
						back = append(back, c)
					}
				}
			}
			st.rollback(ref.Name, res.Message, d.rev, prev.hash, back, kept, revertedNow)
			toUpdate = nil
		}
		// The admitted clusters' works are independent writes: a thousand at once (an All
		// rollout) go out in parallel, not one API round trip after the other. A cluster
		// whose render failed is Failed, never admitted: its work stays as it is.
		toUpdate = slices.DeleteFunc(slices.Clone(toUpdate), func(c string) bool { return d.specs[c] == nil })
		written := make([]*workv1.ManifestWork, len(toUpdate))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(parallelWrites)
		for i, c := range toUpdate {
			g.Go(func() error {
				w, err := r.applyWork(gctx, rs, ref.Name, c, d.specs[c], d.want[c], "", now, d.annotations(c))
				written[i] = w
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return reconcile.Result{}, err
		}
		for i, c := range toUpdate {
			works[c] = written[i]
		}
		if res.RecheckAfter > 0 && (recheck == 0 || res.RecheckAfter < recheck) {
			recheck = res.RecheckAfter
		}
		st.add(pr, res, works, d.want)
	}
	// Works of clusters no placement selects any more go away.
	for cluster, w := range works {
		if selected[cluster] || !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWorkReplicaSet %s/%s: deleting the ManifestWork of cluster %s, which no placement selects: %w", rs.Namespace, rs.Name, cluster, err)
		}
		delete(works, cluster)
	}
	// A template that completed is a rollback target; marked before the status says Complete.
	if st.completed(len(rs.Spec.PlacementRefs)) && rev != nil {
		if err := r.markCompleted(ctx, rs, rev); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.writeOverrideStatus(ctx, rs, allOverrides, d); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.writeStatus(ctx, rs, st); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// works returns the replica set's generated works by cluster (namespace).
func (r *Reconciler) works(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet) (map[string]*workv1.ManifestWork, error) {
	return listWorks(ctx, r.Client, rs, client.MatchingFields{ownerIndex: ownerValue(rs)})
}

// listWorks lists the generated works of rs by cluster: through the controller's index, or
// (a client without it) by label.
func listWorks(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, opt client.ListOption) (map[string]*workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := c.List(ctx, list, opt); err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: listing its ManifestWorks: %w", rs.Namespace, rs.Name, err)
	}
	out := make(map[string]*workv1.ManifestWork, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Namespace] = &list.Items[i]
	}
	return out, nil
}

// finalize deletes the works of a replica set being deleted: with Foreground it keeps its
// finalizer until they are gone, with Background it lets go at once.
func (r *Reconciler) finalize(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, works map[string]*workv1.ManifestWork) error {
	for cluster, w := range works {
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, w)); err != nil {
			return fmt.Errorf("ManifestWorkReplicaSet %s/%s: deleting the ManifestWork of cluster %s: %w", rs.Namespace, rs.Name, cluster, err)
		}
	}
	if rs.Spec.CascadeDeletionPolicy == workv1alpha1.Foreground && len(works) > 0 {
		return nil // the works' deletion events bring us back
	}
	// The overrides stop telling about it.
	all, err := listOverrides(ctx, r.Client, rs)
	if err != nil {
		return err
	}
	if err := r.writeOverrideStatus(ctx, rs, all, nil); err != nil {
		return err
	}
	return apply.RemoveFinalizer(ctx, r.Client, rs, workv1alpha1.ManifestWorkReplicaSetFinalizer)
}

// readPlacement reads a referenced placement and its decision groups.
func readPlacement(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, ref workv1alpha1.LocalPlacementReference) (*decisions.Placement, error) {
	p, err := decisions.Read(ctx, c, rs.Namespace, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return p, nil
}

// clusterState reads a cluster's rollout state from its work.
func clusterState(w *workv1.ManifestWork, hash string, tmpl *workv1.ManifestWorkSpec, now time.Time) rollout.ClusterState {
	if w.Annotations[TemplateHashAnnotation] != hash || !w.DeletionTimestamp.IsZero() || specEdited(w) {
		return rollout.ClusterState{Status: rollout.ToApply}
	}
	since := w.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, w.Annotations[UpdatedAtAnnotation]); err == nil {
		since = t
	}
	current := func(t string) *metav1.Condition {
		c := meta.FindStatusCondition(w.Status.Conditions, t)
		if c == nil || c.ObservedGeneration != w.Generation && c.ObservedGeneration != 0 {
			return nil
		}
		return c
	}
	if c := current(workv1.WorkDegraded); c != nil && c.Status == metav1.ConditionTrue {
		return rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: c.LastTransitionTime.Time}
	}
	// Applied=False is not a failure: the agent reports it on its first pass and retries apply
	// errors; one that lasts is caught by progressDeadline.
	applied := current(workv1.WorkApplied)
	succeeded := applied != nil && applied.Status == metav1.ConditionTrue
	last := time.Time{}
	if succeeded {
		last = applied.LastTransitionTime.Time
	}
	for _, t := range successConditions(tmpl) {
		c := current(t)
		if c == nil || c.Status != metav1.ConditionTrue {
			succeeded = false
			break
		}
		if c.LastTransitionTime.After(last) {
			last = c.LastTransitionTime.Time
		}
	}
	if !succeeded {
		return rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: since}
	}
	// Success counts from when the work got there for this template, not before it was written.
	if last.Before(since) {
		last = since
	}
	if last.After(now) {
		last = now
	}
	return rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: last}
}

// staleSuccess reports whether the success conditions of a succeeded work may have turned
// True before its current template was written: an updated work (a first template has no
// earlier status) whose conditions all carry a transition time no later than the write (to
// the second) may have kept them from the earlier template, so they do not tell when the
// work succeeded with this one. clusterState then says when it was written, which would cut
// minSuccessTime short by the agent's time to apply the update.
func staleSuccess(w *workv1.ManifestWork, tmpl *workv1.ManifestWorkSpec) bool {
	written, err := time.Parse(time.RFC3339, w.Annotations[UpdatedAtAnnotation])
	if err != nil || w.Generation <= 1 {
		return false
	}
	for _, t := range append([]string{workv1.WorkApplied}, successConditions(tmpl)...) {
		if c := meta.FindStatusCondition(w.Status.Conditions, t); c != nil && c.LastTransitionTime.Time.After(written) {
			return false
		}
	}
	return true
}

// firstSeenSuccess is when the controller first saw w succeed with template hash: recorded in
// SucceededAtAnnotation, or now, which it records. w comes from the cache, so the write is
// guarded (apply.Guarded): an apply to a work deleted since would create a work holding only
// the annotation, one to a work changed since might record a success it no longer has; the
// conflict brings the reconcile back to the current work instead.
func (r *Reconciler) firstSeenSuccess(ctx context.Context, w *workv1.ManifestWork, hash string, now time.Time) (time.Time, error) {
	if t, ok := recordedSuccess(w, hash); ok {
		return t, nil
	}
	v := hash + "," + now.UTC().Format(time.RFC3339)
	if err := apply.Guarded(ctx, r.Client, w, soakFieldManager, false, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{SucceededAtAnnotation: v}},
	}); err != nil {
		return time.Time{}, fmt.Errorf("ManifestWork %s/%s: recording when it succeeded: %w", w.Namespace, w.Name, err)
	}
	return now, nil
}

// recordedSuccess is the time firstSeenSuccess recorded for the work's template hash.
func recordedSuccess(w *workv1.ManifestWork, hash string) (time.Time, bool) {
	if h, at, ok := strings.Cut(w.Annotations[SucceededAtAnnotation], ","); ok && h == hash {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// clusterStates reads the rollout state of every decided cluster that has a work. A
// succeeded work whose conditions predate its template (staleSuccess) counts from
// succeededAt(w) instead: the controller records that time, `rollout status` only reads it.
func clusterStates(groups []rollout.Group, works map[string]*workv1.ManifestWork, want, failed map[string]string, tmpl *workv1.ManifestWorkSpec, now time.Time,
	succeededAt func(w *workv1.ManifestWork) (time.Time, error)) (map[string]rollout.ClusterState, error) {
	states := map[string]rollout.ClusterState{}
	for _, g := range groups {
		for _, c := range g.Clusters {
			if _, ok := failed[c]; ok {
				// Its render failed: Failed whatever its work holds, counted toward maxFailures.
				states[c] = rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: now}
				continue
			}
			w := works[c]
			if w == nil {
				continue
			}
			s := clusterState(w, want[c], tmpl, now)
			if s.Status == rollout.Succeeded && staleSuccess(w, tmpl) {
				t, err := succeededAt(w)
				if err != nil {
					return nil, err
				}
				s.LastTransitionTime = t
			}
			states[c] = s
		}
	}
	return states, nil
}

// specEdited reports whether another writer changed the work's spec since the controller
// applied it: a field manager other than the controller's owns spec fields (the agent writes
// only status). The work is then to apply again, and the controller's apply, forcing
// ownership, puts the template back, as OCM's controller does.
func specEdited(w *workv1.ManifestWork) bool {
	for _, mf := range w.ManagedFields {
		if mf.Manager == FieldManager || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		if strings.Contains(string(mf.FieldsV1.Raw), `"f:spec"`) {
			return true
		}
	}
	return false
}

// successConditions are the work conditions that must be True, besides Applied: Available,
// and every condition the template's condition rules set (e.g. Complete for a Job), except
// Degraded: a rule named so says what failure is, and False is its healthy value.
func successConditions(tmpl *workv1.ManifestWorkSpec) []string {
	out := []string{workv1.WorkAvailable}
	for _, mc := range tmpl.ManifestConfigs {
		for _, rule := range mc.ConditionRules {
			if rule.Condition != workv1.WorkDegraded && !slices.Contains(out, rule.Condition) {
				out = append(out, rule.Condition)
			}
		}
	}
	return out
}

// templateHash identifies a template: works carrying another one are to be updated. It is
// the render's hash, so a cluster no override changes hashes the template.
func templateHash(t *workv1.ManifestWorkSpec) (string, error) { return override.Hash(t) }

// applyWork writes the template tmpl (with hash) into cluster's work (creating it), with the labels that tie
// it to the replica set and placement, and returns it as written.
// from, when not empty, is the revision a rollback takes the work back from; extra are more
// annotations (the revision and overrides, when overrides name the replica set).
func (r *Reconciler) applyWork(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, placement, cluster string, tmpl *workv1.ManifestWorkSpec, hash, from string, now time.Time, extra map[string]string) (*workv1.ManifestWork, error) {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: rs.Name}}
	spec, err := toMap(tmpl)
	if err != nil {
		return nil, err
	}
	at := now.UTC().Format(time.RFC3339)
	annotations := map[string]string{TemplateHashAnnotation: hash, UpdatedAtAnnotation: at}
	if from != "" {
		annotations[RolledBackFromAnnotation] = from
	}
	for k, v := range extra {
		annotations[k] = v
	}
	ann := make(map[string]any, len(annotations))
	for k, v := range annotations {
		ann[k] = v
	}
	if err := apply.Fields(ctx, r.Client, w, FieldManager, false, map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{
				workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs),
				workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey:  placement,
			},
			"annotations": ann,
		},
		"spec": spec,
	}); err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: applying the ManifestWork of cluster %s: %w", rs.Namespace, rs.Name, cluster, err)
	}
	w.Labels = map[string]string{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: ownerValue(rs),
		workv1alpha1.ManifestWorkReplicaSetPlacementNameLabelKey: placement}
	w.Annotations = annotations
	w.Spec = *tmpl
	w.CreationTimestamp = metav1.NewTime(now)
	return w, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// status accumulates the replica set's status over its placement references.
type status struct {
	placements []workv1alpha1.PlacementSummary
	total      workv1alpha1.ManifestWorkReplicaSetSummary
	missing    []string // placements not found
	empty      []string // placements that select nothing
	invalid    []string // rollout strategies that do not parse
	results    []refResult
	// rolledBack says what was rolled back; rolledBackNow that some work was reverted now.
	rolledBack    []string
	rolledBackNow bool
	// held: this generation was rolled back and is not rolled out again.
	held bool
	// rev is the revision rolled out.
	rev string
	// overrides is the OverridesApplied condition (nil: no override names the replica set).
	overrides *conditionSpec
	// unrecorded says the revision is too large to record (a rollback cannot return to it).
	unrecorded string
}

// rollback records that placement's updated clusters went back to template prev.
// now says some of them went back in this reconcile.
func (s *status) rollback(placement, why, hash, prev string, clusters, kept []string, now bool) {
	msg := fmt.Sprintf("placement %s: template %s rolled back to %s", placement, hash, prev)
	if len(clusters) > 0 {
		msg += fmt.Sprintf(" on %d clusters (%s)", len(clusters), strings.Join(clusters, ", "))
	}
	if len(kept) > 0 {
		msg += fmt.Sprintf("; %d clusters keep their work, %s cannot be rendered for them: %s", len(kept), prev, strings.Join(kept, ", "))
	}
	if why != "" {
		msg += ": " + why
	}
	s.rolledBack = append(s.rolledBack, msg)
	s.rolledBackNow = s.rolledBackNow || now
}

// completed reports whether the template rolled out successfully everywhere it was meant to:
// every one of refs placement references found and its rollout Complete, not rolled back,
// and at least one cluster succeeded (a template that reached no cluster proved nothing).
func (s *status) completed(refs int) bool {
	if s.held || len(s.invalid) > 0 || len(s.missing) > 0 || len(s.results) != refs || refs == 0 {
		return false
	}
	succeeded := 0
	for _, rr := range s.results {
		if rr.res.Phase != rollout.PhaseComplete {
			return false
		}
		succeeded += rr.res.Counts.Succeeded
	}
	return succeeded > 0
}

type refResult struct {
	name string
	res  rollout.Result
}

func (s *status) add(pr *decisions.Placement, res rollout.Result, works map[string]*workv1.ManifestWork, want map[string]string) {
	switch {
	case !pr.Found:
		s.missing = append(s.missing, pr.Name)
	case len(pr.Groups) == 0 || res.Counts.Total == 0:
		s.empty = append(s.empty, pr.Name)
	}
	var sum workv1alpha1.ManifestWorkReplicaSetSummary
	for _, g := range pr.Groups {
		for _, c := range g.Clusters {
			sum.DesiredTotal++
			w := works[c]
			if w == nil {
				continue
			}
			sum.Total++
			conds := w.Status.Conditions
			if meta.IsStatusConditionTrue(conds, workv1.WorkApplied) {
				sum.Applied++
			}
			if meta.IsStatusConditionTrue(conds, workv1.WorkAvailable) {
				sum.Available++
			}
			if meta.IsStatusConditionTrue(conds, workv1.WorkDegraded) {
				sum.Degraded++
			}
			if meta.IsStatusConditionTrue(conds, workv1.WorkProgressing) {
				sum.Progressing++
			}
			if h := w.Annotations[TemplateHashAnnotation]; h != "" && h == want[c] {
				sum.Updated++
			}
		}
	}
	s.placements = append(s.placements, workv1alpha1.PlacementSummary{
		Name:                    pr.Name,
		AvailableDecisionGroups: fmt.Sprintf("%d (%d / %d clusters applied)", pr.NGroups, sum.Applied, sum.DesiredTotal),
		Summary:                 sum,
	})
	s.total.Total += sum.Total
	s.total.Applied += sum.Applied
	s.total.Available += sum.Available
	s.total.Degraded += sum.Degraded
	s.total.Progressing += sum.Progressing
	s.total.DesiredTotal += sum.DesiredTotal
	s.total.Updated += sum.Updated
	s.results = append(s.results, refResult{name: pr.Name, res: res})
}

// conditions are the replica set's three conditions, as OCM sets them.
func (s *status) conditions(generation int64) []metav1.Condition {
	verified := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionPlacementVerified, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonAsExpected, ObservedGeneration: generation}
	switch {
	case len(s.invalid) > 0:
		verified.Status, verified.Reason, verified.Message = metav1.ConditionFalse, workv1alpha1.ReasonNotAsExpected, strings.Join(s.invalid, "; ")
	case len(s.missing) > 0:
		verified.Status, verified.Reason = metav1.ConditionFalse, workv1alpha1.ReasonPlacementDecisionNotFound
		verified.Message = "Placements not found: " + strings.Join(s.missing, ", ")
	case len(s.empty) == len(s.placements):
		verified.Status, verified.Reason = metav1.ConditionFalse, workv1alpha1.ReasonPlacementDecisionEmpty
		verified.Message = "Placements select no cluster: " + strings.Join(s.empty, ", ")
	}

	rolled := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonComplete, ObservedGeneration: generation}
	var msgs []string
	for _, rr := range s.results {
		if rr.res.Phase != rollout.PhaseComplete {
			rolled.Status, rolled.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProgressing
		}
		if rr.res.Phase == rollout.PhaseStopped || rr.res.Phase == rollout.PhaseProgressing {
			msgs = append(msgs, rr.name+": "+rr.res.Message)
		}
	}
	if len(s.results) == 0 {
		rolled.Status, rolled.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProgressing
	}
	rolled.Message = strings.Join(msgs, "; ")
	if s.held {
		rolled.Status, rolled.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProgressing
		rolled.Message = "rolled back after a failure (see RolledBack); change the template to roll out again"
	}

	applied := metav1.Condition{Type: workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.ReasonAsExpected, ObservedGeneration: generation}
	switch {
	case s.total.Degraded > 0:
		applied.Status, applied.Reason = metav1.ConditionFalse, workv1alpha1.ReasonNotAsExpected
		applied.Message = fmt.Sprintf("%d of %d ManifestWorks are degraded", s.total.Degraded, s.total.Total)
	case s.total.Applied < s.total.Total || s.total.Total == 0:
		applied.Status, applied.Reason = metav1.ConditionFalse, workv1alpha1.ReasonProcessing
		applied.Message = fmt.Sprintf("%d of %d ManifestWorks applied", s.total.Applied, s.total.Total)
	}
	return []metav1.Condition{verified, rolled, applied}
}

// rollbackCondition is the RolledBack condition of a replica set with rollback on: True
// (for this generation) once a rollout of it was rolled back.
func (s *status) rollbackCondition(rs *workv1alpha1.ManifestWorkReplicaSet) *metav1.Condition {
	if !rollbackEnabled(rs) {
		return nil
	}
	if len(s.rolledBack) > 0 {
		return &metav1.Condition{Type: ConditionRolledBack, Status: metav1.ConditionTrue, Reason: ReasonMaxFailuresBreached,
			Message: strings.Join(s.rolledBack, "; "), ObservedGeneration: rs.Generation}
	}
	if rolledBack(rs, s.rev) {
		return nil // keep it as it is
	}
	msg := "rollback on failure is on; this generation was not rolled back"
	if s.unrecorded != "" {
		msg += "; " + s.unrecorded
	}
	return &metav1.Condition{Type: ConditionRolledBack, Status: metav1.ConditionFalse, Reason: ReasonNotRolledBack,
		Message: msg, ObservedGeneration: rs.Generation}
}

// writeStatus writes the status when it changed (only this controller writes it).
func (r *Reconciler) writeStatus(ctx context.Context, rs *workv1alpha1.ManifestWorkReplicaSet, s *status) error {
	conds := append([]metav1.Condition(nil), rs.Status.Conditions...)
	for _, c := range s.conditions(rs.Generation) {
		meta.SetStatusCondition(&conds, c)
	}
	rb := s.rollbackCondition(rs)
	if rb != nil {
		if old := meta.FindStatusCondition(rs.Status.Conditions, ConditionRolledBack); rb.Status == metav1.ConditionTrue && s.rolledBackNow &&
			(old == nil || old.Status != metav1.ConditionTrue || old.ObservedGeneration != rs.Generation) {
			r.Recorder.Event(rs, corev1.EventTypeWarning, EventRolledBack, rb.Message)
		}
		// A held rollback keeps its first message (which clusters went back).
		if !(rolledBack(rs, s.rev) && rb.Status == metav1.ConditionTrue) {
			meta.SetStatusCondition(&conds, *rb)
		}
	} else if !rollbackEnabled(rs) {
		meta.RemoveStatusCondition(&conds, ConditionRolledBack)
	}
	if oc := s.overrides; oc == nil {
		meta.RemoveStatusCondition(&conds, ConditionOverridesApplied)
	} else {
		c := metav1.Condition{Type: ConditionOverridesApplied, Status: metav1.ConditionTrue, Reason: oc.reason, Message: oc.message, ObservedGeneration: rs.Generation}
		if s.unrecorded != "" {
			c.Message += "; " + s.unrecorded
		}
		if !oc.status {
			c.Status = metav1.ConditionFalse
			// A render failure is told once per new message.
			if old := meta.FindStatusCondition(rs.Status.Conditions, ConditionOverridesApplied); old == nil || old.Message != oc.message {
				r.Recorder.Event(rs, corev1.EventTypeWarning, EventOverrideRenderFailed, oc.message)
			}
		}
		meta.SetStatusCondition(&conds, c)
	}
	next := workv1alpha1.ManifestWorkReplicaSetStatus{Conditions: conds, Summary: s.total, PlacementsSummary: s.placements}
	if next.PlacementsSummary == nil {
		next.PlacementsSummary = []workv1alpha1.PlacementSummary{}
	}
	if equality.Semantic.DeepEqual(next, rs.Status) {
		return nil
	}
	// A rollout that stops is told once, when its message first says so.
	old := meta.FindStatusCondition(rs.Status.Conditions, workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut)
	for _, rr := range s.results {
		if rr.res.Phase == rollout.PhaseStopped && (old == nil || !strings.Contains(old.Message, rr.res.Message)) {
			r.Recorder.Eventf(rs, corev1.EventTypeWarning, EventRolloutStopped, "placement %s: %s", rr.name, rr.res.Message)
		}
	}
	if err := apply.Guarded(ctx, r.Client, rs, FieldManager, true, map[string]any{"status": next}); err != nil {
		return fmt.Errorf("ManifestWorkReplicaSet %s/%s: status: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}
