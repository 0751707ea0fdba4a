package work

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// fieldManager owns the ManifestWork finalizer the agent adds on the hub.
const fieldManager = apply.FieldManagerPrefix + "work-agent"

// cleanupRetry is how soon a deletion that waits for applied resources to go looks again.
const cleanupRetry = time.Second

// workReconciler reconciles one ManifestWork of the cluster namespace in ordered steps, as
// OCM's agent does: finalize a deleted work; hold it with a finalizer; anchor it with an
// AppliedManifestWork; apply the manifests; record what was applied and delete what no
// longer is; report status. It is the only writer of the work's status, so the periodic
// status sync is a requeue of this reconcile, and a status write needs no merge.
type workReconciler struct {
	cfg     Config
	hubHash string
	// hub reads ManifestWorks from the namespace-scoped cache and writes them directly.
	hub client.Client
	// managed reads AppliedManifestWorks from the managed cluster's cache; reader bypasses it.
	managed client.Client
	reader  client.Reader
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	// appliers by update strategy.
	appliers map[workv1.UpdateStrategyType]applier
	feedback *feedbackReader
	executor *executorValidator
	watches  *feedbackWatches
}

// watchFeedback keeps a watch on each resource whose manifest asks for feedbackScrapeType
// Watch, so a change reports feedback at once; the others (and those past the watch cap) are
// read every status sync.
func (r *workReconciler) watchFeedback(work types.NamespacedName, results []manifestResult) {
	var want []resourceKey
	key := func(res manifestResult) resourceKey {
		return resourceKey{gvr: res.gvr, namespace: res.meta.Namespace, name: res.meta.Name}
	}
	for _, res := range results {
		if res.decoded && res.option != nil && res.option.FeedbackScrapeType == workv1.FeedbackWatchType {
			want = append(want, key(res))
		}
	}
	watched := r.watches.track(work, want)
	for i := range results {
		if ok, asked := watched[key(results[i])]; asked && !ok {
			results[i].watchRefused = true
		}
	}
}

func (r *workReconciler) appliedName(work string) string { return r.hubHash + "-" + work }

// Reconcile implements reconcile.Reconciler for ManifestWorks (requests name hub objects).
func (r *workReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	work := &workv1.ManifestWork{}
	if err := r.hub.Get(ctx, req.NamespacedName, work); err != nil {
		// A work gone without its finalizer leaves its AppliedManifestWork to eviction.
		if apierrors.IsNotFound(err) {
			r.watches.track(req.NamespacedName, nil)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !work.DeletionTimestamp.IsZero() {
		r.watches.track(req.NamespacedName, nil)
		return r.finalize(ctx, work)
	}
	if !hasFinalizer(work, workv1.ManifestWorkFinalizer) {
		// Nothing is applied before the finalizer holds the work; its update event (the
		// predicate passes finalizer changes) brings the work back at once.
		if err := apply.Finalizer(ctx, r.hub, work, fieldManager, workv1.ManifestWorkFinalizer); err != nil {
			return reconcile.Result{}, fmt.Errorf("ManifestWork %s/%s: adding finalizer: %w", work.Namespace, work.Name, err)
		}
		return reconcile.Result{}, nil
	}
	amw, err := r.ensureApplied(ctx, work)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !amw.DeletionTimestamp.IsZero() {
		// Being evicted or cleaned: apply again once it is gone and recreated.
		return reconcile.Result{RequeueAfter: cleanupRetry}, nil
	}

	results := r.applyAll(ctx, work, amw)
	r.watchFeedback(req.NamespacedName, results)
	pending, err := both(
		func() (bool, error) { return r.recordApplied(ctx, amw, results) },
		func() error { return r.writeStatus(ctx, work, results) })
	if err != nil {
		return reconcile.Result{}, err
	}
	next := wait.Jitter(r.cfg.StatusSyncInterval, 0.1)
	if pending || failedTransiently(results) {
		next = min(next, cleanupRetry)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// both runs record (the AppliedManifestWork, on the managed cluster) and status (the work's,
// on the hub) at once: they read the apply results only, and neither needs the other, so the
// work is reported Applied one round trip sooner. What a manifest applied is owned by the
// AppliedManifestWork (owner reference) before either runs, so a deletion in between still
// removes it.
func both(record func() (bool, error), status func() error) (bool, error) {
	var pending bool
	var recordErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		pending, recordErr = record()
	}()
	statusErr := status()
	<-done
	return pending, errors.Join(recordErr, statusErr)
}

func hasFinalizer(o client.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

// ensureApplied returns the work's AppliedManifestWork, creating it (with its finalizer) if
// missing.
func (r *workReconciler) ensureApplied(ctx context.Context, work *workv1.ManifestWork) (*workv1.AppliedManifestWork, error) {
	amw := &workv1.AppliedManifestWork{}
	key := client.ObjectKey{Name: r.appliedName(work.Name)}
	err := r.managed.Get(ctx, key, amw)
	if err == nil {
		return amw, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("ManifestWork %s/%s: reading AppliedManifestWork %s: %w", work.Namespace, work.Name, key.Name, err)
	}
	amw = &workv1.AppliedManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Finalizers: []string{workv1.AppliedManifestWorkFinalizer}},
		Spec:       workv1.AppliedManifestWorkSpec{HubHash: r.hubHash, AgentID: r.cfg.AgentID, ManifestWorkName: work.Name},
	}
	err = r.managed.Create(ctx, amw)
	if apierrors.IsAlreadyExists(err) {
		// The cache had not seen it yet.
		err = r.reader.Get(ctx, key, amw)
	}
	if err != nil {
		return nil, fmt.Errorf("ManifestWork %s/%s: creating AppliedManifestWork %s: %w", work.Namespace, work.Name, key.Name, err)
	}
	return amw, nil
}

// manifestResult is the outcome of applying one manifest.
type manifestResult struct {
	meta     workv1.ManifestResourceMeta
	gvr      schema.GroupVersionResource
	strategy workv1.UpdateStrategyType
	// decoded is false when the manifest could not be read or mapped: it has no identity.
	decoded bool
	obj     *unstructured.Unstructured
	err     error
	option  *workv1.ManifestConfigOption
	// watchRefused: feedbackScrapeType Watch asked, but the watch limit is reached: polled.
	watchRefused bool
}

// applyOrder puts CustomResourceDefinitions, then Namespaces, before everything else, so
// the objects that need them are applied after them in the same pass.
func applyOrder(manifests []workv1.Manifest) []int {
	rank := func(m workv1.Manifest) int {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return 2
		}
		switch gk := u.GroupVersionKind().GroupKind(); gk {
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			return 0
		case schema.GroupKind{Kind: "Namespace"}:
			return 1
		}
		return 2
	}
	order := make([]int, len(manifests))
	ranks := make([]int, len(manifests))
	for i := range manifests {
		order[i], ranks[i] = i, rank(manifests[i])
	}
	sort.SliceStable(order, func(a, b int) bool { return ranks[order[a]] < ranks[order[b]] })
	return order
}

func (r *workReconciler) applyAll(ctx context.Context, work *workv1.ManifestWork, amw *workv1.AppliedManifestWork) []manifestResult {
	manifests := work.Spec.Workload.Manifests
	results := make([]manifestResult, len(manifests))
	ref := metav1.OwnerReference{APIVersion: workv1.GroupVersion.String(), Kind: "AppliedManifestWork", Name: amw.Name, UID: amw.UID}
	ctx = withIgnoreFieldsBudget(ctx)
	// The resources applied before, by group, resource, namespace and name (any version).
	recorded := make(map[resourceKey]bool, len(amw.Status.AppliedResources))
	for _, a := range amw.Status.AppliedResources {
		recorded[resourceKey{gvr: schema.GroupVersionResource{Group: a.Group, Resource: a.Resource}, namespace: a.Namespace, name: a.Name}] = true
	}
	for _, i := range applyOrder(manifests) {
		results[i] = r.applyOne(ctx, work, recorded, i, ref)
	}
	return results
}

func (r *workReconciler) applyOne(ctx context.Context, work *workv1.ManifestWork, recorded map[resourceKey]bool, i int, ref metav1.OwnerReference) manifestResult {
	res := manifestResult{meta: workv1.ManifestResourceMeta{Ordinal: int32(i)}, strategy: workv1.UpdateStrategyTypeUpdate}
	required := &unstructured.Unstructured{}
	if err := required.UnmarshalJSON(work.Spec.Workload.Manifests[i].Raw); err != nil {
		res.err = fmt.Errorf("spec.workload.manifests[%d]: %w", i, err)
		return res
	}
	gvk := required.GroupVersionKind()
	res.meta.Group, res.meta.Version, res.meta.Kind = gvk.Group, gvk.Version, gvk.Kind
	res.meta.Name, res.meta.Namespace = required.GetName(), required.GetNamespace()
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		res.err = fmt.Errorf("spec.workload.manifests[%d] (%s %s): %w", i, gvk.Kind, required.GetName(), err)
		return res
	}
	res.gvr = mapping.Resource
	res.meta.Resource = mapping.Resource.Resource
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		required.SetNamespace("")
		res.meta.Namespace = ""
	} else if res.meta.Namespace == "" {
		res.err = fmt.Errorf("spec.workload.manifests[%d].metadata.namespace: required for namespaced %s %s", i, gvk.Kind, required.GetName())
		return res
	}
	res.decoded = true
	// A UID or resourceVersion copied from a live object would make every write fail.
	required.SetUID("")
	required.SetResourceVersion("")

	res.option = findOption(res.meta, res.gvr, work.Spec.ManifestConfigs)
	strategy := workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeUpdate}
	if res.option != nil && res.option.UpdateStrategy != nil && res.option.UpdateStrategy.Type != "" {
		strategy = *res.option.UpdateStrategy
	}
	res.strategy = strategy.Type
	if completeBefore(res.meta, work.Status.ResourceStatus.Manifests) {
		// Manifests with the Complete condition are not updated (OCM): the live object stands
		// in for the apply result so status, feedback and condition rules keep flowing. Without
		// one (gone, or not readable) the status reads it again and says so.
		if live, err := resourceClient(r.dyn, res.gvr, res.meta.Namespace).Get(ctx, res.meta.Name, metav1.GetOptions{}); err == nil {
			res.obj = live
		}
		return res
	}
	a, ok := r.appliers[strategy.Type]
	if !ok {
		res.err = fmt.Errorf("unknown update strategy %q", strategy.Type)
		return res
	}
	o := owner{ref: ref, owned: ownedByWork(res.meta, res.gvr, work.Spec.DeleteOption)}
	if err := r.executor.validate(ctx, work.Spec.Executor, res.gvr, required, o.owned, strategy.Type == workv1.UpdateStrategyTypeReadOnly); err != nil {
		res.err = err
		return res
	}
	res.obj, res.err = a.apply(ctx, applyRequest{gvr: res.gvr, required: required, owner: o, strategy: strategy,
		recorded: recorded[resourceKey{gvr: schema.GroupVersionResource{Group: res.gvr.Group, Resource: res.gvr.Resource}, namespace: res.meta.Namespace, name: res.meta.Name}]})
	if res.err != nil {
		log.FromContext(ctx).V(1).Info("manifest not applied", "ordinal", i, "kind", gvk.Kind, "name", required.GetName(), "error", res.err.Error())
	}
	return res
}

// findOption returns the manifestConfigs entry for a resource.
func findOption(m workv1.ManifestResourceMeta, gvr schema.GroupVersionResource, options []workv1.ManifestConfigOption) *workv1.ManifestConfigOption {
	for i := range options {
		id := options[i].ResourceIdentifier
		if id.Group == gvr.Group && id.Resource == gvr.Resource && id.Name == m.Name && id.Namespace == m.Namespace {
			return &options[i]
		}
	}
	return nil
}

// ownedByWork reports whether deleting the work should delete the resource.
func ownedByWork(m workv1.ManifestResourceMeta, gvr schema.GroupVersionResource, opt *workv1.DeleteOption) bool {
	if opt == nil {
		return true
	}
	switch opt.PropagationPolicy {
	case workv1.DeletePropagationPolicyTypeOrphan:
		return false
	case workv1.DeletePropagationPolicyTypeSelectivelyOrphan:
		if opt.SelectivelyOrphan == nil {
			return true
		}
		for _, r := range opt.SelectivelyOrphan.OrphaningRules {
			if r.Group == gvr.Group && r.Resource == gvr.Resource && r.Name == m.Name && r.Namespace == m.Namespace {
				return false
			}
		}
	}
	return true
}

// failedTransiently reports results worth retrying soon: a failure that is neither a conflict
// of field ownership (which waits for a change of the work or of the other writer) nor an
// executor lacking permission (which waits for RBAC to change).
func failedTransiently(results []manifestResult) bool {
	for _, res := range results {
		var ce *conflictError
		var na *notAllowedError
		var ie *ignoreFieldError
		if res.err != nil && !errors.As(res.err, &ce) && !errors.As(res.err, &na) && !errors.As(res.err, &ie) {
			return true
		}
	}
	return false
}

// recordApplied writes the resources the work now has applied into the AppliedManifestWork
// and deletes those it no longer declares (unless orphaned or owned by another work). An
// entry stays listed until its resource is gone, so a restart finishes the deletion. It
// reports whether deletions are still pending.
func (r *workReconciler) recordApplied(ctx context.Context, amw *workv1.AppliedManifestWork, results []manifestResult) (bool, error) {
	type key struct{ group, resource, namespace, name string }
	keyOf := func(a workv1.AppliedManifestResourceMeta) key {
		return key{a.Group, a.Resource, a.Namespace, a.Name}
	}
	previous := map[key]workv1.AppliedManifestResourceMeta{}
	for _, a := range amw.Status.AppliedResources {
		previous[keyOf(a)] = a
	}
	declared := map[key]bool{}
	var next []workv1.AppliedManifestResourceMeta
	for _, res := range results {
		if !res.decoded || res.strategy == workv1.UpdateStrategyTypeReadOnly {
			continue
		}
		entry := workv1.AppliedManifestResourceMeta{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: res.gvr.Group, Resource: res.gvr.Resource, Namespace: res.meta.Namespace, Name: res.meta.Name},
			Version:            res.gvr.Version,
		}
		k := keyOf(entry)
		if declared[k] {
			continue
		}
		declared[k] = true
		switch {
		case res.obj != nil:
			entry.UID = string(res.obj.GetUID())
		case previous[k].UID != "":
			// Not applied this time: keep what was recorded.
			entry = previous[k]
		default:
			continue
		}
		next = append(next, entry)
	}
	var dropped []workv1.AppliedManifestResourceMeta
	for _, a := range amw.Status.AppliedResources {
		if !declared[keyOf(a)] {
			dropped = append(dropped, a)
		}
	}
	remaining := deleteApplied(log.IntoContext(ctx, log.FromContext(ctx).WithValues("appliedManifestWork", amw.Name)), r.dyn, dropped, amw.UID)
	pending := len(remaining) > 0
	next = append(next, remaining...)
	sort.Slice(next, func(i, j int) bool {
		a, b := next[i], next[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	if equality.Semantic.DeepEqual(next, amw.Status.AppliedResources) {
		return pending, nil
	}
	if err := apply.Guarded(ctx, r.managed, amw, fieldManager, true, appliedStatus(next, amw.Status.EvictionStartTime)); err != nil {
		return pending, fmt.Errorf("AppliedManifestWork %s: recording applied resources: %w", amw.Name, err)
	}
	return pending, nil
}
