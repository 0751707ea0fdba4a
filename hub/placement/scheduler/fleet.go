package scheduler

import (
	"maps"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// Fleet is the fleet kept current from informer events, one object at a time, so a
// scheduling pass never lists or converts the whole fleet. Snapshot hands out read-only
// Snapshots and rebuilds only what changed since the last one: a status change of one
// cluster copies the cluster slice (pointers), a score change copies the score map's top
// level; only a change of membership (a cluster added, deleted or relabelled, a set changed)
// matches the sets' selectors against every cluster again. Safe for concurrent use.
//
// The objects are the informers' and are never modified.
type Fleet struct {
	mu       sync.Mutex
	clusters map[string]*clusterv1.ManagedCluster
	sets     map[string]*clusterv1beta2.ManagedClusterSet
	bindings map[string]map[string]*clusterv1beta2.ManagedClusterSetBinding // namespace → set →
	scores   map[string]map[string]*clusterv1alpha1.AddOnPlacementScore     // cluster → name →
	live     DecisionIndex

	last *Snapshot
	// What changed since last: clusters whose object (not membership) changed, and whether
	// membership, sets, bindings or scores changed.
	changed                             map[string]bool
	membership, setsChanged, bindingsCh bool
	scoresChanged                       map[string]bool
	// Rebuilds counts full membership rebuilds (tests).
	rebuilds int
}

// NewFleet returns an empty fleet whose snapshots answer for decisions from index.
func NewFleet(index DecisionIndex) *Fleet {
	return &Fleet{
		clusters: map[string]*clusterv1.ManagedCluster{}, sets: map[string]*clusterv1beta2.ManagedClusterSet{},
		bindings: map[string]map[string]*clusterv1beta2.ManagedClusterSetBinding{},
		scores:   map[string]map[string]*clusterv1alpha1.AddOnPlacementScore{},
		live:     index, changed: map[string]bool{}, scoresChanged: map[string]bool{}, membership: true,
	}
}

// SetCluster records a cluster's current object and returns the one it replaces (nil if new).
func (f *Fleet) SetCluster(c *clusterv1.ManagedCluster) *clusterv1.ManagedCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.clusters[c.Name]
	f.clusters[c.Name] = c
	if old == nil || !equality.Semantic.DeepEqual(old.Labels, c.Labels) {
		f.membership = true
	} else {
		f.changed[c.Name] = true
	}
	return old
}

// DeleteCluster forgets a cluster and returns its last object (nil if unknown).
func (f *Fleet) DeleteCluster(name string) *clusterv1.ManagedCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.clusters[name]
	if old != nil {
		delete(f.clusters, name)
		f.membership = true
	}
	return old
}

// Cluster is the current object of a cluster.
func (f *Fleet) Cluster(name string) (*clusterv1.ManagedCluster, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[name]
	return c, ok
}

// SetSet records a set (nil deletes the set name).
func (f *Fleet) SetSet(name string, set *clusterv1beta2.ManagedClusterSet) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if set == nil {
		delete(f.sets, name)
	} else {
		f.sets[name] = set
	}
	f.setsChanged, f.membership = true, true
}

// SetBinding records a binding of namespace to set (nil deletes it).
func (f *Fleet) SetBinding(namespace, set string, b *clusterv1beta2.ManagedClusterSetBinding) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b == nil {
		if m := f.bindings[namespace]; m != nil {
			delete(m, set)
			if len(m) == 0 {
				delete(f.bindings, namespace)
			}
		}
	} else {
		if f.bindings[namespace] == nil {
			f.bindings[namespace] = map[string]*clusterv1beta2.ManagedClusterSetBinding{}
		}
		f.bindings[namespace][set] = b
	}
	f.bindingsCh = true
}

// SetScore records an AddOnPlacementScore (nil deletes namespace/name).
func (f *Fleet) SetScore(namespace, name string, sc *clusterv1alpha1.AddOnPlacementScore) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sc == nil {
		if m := f.scores[namespace]; m != nil {
			delete(m, name)
			if len(m) == 0 {
				delete(f.scores, namespace)
			}
		}
	} else {
		if f.scores[namespace] == nil {
			f.scores[namespace] = map[string]*clusterv1alpha1.AddOnPlacementScore{}
		}
		f.scores[namespace][name] = sc
	}
	f.scoresChanged[namespace] = true
}

// SetsOf are the names of the sets whose selector matches labels l.
func (f *Fleet) SetsOf(l map[string]string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, set := range f.sets {
		sel, err := clusterset.Selector(set)
		if err == nil && sel.Matches(labels.Set(l)) {
			out = append(out, name)
		}
	}
	return out
}

// EligibleSets are the sets a placement in namespace with spec.clusterSets sets may take
// clusters from: bound to the namespace, existing, and named in sets when it is not empty.
func (f *Fleet) EligibleSets(namespace string, sets []string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for set := range f.bindings[namespace] {
		if _, ok := f.sets[set]; !ok {
			continue
		}
		if len(sets) > 0 && !contains(sets, set) {
			continue
		}
		out = append(out, set)
	}
	return out
}

// BoundNamespaces are the namespaces with a binding to set.
func (f *Fleet) BoundNamespaces(set string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for ns, m := range f.bindings {
		if _, ok := m[set]; ok {
			out = append(out, ns)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Snapshot is the fleet now, with clock now. Snapshots are never modified after they are
// handed out: what changed is copied, what did not is shared with the previous one.
func (f *Fleet) Snapshot(now time.Time) *Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.last
	if prev != nil && !f.membership && !f.setsChanged && !f.bindingsCh && len(f.changed) == 0 && len(f.scoresChanged) == 0 {
		cp := *prev
		cp.Now = now
		return &cp
	}
	s := &Snapshot{Now: now, live: f.live, decisions: map[string]map[string]int{}}
	if prev != nil {
		*s = *prev
		s.Now = now
	}
	switch {
	case prev == nil || f.membership:
		f.rebuilds++
		s.Clusters = make([]*clusterv1.ManagedCluster, 0, len(f.clusters))
		for _, c := range f.clusters {
			s.Clusters = append(s.Clusters, c)
		}
		sort.Slice(s.Clusters, func(i, j int) bool { return s.Clusters[i].Name < s.Clusters[j].Name })
		s.index = make(map[string]int, len(s.Clusters))
		for i, c := range s.Clusters {
			s.index[c.Name] = i
		}
		s.members = map[string][]int{}
		for name, set := range f.sets {
			sel, err := clusterset.Selector(set)
			if err != nil {
				continue
			}
			s.members[name] = s.selectIndexes(sel)
		}
	case len(f.changed) > 0:
		// Same clusters, same labels: only the objects change places.
		s.Clusters = append([]*clusterv1.ManagedCluster(nil), prev.Clusters...)
		for name := range f.changed {
			if i, ok := s.index[name]; ok {
				s.Clusters[i] = f.clusters[name]
			}
		}
	}
	if prev == nil || f.setsChanged {
		s.Sets = maps.Clone(f.sets)
	}
	if prev == nil || f.bindingsCh {
		s.Bindings = make(map[string]map[string]*clusterv1beta2.ManagedClusterSetBinding, len(f.bindings))
		for ns, m := range f.bindings {
			s.Bindings[ns] = maps.Clone(m)
		}
	}
	if prev == nil {
		s.scores = make(map[string]map[string]*clusterv1alpha1.AddOnPlacementScore, len(f.scores))
		for ns, m := range f.scores {
			s.scores[ns] = maps.Clone(m)
		}
	} else if len(f.scoresChanged) > 0 {
		s.scores = maps.Clone(prev.scores)
		for ns := range f.scoresChanged {
			if m := f.scores[ns]; m != nil {
				s.scores[ns] = maps.Clone(m)
			} else {
				delete(s.scores, ns)
			}
		}
	}
	f.last = s
	f.membership, f.setsChanged, f.bindingsCh = false, false, false
	clear(f.changed)
	clear(f.scoresChanged)
	cp := *s
	return &cp
}
