// Package placement is the hub's placement controller: it decides every Placement with the
// scheduler (hub/placement/scheduler) against a snapshot of the fleet shared by all
// placements, and writes the PlacementDecisions and the status only when they change.
package placement

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// FieldManager owns what the controller writes.
const FieldManager = "flotilla-placement"

// Event reasons, as OCM's placement controller records them.
const (
	EventDecisionCreate = "DecisionCreate"
	EventDecisionUpdate = "DecisionUpdate"
	EventDecisionDelete = "DecisionDelete"
	EventScoreUpdate    = "ScoreUpdate"
	EventPrioritizer    = "PrioritizerFailed"
)

// BuiltInPlugins maps OCM's built-in prioritizers to the WasmPlugins the hub installs for
// them (hub/plugininstall).
var BuiltInPlugins = map[string]string{
	clusterv1beta1.PrioritizerBalance:                   "placement-balance",
	clusterv1beta1.PrioritizerSteady:                    "placement-steady",
	clusterv1beta1.PrioritizerResourceAllocatableCPU:    "placement-resourceallocatablecpu",
	clusterv1beta1.PrioritizerResourceAllocatableMemory: "placement-resourceallocatablememory",
}

// decisionOwnerIndex indexes PlacementDecisions by the placement label.
const decisionOwnerIndex = "flotilla.dev/placement"

// DefaultWorkers is how many placements are scheduled at once.
const DefaultWorkers = 16

// Reconciler decides Placements.
type Reconciler struct {
	Client    client.Client
	Scheduler *scheduler.Scheduler
	// Registry, when set, is watched so placements are decided again when a prioritizer
	// plugin is loaded, replaced or removed.
	Registry *wasm.Registry
	// Recorder records core/v1 Events, as OCM's placement controller: each DecisionCreate of a
	// page and each new ScoreUpdate is its own Event (kubectl describe lists them), where the
	// events.k8s.io recorder would fold same-reason events of a placement into one series.
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Workers  int
	Logger   logr.Logger

	index *decisionIndex
	fleet *scheduler.Fleet
	// reconciled, when set, is called at the start of every Reconcile (tests count wake-ups).
	reconciled func(reconcile.Request)
	metrics    *metrics
	scores     sync.Map // placement key → scoreState
	// feasible: placement key → the clusters its last pass let through the filters
	// (map[string]struct{}). A score of a cluster outside them cannot change its decision.
	feasible sync.Map
	// scoreWrites: placement key → when its decisions' scores were last written. The cached
	// placement may lag our own status write; only this controller writes the time.
	scoreWrites sync.Map
}

// scoreState is what ScoreUpdate events remember: a hash of the last scores told and when.
type scoreState struct {
	sum uint64
	at  time.Time
}

// SetupWithManager watches placements and everything their decisions depend on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Workers <= 0 {
		r.Workers = DefaultWorkers
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor("placementController") //nolint:staticcheck // see Recorder
	}
	if r.Logger.GetSink() == nil {
		r.Logger = mgr.GetLogger().WithName("placement")
	}
	m, err := registerMetrics()
	if err != nil {
		return err
	}
	r.metrics = m
	r.index = newDecisionIndex()
	// A placement's decisions are found through an index, not by scanning its namespace.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &clusterv1beta1.PlacementDecision{}, decisionOwnerIndex,
		func(o client.Object) []string {
			if p := o.GetLabels()[clusterv1beta1.PlacementLabel]; p != "" {
				return []string{p}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("placement: indexing PlacementDecisions: %w", err)
	}
	// The fleet is kept from the informers' events, and each event wakes only the placements
	// it can affect (wake.go).
	r.fleet = scheduler.NewFleet(r.index)
	w := waker{r: r}

	all := handler.EnqueueRequestsFromMapFunc(r.allPlacements)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("placement").
		For(&clusterv1beta1.Placement{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&clusterv1beta1.PlacementDecision{}, r.decisionHandler()).
		Watches(&clusterv1.ManagedCluster{}, w.clusterHandler()).
		Watches(&clusterv1beta2.ManagedClusterSet{}, w.setHandler()).
		Watches(&clusterv1beta2.ManagedClusterSetBinding{}, w.bindingHandler()).
		Watches(&clusterv1alpha1.AddOnPlacementScore{}, w.scoreHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers})
	if r.Registry != nil {
		events, cancel := r.Registry.Subscribe(abi.TypePrioritizer)
		ch := make(chan event.GenericEvent)
		if err := mgr.Add(runnable(func(ctx context.Context) error {
			defer cancel()
			for {
				select {
				case <-ctx.Done():
					return nil
				case _, ok := <-events:
					if !ok {
						return nil
					}
					select {
					case ch <- event.GenericEvent{Object: &clusterv1beta1.Placement{}}:
					case <-ctx.Done():
						return nil
					}
				}
			}
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(ch, all))
	}
	return b.Complete(r)
}

type runnable func(ctx context.Context) error

func (f runnable) Start(ctx context.Context) error { return f(ctx) }

// decisionHandler keeps the decision index current and wakes a placement whose decisions
// someone else changed or deleted.
func (r *Reconciler) decisionHandler() handler.EventHandler {
	owner := func(o client.Object) []reconcile.Request {
		name := o.GetLabels()[clusterv1beta1.PlacementLabel]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueueAdder) {
			d, _ := e.Object.(*clusterv1beta1.PlacementDecision)
			r.index.set(client.ObjectKeyFromObject(e.Object).String(), d)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueueAdder) {
			d, _ := e.ObjectNew.(*clusterv1beta1.PlacementDecision)
			r.index.set(client.ObjectKeyFromObject(e.ObjectNew).String(), d)
			if e.ObjectNew.GetResourceVersion() != e.ObjectOld.GetResourceVersion() && !writtenByUs(e.ObjectNew) {
				for _, req := range owner(e.ObjectNew) {
					q.Add(req)
				}
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueueAdder) {
			r.index.set(client.ObjectKeyFromObject(e.Object).String(), nil)
			for _, req := range owner(e.Object) {
				q.Add(req)
			}
		},
	}
}

// writtenByUs: the last write of the object's status was ours (its managedFields say so).
func writtenByUs(o client.Object) bool {
	var last *metav1.ManagedFieldsEntry
	for i := range o.GetManagedFields() {
		f := &o.GetManagedFields()[i]
		if last == nil || (f.Time != nil && last.Time != nil && last.Time.Before(f.Time)) {
			last = f
		}
	}
	return last != nil && last.Manager == FieldManager
}

// allPlacements enqueues every placement.
func (r *Reconciler) allPlacements(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &clusterv1beta1.PlacementList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		r.Logger.Error(err, "listing placements")
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// Reconcile decides one placement and writes what changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if r.reconciled != nil {
		r.reconciled(req)
	}
	p := &clusterv1beta1.Placement{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.scores.Delete(req.String())
			r.scoreWrites.Delete(req.String())
			r.feasible.Delete(req.String())
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if p.DeletionTimestamp != nil || p.Annotations[clusterv1beta1.PlacementDisableAnnotation] == "true" {
		return reconcile.Result{}, nil
	}
	res, err := r.Scheduler.Decide(ctx, r.fleet.Snapshot(r.Clock.Now()), p)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.metrics.observe(res)
	if res.Misconfigured == "" && res.Failed == nil {
		f := make(map[string]struct{}, len(res.Scored))
		for _, d := range res.Scored {
			f[d.ClusterName] = struct{}{}
		}
		r.feasible.Store(req.String(), f)
	}
	if res.Misconfigured != "" {
		return requeueOnConflict(reconcile.Result{}, r.writeStatus(ctx, p, nil, res, nil))
	}
	for _, ig := range res.Ignored {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, EventPrioritizer, "prioritizer skipped (failurePolicy Ignore): %s", ig)
	}
	if res.Failed != nil {
		r.Recorder.Eventf(p, corev1.EventTypeWarning, EventPrioritizer, "decisions kept: %v", res.Failed)
		return requeueOnConflict(reconcile.Result{RequeueAfter: 30 * time.Second}, r.writeStatus(ctx, p, nil, res, nil))
	}
	requeue, err := r.writeDecisions(ctx, p, res)
	if err != nil {
		return requeueOnConflict(reconcile.Result{}, err)
	}
	if res.RequeueAfter > 0 && (requeue == 0 || res.RequeueAfter < requeue) {
		requeue = res.RequeueAfter
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// requeueOnConflict turns a write conflict (our cached placement was behind) into a quiet
// retry.
func requeueOnConflict(res reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	return res, err
}

// desiredDecision is one PlacementDecision to have.
type desiredDecision struct {
	name       string
	groupIndex int32
	groupName  string
	decisions  []clusterv1beta1.ClusterDecision
}

// pages lays out the groups as PlacementDecisions of at most 100 clusters, numbered from 1
// across groups; an empty result still has one (empty) PlacementDecision to watch.
func pages(p *clusterv1beta1.Placement, groups []scheduler.Group) ([]desiredDecision, []clusterv1beta1.DecisionGroupStatus) {
	var out []desiredDecision
	var status []clusterv1beta1.DecisionGroupStatus
	n := 0
	for _, g := range groups {
		gs := clusterv1beta1.DecisionGroupStatus{DecisionGroupIndex: g.Index, DecisionGroupName: g.Name, ClustersCount: int32(len(g.Clusters)), Decisions: []string{}}
		ds := g.Clusters
		for first := true; first || len(ds) > 0; first = false {
			k := min(len(ds), clusterv1beta1.MaxClusterDecisionsPerPlacementDecision)
			n++
			d := desiredDecision{name: fmt.Sprintf("%s-decision-%d", p.Name, n), groupIndex: g.Index, groupName: g.Name,
				decisions: make([]clusterv1beta1.ClusterDecision, k)}
			for i := range k {
				d.decisions[i] = clusterv1beta1.ClusterDecision{ClusterName: ds[i].ClusterName, Score: ds[i].Score}
			}
			ds = ds[k:]
			out = append(out, d)
			gs.Decisions = append(gs.Decisions, d.name)
		}
		status = append(status, gs)
	}
	return out, status
}

// writeDecisions brings the PlacementDecisions in line with res. A change of clusters is
// written at once; a change of scores alone at most once per spec.scoreRateLimit.
func (r *Reconciler) writeDecisions(ctx context.Context, p *clusterv1beta1.Placement, res *scheduler.Result) (time.Duration, error) {
	desired, groups := pages(p, res.Groups)
	list := &clusterv1beta1.PlacementDecisionList{}
	if err := r.Client.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingFields{decisionOwnerIndex: p.Name}); err != nil {
		return 0, fmt.Errorf("placement %s/%s: listing its decisions: %w", p.Namespace, p.Name, err)
	}
	existing := map[string]*clusterv1beta1.PlacementDecision{}
	var states []pageState
	for i := range list.Items {
		d := &list.Items[i]
		existing[d.Name] = d
		idx, _ := strconv.ParseInt(d.Labels[clusterv1beta1.DecisionGroupIndexLabel], 10, 32)
		states = append(states, pageState{name: d.Name, groupIndex: int32(idx),
			groupName: d.Labels[clusterv1beta1.DecisionGroupNameLabel], decisions: d.Status.Decisions})
	}
	sort.Slice(states, func(i, j int) bool { return states[i].name < states[j].name })
	now := r.Clock.Now()
	limit := scoreRateLimit(p)
	key := p.Namespace + "/" + p.Name
	last := r.lastScoreWrite(key, p)
	scoreDue := last.IsZero() || !now.Before(last.Add(limit))
	var requeue time.Duration
	scoresWritten, decisionsChanged := false, false
	// Pages whose clusters change, in an order that never hides a cluster that stays (see
	// planPageWrites). Each write is guarded by the resourceVersion the plan was made from:
	// a cache behind our own last pass must not make us drop a cluster's last copy.
	written := map[string]bool{}
	for _, w := range planPageWrites(p.Name, states, desired) {
		decisionsChanged = true
		switch w.kind {
		case writeCreate:
			if err := r.createDecision(ctx, p, w.page); err != nil {
				return 0, err
			}
			scoresWritten = true
			r.Recorder.Eventf(p, corev1.EventTypeNormal, EventDecisionCreate,
				"Decision %s is created with placement %s in namespace %s", w.page.name, p.Name, p.Namespace)
		case writeUpdate:
			ex := existing[w.page.name]
			if err := r.patchDecisionStatus(ctx, p, ex, w.page.decisions); err != nil {
				return 0, err
			}
			if !r.metadataCurrent(ex, p, w.page) {
				if err := r.applyDecisionMetadata(ctx, p, w.page); err != nil {
					return 0, err
				}
			}
			scoresWritten = true
			r.Recorder.Eventf(p, corev1.EventTypeNormal, EventDecisionUpdate,
				"Decision %s is updated with placement %s in namespace %s", w.page.name, p.Name, p.Namespace)
		case writeDelete:
			opts := []client.DeleteOption{}
			if ex := existing[w.page.name]; ex != nil {
				opts = append(opts, client.Preconditions{ResourceVersion: &ex.ResourceVersion})
			}
			obj := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: w.page.name}}
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, obj, opts...)); err != nil {
				return 0, fmt.Errorf("placement %s/%s: deleting PlacementDecision %s: %w", p.Namespace, p.Name, w.page.name, err)
			}
			r.Recorder.Eventf(p, corev1.EventTypeNormal, EventDecisionDelete,
				"Decision %s is deleted with placement %s in namespace %s", w.page.name, p.Name, p.Namespace)
		}
		written[w.page.name] = true
	}
	// Pages whose clusters stay: their labels, and their scores at most once per scoreRateLimit.
	for _, d := range desired {
		ex := existing[d.name]
		if written[d.name] || ex == nil {
			continue
		}
		if !r.metadataCurrent(ex, p, d) {
			if err := r.applyDecisionMetadata(ctx, p, d); err != nil {
				return 0, err
			}
		}
		if !sameScores(ex.Status.Decisions, d.decisions) {
			if !scoreDue {
				requeue = last.Add(limit).Sub(now)
				continue
			}
			if err := r.patchDecisionStatus(ctx, p, ex, d.decisions); err != nil {
				return 0, err
			}
			scoresWritten = true
		}
	}
	if again := r.scoreEvent(p, res, now, limit, decisionsChanged); again > 0 && (requeue == 0 || again < requeue) {
		requeue = again
	}
	var scoreTime *metav1.Time
	if scoresWritten {
		t := metav1.NewTime(now)
		scoreTime = &t
		r.scoreWrites.Store(key, now)
	} else if !last.IsZero() {
		t := metav1.NewTime(last)
		scoreTime = &t
	}
	return requeue, r.writeStatus(ctx, p, groups, res, scoreTime)
}

// scoreEvent records the feasible clusters' scores when they changed: at once when the
// decisions changed too, else at most once per scoreRateLimit (it returns when to look again).
func (r *Reconciler) scoreEvent(p *clusterv1beta1.Placement, res *scheduler.Result, now time.Time, limit time.Duration, decisionsChanged bool) time.Duration {
	if len(res.Scored) == 0 {
		return 0
	}
	var b strings.Builder
	for i, d := range res.Scored {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", d.ClusterName, d.Score)
		if b.Len() > 900 {
			fmt.Fprintf(&b, " and %d more", len(res.Scored)-i-1)
			break
		}
	}
	key := p.Namespace + "/" + p.Name
	text := b.String()
	h := fnv.New64a()
	h.Write([]byte(text))
	sum := h.Sum64()
	if v, ok := r.scores.Load(key); ok {
		st := v.(scoreState)
		if st.sum == sum {
			return 0
		}
		if !decisionsChanged && now.Before(st.at.Add(limit)) {
			return st.at.Add(limit).Sub(now)
		}
	}
	r.scores.Store(key, scoreState{sum: sum, at: now})
	r.Recorder.Eventf(p, corev1.EventTypeNormal, EventScoreUpdate, "%s", text)
	return 0
}

// lastScoreWrite is when the placement's decision scores were last written: what this
// controller remembers, or the status (after a restart), whichever is later.
func (r *Reconciler) lastScoreWrite(key string, p *clusterv1beta1.Placement) time.Time {
	var last time.Time
	if t := p.Status.LastScoreUpdateTime; t != nil {
		last = t.Time
	}
	if v, ok := r.scoreWrites.Load(key); ok && v.(time.Time).After(last) {
		last = v.(time.Time)
	}
	return last
}

func scoreRateLimit(p *clusterv1beta1.Placement) time.Duration {
	if p.Spec.ScoreRateLimit != nil && p.Spec.ScoreRateLimit.Duration > 0 {
		return p.Spec.ScoreRateLimit.Duration
	}
	d, _ := time.ParseDuration(clusterv1beta1.DefaultScoreRateLimit)
	return d
}

func sameClusters(a, b []clusterv1beta1.ClusterDecision) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ClusterName != b[i].ClusterName || a[i].Reason != b[i].Reason {
			return false
		}
	}
	return true
}

func sameScores(a, b []clusterv1beta1.ClusterDecision) bool {
	for i := range a {
		if a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}

func (r *Reconciler) metadataCurrent(ex *clusterv1beta1.PlacementDecision, p *clusterv1beta1.Placement, d desiredDecision) bool {
	l := ex.Labels
	if l[clusterv1beta1.PlacementLabel] != p.Name || l[clusterv1beta1.DecisionGroupIndexLabel] != fmt.Sprint(d.groupIndex) ||
		l[clusterv1beta1.DecisionGroupNameLabel] != d.groupName {
		return false
	}
	return metav1.IsControlledBy(ex, p)
}

func (r *Reconciler) applyDecisionMetadata(ctx context.Context, p *clusterv1beta1.Placement, d desiredDecision) error {
	obj := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: d.name}}
	labels := map[string]any{}
	for k, v := range decisionLabels(p, d) {
		labels[k] = v
	}
	err := apply.Fields(ctx, r.Client, obj, FieldManager, false, map[string]any{"metadata": map[string]any{
		"labels": labels,
		"ownerReferences": []any{map[string]any{
			"apiVersion": clusterv1beta1.GroupVersion.String(), "kind": "Placement", "name": p.Name, "uid": string(p.UID),
			"controller": true, "blockOwnerDeletion": true,
		}},
	}})
	if err != nil {
		return fmt.Errorf("placement %s/%s: PlacementDecision %s: %w", p.Namespace, p.Name, d.name, err)
	}
	return nil
}

// createDecision creates a PlacementDecision and writes its status: a create and a status
// update, cheaper for the API server than two server-side applies, and as safe since only this
// controller writes PlacementDecisions (its field manager still owns the fields).
func (r *Reconciler) createDecision(ctx context.Context, p *clusterv1beta1.Placement, d desiredDecision) error {
	obj := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: p.Namespace, Name: d.name, Labels: decisionLabels(p, d),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, clusterv1beta1.GroupVersion.WithKind("Placement"))},
	}}
	if err := r.Client.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("placement %s/%s: creating PlacementDecision %s: %w", p.Namespace, p.Name, d.name, err)
		}
		// Our cache is behind (or someone wrote a page of this name by hand): make its
		// metadata ours and plan again from what it holds, never overwrite it blind.
		if err := r.applyDecisionMetadata(ctx, p, d); err != nil {
			return err
		}
		return apierrors.NewConflict(clusterv1beta1.Resource("placementdecisions"), d.name,
			fmt.Errorf("placement %s/%s: PlacementDecision %s exists already", p.Namespace, p.Name, d.name))
	}
	return r.patchDecisionStatus(ctx, p, obj, d.decisions)
}

func decisionLabels(p *clusterv1beta1.Placement, d desiredDecision) map[string]string {
	return map[string]string{
		clusterv1beta1.PlacementLabel:          p.Name,
		clusterv1beta1.DecisionGroupIndexLabel: fmt.Sprint(d.groupIndex),
		clusterv1beta1.DecisionGroupNameLabel:  d.groupName,
	}
}

// patchDecisionStatus replaces the decisions of a PlacementDecision (an atomic list), guarded
// by the resourceVersion of ex as read (see planPageWrites).
func (r *Reconciler) patchDecisionStatus(ctx context.Context, p *clusterv1beta1.Placement, ex *clusterv1beta1.PlacementDecision, ds []clusterv1beta1.ClusterDecision) error {
	if ds == nil {
		ds = []clusterv1beta1.ClusterDecision{}
	}
	if err := apply.Guarded(ctx, r.Client, ex, FieldManager, true, map[string]any{"status": map[string]any{"decisions": ds}}); err != nil {
		return fmt.Errorf("placement %s/%s: PlacementDecision %s status: %w", p.Namespace, p.Name, ex.Name, err)
	}
	return nil
}

// writeStatus applies the placement's status when it changed. groups nil leaves the
// decision fields as they are (misconfigured, or a failed prioritizer).
func (r *Reconciler) writeStatus(ctx context.Context, p *clusterv1beta1.Placement, groups []clusterv1beta1.DecisionGroupStatus, res *scheduler.Result, scoreTime *metav1.Time) error {
	conds := append([]metav1.Condition(nil), p.Status.Conditions...)
	mis := metav1.Condition{Type: clusterv1beta1.PlacementConditionMisconfigured, Status: metav1.ConditionFalse,
		Reason: clusterv1beta1.PlacementReasonSucceedconfigured, Message: "Placement configurations check pass", ObservedGeneration: p.Generation}
	if res.Misconfigured != "" {
		mis.Status, mis.Reason, mis.Message = metav1.ConditionTrue, clusterv1beta1.PlacementReasonMisconfigured, res.Misconfigured
	}
	meta.SetStatusCondition(&conds, mis)
	if res.Misconfigured == "" {
		sat := metav1.Condition{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionFalse,
			Reason: res.Reason, Message: res.Message, ObservedGeneration: p.Generation}
		if res.Satisfied {
			sat.Status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&conds, sat)
	}
	status := p.Status.DeepCopy()
	status.Conditions = conds
	if status.DecisionGroups == nil {
		status.DecisionGroups = []clusterv1beta1.DecisionGroupStatus{} // required by the schema
	}
	if groups != nil {
		status.DecisionGroups = groups
		status.NumberOfSelectedClusters = int32(res.Selected)
	}
	if scoreTime != nil {
		status.LastScoreUpdateTime = scoreTime
	}
	if equality.Semantic.DeepEqual(status, &p.Status) {
		return nil
	}
	// The whole status (only this controller writes it), guarded by the resourceVersion it was
	// computed from: a cached copy behind our own last write must not put older values back.
	// A conflict just means: decide again.
	if err := apply.Guarded(ctx, r.Client, p, FieldManager, true, map[string]any{"status": status}); err != nil {
		return fmt.Errorf("placement %s/%s: status: %w", p.Namespace, p.Name, err)
	}
	return nil
}
