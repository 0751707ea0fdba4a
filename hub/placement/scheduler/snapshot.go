// Package scheduler decides Placements: a small framework of filter and score stages over a
// Snapshot of the fleet, with built-in and Wasm prioritizers behind one interface. It makes
// no API calls: the controller (hub/placement) builds a Snapshot from its caches, schedules
// any number of placements against it, and writes what changed.
//
// The stages, as OCM's scheduler: candidate clusters (members of the ManagedClusterSets bound
// to the placement's namespace, restricted to spec.clusterSets; terminating clusters
// excluded) → Predicate (label, claim and CEL selectors, ORed over predicates) →
// TaintToleration (NoSelect, NoSelectIfNew, tolerationSeconds; PreferNoSelect clusters are
// kept and chosen last) → prioritizers (Σ weight × score) → selection (numberOfClusters,
// spreadPolicy) → decision groups.
package scheduler

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/registration/clusterset"
)

// Snapshot is the fleet as one scheduling pass sees it. Build it with NewSnapshot; it is
// read-only afterwards and shared by every placement of the pass.
type Snapshot struct {
	// Now is the pass's clock, for tolerationSeconds and score validity.
	Now time.Time
	// Clusters sorted by name.
	Clusters []*clusterv1.ManagedCluster
	// Sets by name.
	Sets map[string]*clusterv1beta2.ManagedClusterSet
	// Bindings by namespace, then set name.
	Bindings map[string]map[string]*clusterv1beta2.ManagedClusterSetBinding

	scores    map[string]map[string]*clusterv1alpha1.AddOnPlacementScore // cluster namespace → name →
	decisions map[string]map[string]int                                  // cluster → placement key → 1
	members   map[string][]int                                           // set → indexes into Clusters
	index     map[string]int
	live      DecisionIndex
}

// SnapshotInput is what a Snapshot is built from.
type SnapshotInput struct {
	Now      time.Time
	Clusters []*clusterv1.ManagedCluster
	Sets     []*clusterv1beta2.ManagedClusterSet
	Bindings []*clusterv1beta2.ManagedClusterSetBinding
	Scores   []*clusterv1alpha1.AddOnPlacementScore
	// Decisions maps a placement ("namespace/name") to the clusters it selects now, for the
	// Balance and Steady prioritizers and NoSelectIfNew.
	Decisions map[string][]string
	// Index, when set, answers for the current decisions instead of Decisions: a live index
	// the controller keeps as decisions are written, so the snapshot need not be rebuilt.
	Index DecisionIndex
}

// DecisionIndex answers for the current decisions of every placement.
type DecisionIndex interface {
	// DecisionCount is the number of placements other than placement that select cluster.
	DecisionCount(cluster, placement string) int64
	// Selected says whether placement selects cluster.
	Selected(cluster, placement string) bool
	// MaxDecisionCount is the largest DecisionCount over every cluster.
	MaxDecisionCount(placement string) int64
	// Decided is the set of clusters placement selects now; the caller owns it.
	Decided(placement string) map[string]bool
	// DecisionCounts sets counts[i] to DecisionCount(clusters[i].Name, placement) and
	// returns MaxDecisionCount(placement): a scheduling pass asks once, not per cluster.
	DecisionCounts(placement string, clusters []*clusterv1.ManagedCluster, counts []int64) int64
}

// NewSnapshot indexes in. A set whose selector does not parse has no members.
func NewSnapshot(in SnapshotInput) *Snapshot {
	s := &Snapshot{
		Now:       in.Now,
		Clusters:  append([]*clusterv1.ManagedCluster(nil), in.Clusters...),
		Sets:      map[string]*clusterv1beta2.ManagedClusterSet{},
		Bindings:  map[string]map[string]*clusterv1beta2.ManagedClusterSetBinding{},
		scores:    map[string]map[string]*clusterv1alpha1.AddOnPlacementScore{},
		decisions: map[string]map[string]int{},
		members:   map[string][]int{},
		index:     map[string]int{},
		live:      in.Index,
	}
	if s.Now.IsZero() {
		s.Now = time.Now()
	}
	sort.Slice(s.Clusters, func(i, j int) bool { return s.Clusters[i].Name < s.Clusters[j].Name })
	for i, c := range s.Clusters {
		s.index[c.Name] = i
	}
	for _, set := range in.Sets {
		s.Sets[set.Name] = set
		sel, err := clusterset.Selector(set)
		if err != nil {
			continue
		}
		s.members[set.Name] = s.selectIndexes(sel)
	}
	for _, b := range in.Bindings {
		if s.Bindings[b.Namespace] == nil {
			s.Bindings[b.Namespace] = map[string]*clusterv1beta2.ManagedClusterSetBinding{}
		}
		s.Bindings[b.Namespace][b.Spec.ClusterSet] = b
	}
	for _, sc := range in.Scores {
		if s.scores[sc.Namespace] == nil {
			s.scores[sc.Namespace] = map[string]*clusterv1alpha1.AddOnPlacementScore{}
		}
		s.scores[sc.Namespace][sc.Name] = sc
	}
	for placement, clusters := range in.Decisions {
		for _, c := range clusters {
			if s.decisions[c] == nil {
				s.decisions[c] = map[string]int{}
			}
			s.decisions[c][placement] = 1
		}
	}
	return s
}

func (s *Snapshot) selectIndexes(sel labels.Selector) []int {
	var out []int
	for i, c := range s.Clusters {
		if sel.Matches(labels.Set(c.Labels)) {
			out = append(out, i)
		}
	}
	return out
}

// Cluster returns the cluster named name.
func (s *Snapshot) Cluster(name string) (*clusterv1.ManagedCluster, bool) {
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return s.Clusters[i], true
}

// Members are the clusters of set, sorted by name.
func (s *Snapshot) Members(set string) []*clusterv1.ManagedCluster {
	idx := s.members[set]
	out := make([]*clusterv1.ManagedCluster, len(idx))
	for i, j := range idx {
		out[i] = s.Clusters[j]
	}
	return out
}

// AddOnScore is the value of score in the AddOnPlacementScore resource of cluster, and
// whether it is present and still valid.
func (s *Snapshot) AddOnScore(cluster, resource, score string) (int64, bool) {
	sc := s.scores[cluster][resource]
	if sc == nil {
		return 0, false
	}
	if v := sc.Status.ValidUntil; v != nil && !s.Now.Before(v.Time) {
		return 0, false
	}
	for _, item := range sc.Status.Scores {
		if item.Name == score {
			return int64(item.Value), true
		}
	}
	return 0, false
}

// DecisionCount is the number of placements other than placement ("namespace/name") that
// select cluster now.
func (s *Snapshot) DecisionCount(cluster, placement string) int64 {
	if s.live != nil {
		return s.live.DecisionCount(cluster, placement)
	}
	m := s.decisions[cluster]
	n := len(m)
	if _, ok := m[placement]; ok {
		n--
	}
	return int64(n)
}

// Selected says whether placement selects cluster now.
func (s *Snapshot) Selected(cluster, placement string) bool {
	if s.live != nil {
		return s.live.Selected(cluster, placement)
	}
	_, ok := s.decisions[cluster][placement]
	return ok
}

// MaxDecisionCount is the largest DecisionCount(cluster, placement) over every cluster, as
// OCM's Balance prioritizer normalises.
func (s *Snapshot) MaxDecisionCount(placement string) int64 {
	if s.live != nil {
		return s.live.MaxDecisionCount(placement)
	}
	var hi int64
	for cluster := range s.decisions {
		hi = max(hi, s.DecisionCount(cluster, placement))
	}
	return hi
}

// Decided is the set of clusters placement selects now; the caller owns it.
func (s *Snapshot) Decided(placement string) map[string]bool {
	if s.live != nil {
		return s.live.Decided(placement)
	}
	out := map[string]bool{}
	for cluster, m := range s.decisions {
		if _, ok := m[placement]; ok {
			out[cluster] = true
		}
	}
	return out
}

// DecisionCounts sets counts[i] to DecisionCount(clusters[i].Name, placement) and returns
// MaxDecisionCount(placement).
func (s *Snapshot) DecisionCounts(placement string, clusters []*clusterv1.ManagedCluster, counts []int64) int64 {
	if s.live != nil {
		return s.live.DecisionCounts(placement, clusters, counts)
	}
	for i, c := range clusters {
		counts[i] = s.DecisionCount(c.Name, placement)
	}
	return s.MaxDecisionCount(placement)
}

// scoresOf is the cluster's valid AddOnPlacementScores for CEL: resource name → [{name, value}].
func (s *Snapshot) scoresOf(cluster string) map[string]any {
	out := map[string]any{}
	for name, sc := range s.scores[cluster] {
		if v := sc.Status.ValidUntil; v != nil && !s.Now.Before(v.Time) {
			continue
		}
		items := make([]any, 0, len(sc.Status.Scores))
		for _, it := range sc.Status.Scores {
			items = append(items, map[string]any{"name": it.Name, "value": int64(it.Value)})
		}
		out[name] = items
	}
	return out
}
