package dashboard

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// byObject is the cache configuration of one resource: where access allows, with its
// selectors; ok is false when it is not watched at all.
func (s *Server) byObject(name string, label labels.Selector, field fields.Selector) (cache.ByObject, bool) {
	a := s.resAccess[name]
	if a.none() {
		return cache.ByObject{}, false
	}
	b := cache.ByObject{Label: label, Field: field, Transform: cache.TransformStripManagedFields()}
	if !a.all {
		b.Namespaces = map[string]cache.Config{}
		for _, ns := range a.namespaces {
			b.Namespaces[ns] = cache.Config{LabelSelector: label, FieldSelector: field}
		}
	}
	return b, true
}

func (s *Server) buildCaches() error {
	by := map[client.Object]cache.ByObject{}
	for _, name := range mainResources {
		var label labels.Selector
		var field fields.Selector
		switch name {
		case resLeases:
			field = fields.OneTermEqualSelector("metadata.name", leaseName)
		}
		if b, ok := s.byObject(name, label, field); ok {
			by[resources[name].obj()] = b
		}
	}
	c, err := cache.New(s.opts.Config, cache.Options{Scheme: s.scheme, ByObject: by, ReaderFailOnMissingInformer: true})
	if err != nil {
		return fmt.Errorf("dashboard: watches of %s: %w", s.opts.Config.Host, err)
	}
	s.cache = c
	if b, ok := s.byObject(resPolicies, labels.SelectorFromSet(labels.Set{policy.ConfigMapLabel: policy.ConfigMapLabelValue}), nil); ok {
		pc, err := cache.New(s.opts.Config, cache.Options{Scheme: s.scheme, ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: b}, ReaderFailOnMissingInformer: true})
		if err != nil {
			return fmt.Errorf("dashboard: policy ConfigMap watch of %s: %w", s.opts.Config.Host, err)
		}
		s.policies = pc
	}
	s.events = map[string]cache.Cache{}
	for _, kind := range []string{eventsPlacement, eventsPlugin, eventsConfigMap} {
		b, ok := s.byObject(resEvents, nil, fields.OneTermEqualSelector("involvedObject.kind", kind))
		if !ok {
			break
		}
		ec, err := cache.New(s.opts.Config, cache.Options{Scheme: s.scheme, ByObject: map[client.Object]cache.ByObject{&corev1.Event{}: b}, ReaderFailOnMissingInformer: true})
		if err != nil {
			return fmt.Errorf("dashboard: %s Event watch of %s: %w", kind, s.opts.Config.Host, err)
		}
		if err := ec.IndexField(context.Background(), &corev1.Event{}, involvedIndex, func(o client.Object) []string {
			e := o.(*corev1.Event)
			return []string{e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name}
		}); err != nil {
			return fmt.Errorf("dashboard: indexing %s Events: %w", kind, err)
		}
		s.events[kind] = ec
	}
	return nil
}

// handlerFor turns informer notifications into marks of what to recompute.
func handlerFor(onChange func(old, obj client.Object)) toolscache.ResourceEventHandler {
	unwrap := func(o any) client.Object {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		co, _ := o.(client.Object)
		return co
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if co := unwrap(o); co != nil {
				onChange(nil, co)
			}
		},
		UpdateFunc: func(old, o any) {
			if co := unwrap(o); co != nil {
				onChange(unwrap(old), co)
			}
		},
		DeleteFunc: func(o any) {
			if co := unwrap(o); co != nil {
				onChange(nil, co)
			}
		},
	}
}

// watch registers the informers and what each change marks dirty.
func (s *Server) watch(ctx context.Context) error {
	s.informers = map[string]cache.Informer{}
	on := map[string]func(old, o client.Object){
		resClusters: func(old, o client.Object) {
			s.mark(KindClusters, o.GetName())
			if old == nil || !equality.Semantic.DeepEqual(old.GetLabels(), o.GetLabels()) {
				s.markAll(KindClusterSets)
			}
		},
		resLeases: func(_, o client.Object) {
			if o.GetName() == leaseName {
				s.mark(KindClusters, o.GetNamespace())
			}
		},
		resClusterSets: func(_, o client.Object) {
			s.mark(KindClusterSets, o.GetName())
			s.markAll(KindClusters)
		},
		resPlacements: func(_, o client.Object) {
			s.mark(KindPlacements, key(o))
			s.markRolloutsOf(key(o))
		},
		resDecisions: func(_, o client.Object) {
			if p := o.GetLabels()[clusterv1beta1.PlacementLabel]; p != "" {
				s.mark(KindPlacements, o.GetNamespace()+"/"+p)
				s.markRolloutsOf(o.GetNamespace() + "/" + p)
			}
		},
		resMWRS:      func(_, o client.Object) { s.markRollouts("mwrs:" + key(o)) },
		resWorks:     func(_, o client.Object) { s.markRollouts(workRollout(o)) },
		resOverrides: func(_, o client.Object) { s.markRollouts("") },
		resAddons: func(_, o client.Object) {
			s.mark(KindAddons, key(o))
			s.markRollouts("cma:" + o.GetName())
		},
		resAddonDefs: func(_, o client.Object) {
			s.mark(KindAddonDefs, o.GetName())
			s.markRollouts("cma:" + o.GetName())
		},
		resPlugins:  func(_, o client.Object) { s.mark(KindPlugins, o.GetName()) },
		resPolicies: func(_, o client.Object) { s.mark(KindPolicies, key(o)) },
	}
	for _, name := range mainResources {
		if s.resAccess[name].none() {
			continue
		}
		inf, err := s.cache.GetInformer(ctx, resources[name].obj(), cache.BlockUntilSynced(false))
		if meta.IsNoMatchError(err) {
			// A hub without this API (an OCM hub without Flotilla's kinds): the page says so.
			s.resAccess[name] = resAccess{err: fmt.Sprintf("%s is not served by %s", resources[name].gr, s.opts.Config.Host)}
			continue
		}
		if err != nil {
			return fmt.Errorf("dashboard: watching %s: %w", resources[name].gr, err)
		}
		if _, err := inf.AddEventHandler(handlerFor(on[name])); err != nil {
			return fmt.Errorf("dashboard: watching %s: %w", resources[name].gr, err)
		}
		s.informers[resources[name].gr.String()] = inf
	}
	if s.policies != nil {
		inf, err := s.policies.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("dashboard: watching policy ConfigMaps: %w", err)
		}
		if _, err := inf.AddEventHandler(handlerFor(on[resPolicies])); err != nil {
			return fmt.Errorf("dashboard: watching policy ConfigMaps: %w", err)
		}
		s.informers["configmaps (policies)"] = inf
	}
	for kind, ec := range s.events {
		inf, err := ec.GetInformer(ctx, &corev1.Event{}, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("dashboard: watching %s Events: %w", kind, err)
		}
		if _, err := inf.AddEventHandler(handlerFor(func(_, o client.Object) {
			io := o.(*corev1.Event).InvolvedObject
			switch kind {
			case eventsPlacement:
				s.mark(KindPlacements, io.Namespace+"/"+io.Name)
			case eventsPlugin:
				s.mark(KindPlugins, io.Name)
			case eventsConfigMap:
				s.mark(KindPolicies, io.Namespace+"/"+io.Name)
			}
		})); err != nil {
			return fmt.Errorf("dashboard: watching %s Events: %w", kind, err)
		}
		s.informers["events (about "+kind+"s)"] = inf
	}
	return nil
}

func key(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// workRollout is the rollout mark of a ManifestWork: its replica set's label
// ("<namespace>.<name>", resolved against the replica sets when recomputing, since names
// may contain dots), or none for other works (add-on rollouts follow their MCAs).
func workRollout(o client.Object) string {
	if v := o.GetLabels()[workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey]; v != "" {
		return "label:" + v
	}
	return "-"
}

// dirtySet is what the next model pass recomputes, per kind: keys, or all.
type dirtySet struct {
	keys map[string]map[string]bool
	all  map[string]bool
}

func newDirtySet() dirtySet {
	return dirtySet{keys: map[string]map[string]bool{}, all: map[string]bool{}}
}

func (d dirtySet) empty() bool { return len(d.keys) == 0 && len(d.all) == 0 }

func (s *Server) mark(kind, k string) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if s.dirty.keys[kind] == nil {
		s.dirty.keys[kind] = map[string]bool{}
	}
	s.dirty.keys[kind][k] = true
}

func (s *Server) markAll(kind string) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	s.dirty.all[kind] = true
}

// markRollouts marks one rollout, "mwrs:ns/name", "cma:name" or "label:<replica set label>"
// ("" = all, "-" = none), for the debounced rollout pass.
func (s *Server) markRollouts(k string) {
	if k == "-" {
		return
	}
	s.rollMu.Lock()
	if k == "" {
		s.rollAll = true
	} else {
		s.rollDirty[k] = true
	}
	s.rollMu.Unlock()
	select {
	case s.rollKick <- struct{}{}:
	default:
	}
}

// modelLoop recomputes what changed and sends it, at most once per BatchInterval.
func (s *Server) modelLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.BatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.recompute(ctx)
		s.st.flush()
	}
}

// recompute rebuilds the view objects marked dirty from the cache.
func (s *Server) recompute(ctx context.Context) {
	s.dirtyMu.Lock()
	d := s.dirty
	s.dirty = newDirtySet()
	s.dirtyMu.Unlock()
	if d.empty() {
		return
	}
	if d.all[KindClusters] || len(d.keys[KindClusters]) > 0 {
		s.recomputeClusters(ctx, d.all[KindClusters], d.keys[KindClusters])
	}
	if d.all[KindClusterSets] || len(d.keys[KindClusterSets]) > 0 {
		s.recomputeClusterSets(ctx)
	}
	for k := range d.keys[KindPlacements] {
		s.recomputePlacement(ctx, k)
	}
	for k := range d.keys[KindAddons] {
		recomputeOne(ctx, s, s.cache, KindAddons, k, &addonv1alpha1.ManagedClusterAddOn{}, func(o *addonv1alpha1.ManagedClusterAddOn) any { return AddonOf(o) })
	}
	for k := range d.keys[KindAddonDefs] {
		recomputeOne(ctx, s, s.cache, KindAddonDefs, k, &addonv1alpha1.ClusterManagementAddOn{}, func(o *addonv1alpha1.ClusterManagementAddOn) any { return AddonDefOf(o) })
	}
	for k := range d.keys[KindPlugins] {
		recomputeOne(ctx, s, s.cache, KindPlugins, k, &flotillav1alpha1.WasmPlugin{}, func(o *flotillav1alpha1.WasmPlugin) any {
			return PluginOf(o, s.eventsOf(ctx, eventsPlugin, "", o.Name))
		})
	}
	for k := range d.keys[KindPolicies] {
		if s.policies == nil {
			break
		}
		recomputeOne(ctx, s, s.policies, KindPolicies, k, &corev1.ConfigMap{}, func(o *corev1.ConfigMap) any {
			return PolicyOf(o, s.eventsOf(ctx, eventsConfigMap, o.Namespace, o.Name))
		})
	}
}

func objectKey(k string) client.ObjectKey {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return client.ObjectKey{Namespace: k[:i], Name: k[i+1:]}
		}
	}
	return client.ObjectKey{Name: k}
}

// recomputeOne sets (or deletes) the view object of kind k from its object in the cache.
func recomputeOne[T client.Object](ctx context.Context, s *Server, r client.Reader, kind, k string, o T, conv func(T) any) {
	err := r.Get(ctx, objectKey(k), o)
	switch {
	case apierrors.IsNotFound(err):
		s.st.del(kind, k)
	case err != nil:
		s.log.Error(err, "reading for the dashboard", "kind", kind, "key", k)
	default:
		s.st.set(kind, k, o.GetNamespace(), kindGR(kind), conv(o))
	}
}

// eventsOf are the Events about namespace/name of an involved kind (none when not watched).
func (s *Server) eventsOf(ctx context.Context, kind, namespace, name string) []corev1.Event {
	ec := s.events[kind]
	if ec == nil {
		return nil
	}
	list := &corev1.EventList{}
	if err := ec.List(ctx, list, client.MatchingFields{involvedIndex: namespace + "/" + name}); err != nil {
		s.log.Error(err, "listing Events", "kind", kind, "namespace", namespace, "name", name)
		return nil
	}
	return list.Items
}

// selectors are the cluster sets with their member selectors.
func (s *Server) selectors(ctx context.Context) []setSelector {
	if s.resAccess[resClusterSets].none() {
		return nil
	}
	list := &clusterv1beta2.ManagedClusterSetList{}
	if err := s.cache.List(ctx, list); err != nil {
		s.log.Error(err, "listing ManagedClusterSets")
		return nil
	}
	out := make([]setSelector, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, selectorOf(&list.Items[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// selectorOf is a set with its member selector (hub/registration/clusterset.Selector); an
// invalid selector matches nothing.
func selectorOf(set *clusterv1beta2.ManagedClusterSet) setSelector {
	sel, err := clusterset.Selector(set)
	if err != nil {
		sel = nil
	}
	return setSelector{name: set.Name, sel: sel}
}

func setsOf(sels []setSelector, l map[string]string) []string {
	out := []string{}
	for _, s := range sels {
		if s.sel != nil && s.sel.Matches(labels.Set(l)) {
			out = append(out, s.name)
		}
	}
	return out
}

func (s *Server) recomputeClusters(ctx context.Context, all bool, keys map[string]bool) {
	if s.resAccess[resClusters].none() {
		return
	}
	sels := s.selectors(ctx)
	one := func(mc *clusterv1.ManagedCluster) {
		var lease *coordinationv1.Lease
		if !s.resAccess[resLeases].none() {
			l := &coordinationv1.Lease{}
			if err := s.cache.Get(ctx, client.ObjectKey{Namespace: mc.Name, Name: leaseName}, l); err == nil {
				lease = l
			}
		}
		s.st.set(KindClusters, mc.Name, "", kindGR(KindClusters), ClusterOf(mc, lease, setsOf(sels, mc.Labels)))
	}
	if all {
		list := &clusterv1.ManagedClusterList{}
		if err := s.cache.List(ctx, list); err != nil {
			s.log.Error(err, "listing ManagedClusters")
			return
		}
		seen := map[string]bool{}
		for i := range list.Items {
			seen[list.Items[i].Name] = true
			one(&list.Items[i])
		}
		for _, k := range s.st.keys(KindClusters) {
			if !seen[k] {
				s.st.del(KindClusters, k)
			}
		}
		return
	}
	for k := range keys {
		mc := &clusterv1.ManagedCluster{}
		err := s.cache.Get(ctx, client.ObjectKey{Name: k}, mc)
		switch {
		case apierrors.IsNotFound(err):
			s.st.del(KindClusters, k)
		case err != nil:
			s.log.Error(err, "reading ManagedCluster", "name", k)
		default:
			one(mc)
		}
	}
}

func (s *Server) recomputeClusterSets(ctx context.Context) {
	if s.resAccess[resClusterSets].none() {
		return
	}
	sels := s.selectors(ctx)
	counts := map[string]int{}
	if !s.resAccess[resClusters].none() {
		list := &clusterv1.ManagedClusterList{}
		if err := s.cache.List(ctx, list); err != nil {
			s.log.Error(err, "listing ManagedClusters")
		}
		for i := range list.Items {
			for _, set := range setsOf(sels, list.Items[i].Labels) {
				counts[set]++
			}
		}
	}
	sets := &clusterv1beta2.ManagedClusterSetList{}
	if err := s.cache.List(ctx, sets); err != nil {
		s.log.Error(err, "listing ManagedClusterSets")
		return
	}
	seen := map[string]bool{}
	for i := range sets.Items {
		set := &sets.Items[i]
		seen[set.Name] = true
		s.st.set(KindClusterSets, set.Name, "", kindGR(KindClusterSets), ClusterSetOf(set, counts[set.Name]))
	}
	for _, k := range s.st.keys(KindClusterSets) {
		if !seen[k] {
			s.st.del(KindClusterSets, k)
		}
	}
}

func (s *Server) recomputePlacement(ctx context.Context, k string) {
	if s.resAccess[resPlacements].none() {
		return
	}
	recomputeOne(ctx, s, s.cache, KindPlacements, k, &clusterv1beta1.Placement{}, func(p *clusterv1beta1.Placement) any {
		var ds []clusterv1beta1.PlacementDecision
		if !s.resAccess[resDecisions].none() {
			list := &clusterv1beta1.PlacementDecisionList{}
			if err := s.cache.List(ctx, list, client.InNamespace(p.Namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: p.Name}); err != nil {
				s.log.Error(err, "listing PlacementDecisions", "placement", k)
			}
			ds = list.Items
		}
		return PlacementOf(p, ds, s.eventsOf(ctx, eventsPlacement, p.Namespace, p.Name))
	})
}

// rolloutLoop recomputes the rollouts marked dirty, gathering the changes of rolloutDebounce,
// and every rollout each rolloutRefresh; a rollout recomputed too recently waits its turn.
func (s *Server) rolloutLoop(ctx context.Context) {
	refresh := time.NewTicker(rolloutRefresh)
	defer refresh.Stop()
	retry := time.NewTimer(0)
	<-retry.C
	for {
		all := false
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			all = true
		case <-retry.C:
		case <-s.rollKick:
			select {
			case <-ctx.Done():
				return
			case <-time.After(rolloutDebounce):
			}
		}
		if wait := s.recomputeRollouts(ctx, all); wait > 0 {
			retry.Reset(wait)
		}
	}
}

// rolloutTiming is when a rollout was last recomputed and how long that took.
type rolloutTiming struct {
	at   time.Time
	took time.Duration
}

// rolloutWait is how long mark must still wait before it is recomputed again: at least
// max(rolloutMinInterval, 2 × its last compute time) between two starts, so that a busy
// replica set (a status update per work) cannot keep the loop computing.
func (s *Server) rolloutWait(mark string, now time.Time) time.Duration {
	s.rollMu.Lock()
	last, ok := s.rollLast[mark]
	s.rollMu.Unlock()
	if !ok {
		return 0
	}
	return last.at.Add(max(rolloutMinInterval, 2*last.took)).Sub(now)
}

// rolloutsOf are the marks of the rollouts that referenced placement "ns/name" when last
// computed.
func (s *Server) rolloutsOf(placement string) []string {
	s.rollMu.Lock()
	defer s.rollMu.Unlock()
	out := make([]string, 0, len(s.rollRefs[placement]))
	for m := range s.rollRefs[placement] {
		out = append(out, m)
	}
	return out
}

// markRolloutsOf marks the rollouts that reference placement "ns/name".
func (s *Server) markRolloutsOf(placement string) {
	for _, m := range s.rolloutsOf(placement) {
		s.markRollouts(m)
	}
}

// indexRollout records the placements mark references (none: forget it).
func (s *Server) indexRollout(mark string, placements []string) {
	s.rollMu.Lock()
	defer s.rollMu.Unlock()
	for _, p := range s.rollRefsBy[mark] {
		delete(s.rollRefs[p], mark)
		if len(s.rollRefs[p]) == 0 {
			delete(s.rollRefs, p)
		}
	}
	delete(s.rollRefsBy, mark)
	if placements == nil {
		delete(s.rollLast, mark)
		return
	}
	s.rollRefsBy[mark] = placements
	for _, p := range placements {
		if s.rollRefs[p] == nil {
			s.rollRefs[p] = map[string]bool{}
		}
		s.rollRefs[p][mark] = true
	}
}

// rolloutMark is the mark of the rollout stored under key k.
func rolloutMark(k string) string {
	if name, ok := strings.CutPrefix(k, RolloutKindAddOn+":"); ok {
		return "cma:" + name
	}
	return "mwrs:" + k
}

// recomputeRollouts recomputes the rollouts marked (all of them with all), each no more
// often than rolloutWait allows; it returns how long until a deferred one may run (0: none).
func (s *Server) recomputeRollouts(ctx context.Context, all bool) time.Duration {
	s.rollMu.Lock()
	marks, everything := s.rollDirty, s.rollAll || all
	s.rollDirty, s.rollAll = map[string]bool{}, false
	s.rollMu.Unlock()
	if everything {
		seen, listed := map[string]bool{}, true
		if !s.resAccess[resMWRS].none() {
			list := &workv1alpha1.ManifestWorkReplicaSetList{}
			if err := s.cache.List(ctx, list); err != nil {
				s.log.Error(err, "listing ManifestWorkReplicaSets")
				listed = false
			}
			for i := range list.Items {
				seen[key(&list.Items[i])] = true
				marks["mwrs:"+key(&list.Items[i])] = true
			}
		}
		if !s.resAccess[resAddonDefs].none() {
			list := &addonv1alpha1.ClusterManagementAddOnList{}
			if err := s.cache.List(ctx, list); err != nil {
				s.log.Error(err, "listing ClusterManagementAddOns")
				listed = false
			}
			for i := range list.Items {
				if addonRollout(&list.Items[i]) {
					seen[AddonRolloutKey(list.Items[i].Name)] = true
					marks["cma:"+list.Items[i].Name] = true
				}
			}
		}
		if listed {
			for _, k := range s.st.keys(KindRollouts) {
				if !seen[k] {
					s.st.del(KindRollouts, k)
					s.forgetRollout(k)
				}
			}
		}
	}
	if labelled := labelMarks(marks); len(labelled) > 0 && !s.resAccess[resMWRS].none() {
		// Works name their replica set by "<namespace>.<name>": find which.
		list := &workv1alpha1.ManifestWorkReplicaSetList{}
		if err := s.cache.List(ctx, list); err != nil {
			s.log.Error(err, "listing ManifestWorkReplicaSets")
		}
		for i := range list.Items {
			if labelled[list.Items[i].Namespace+"."+list.Items[i].Name] {
				marks["mwrs:"+key(&list.Items[i])] = true
			}
		}
	}
	var wait time.Duration
	for mark := range marks {
		if strings.HasPrefix(mark, "label:") {
			continue
		}
		if d := s.rolloutWait(mark, time.Now()); d > 0 {
			// Too soon: keep it marked for when its turn comes.
			s.rollMu.Lock()
			s.rollDirty[mark] = true
			s.rollMu.Unlock()
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		s.recomputeRollout(ctx, mark)
	}
	return wait
}

// forgetRollout drops what is remembered of the rollout stored under key k.
func (s *Server) forgetRollout(k string) {
	s.indexRollout(rolloutMark(k), nil)
	s.rollMu.Lock()
	delete(s.rollGood, k)
	s.rollMu.Unlock()
}

// recomputeRollout recomputes one rollout ("mwrs:ns/name" or "cma:name") under
// rolloutTimeout.
func (s *Server) recomputeRollout(ctx context.Context, mark string) {
	// Who sees a rollout (hub mode): an add-on's shows every cluster's add-on state, so
	// those who may list ManagedClusterAddOns cluster-wide; a replica set's shows works and
	// their conditions from cluster namespaces, so those who may list it in its namespace
	// and ManifestWorks cluster-wide.
	mwrsGR, mcaGR, worksGR := resources[resMWRS].gr, resources[resAddons].gr, resources[resWorks].gr
	cctx, cancel := context.WithTimeout(ctx, rolloutTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		s.rollMu.Lock()
		s.rollLast[mark] = rolloutTiming{at: start, took: time.Since(start)}
		s.rollMu.Unlock()
	}()
	now := s.opts.Clock.Now()
	if name, isCMA := strings.CutPrefix(mark, "cma:"); isCMA {
		if s.resAccess[resAddonDefs].none() {
			return
		}
		k := AddonRolloutKey(name)
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		err := s.cache.Get(cctx, client.ObjectKey{Name: name}, cma)
		switch {
		case apierrors.IsNotFound(err) || err == nil && !addonRollout(cma):
			s.st.del(KindRollouts, k)
			s.forgetRollout(k)
		case err != nil:
			s.log.Error(err, "reading ClusterManagementAddOn", "name", name)
		default:
			var refs []string
			for _, p := range cma.Spec.InstallStrategy.Placements {
				refs = append(refs, p.Namespace+"/"+p.Name)
			}
			s.setRollout(cctx, mark, k, "", mcaGR, schema.GroupResource{}, refs, AddonRollout(cctx, s.reader(), cma, now))
		}
		return
	}
	if s.resAccess[resMWRS].none() {
		return
	}
	k := strings.TrimPrefix(mark, "mwrs:")
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	err := s.cache.Get(cctx, objectKey(k), rs)
	switch {
	case apierrors.IsNotFound(err):
		s.st.del(KindRollouts, k)
		s.forgetRollout(k)
	case err != nil:
		s.log.Error(err, "reading ManifestWorkReplicaSet", "key", k)
	default:
		refs := []string{}
		for _, p := range rs.Spec.PlacementRefs {
			refs = append(refs, rs.Namespace+"/"+p.Name)
		}
		s.setRollout(cctx, mark, k, rs.Namespace, mwrsGR, worksGR, refs, MWRSRollout(cctx, s.reader(), rs, now))
	}
}

// setRollout stores a recomputed rollout. One whose computation failed (its deadline
// passed, or nothing of a rollout with placements could be read) keeps the last good view,
// with why in its message.
func (s *Server) setRollout(cctx context.Context, mark, k, ns string, gr, also schema.GroupResource, refs []string, r Rollout) {
	s.indexRollout(mark, append([]string{}, refs...))
	failed := cctx.Err() != nil || r.Phase == RolloutPhaseUnknown && len(r.Placements) == 0 && len(refs) > 0
	if failed {
		why := r.Message
		if err := cctx.Err(); err != nil {
			why = fmt.Sprintf("recomputing took longer than %s: %v", rolloutTimeout, err)
		}
		s.rollMu.Lock()
		good, ok := s.rollGood[k]
		s.rollMu.Unlock()
		if ok {
			good.Message = "not current (last good view): " + why
			r = good
		} else if r.Message == "" || cctx.Err() != nil {
			r.Phase, r.Message = RolloutPhaseUnknown, why
		}
	} else {
		s.rollMu.Lock()
		s.rollGood[k] = r
		s.rollMu.Unlock()
	}
	s.st.setGated(KindRollouts, k, ns, gr, also, r)
}

// labelMarks are the replica-set labels among rollout marks.
func labelMarks(keys map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range keys {
		if v, ok := strings.CutPrefix(k, "label:"); ok {
			out[v] = true
		}
	}
	return out
}

// AddonRolloutKey is the rollouts key of add-on name's rollout: "ClusterManagementAddOn:" +
// name, which no replica set's "namespace/name" can be (':' is not valid in a namespace).
// The page builds its data-rollout attribute from kind and name, not from the key.
func AddonRolloutKey(name string) string { return RolloutKindAddOn + ":" + name }

// addonRollout says whether an add-on rolls out by placements (the others have no rollout to show).
func addonRollout(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	return len(cma.Spec.InstallStrategy.Placements) > 0
}
