package placement

import (
	"sync"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// decisionIndex is the live view of every placement's selected clusters, fed by the
// PlacementDecision informer, so Balance, Steady and NoSelectIfNew see current decisions
// without a snapshot rebuild. Safe for concurrent use.
type decisionIndex struct {
	mu sync.RWMutex
	// byObject: PlacementDecision "namespace/name" → its placement key and clusters.
	byObject map[string]objectDecisions
	// byPlacement: placement key → cluster → number of its PlacementDecisions naming it.
	byPlacement map[string]map[string]int
	// count: cluster → number of placements selecting it.
	count map[string]int
}

type objectDecisions struct {
	placement string
	clusters  []string
}

func newDecisionIndex() *decisionIndex {
	return &decisionIndex{byObject: map[string]objectDecisions{}, byPlacement: map[string]map[string]int{}, count: map[string]int{}}
}

// set records the clusters of one PlacementDecision (nil d removes it).
func (x *decisionIndex) set(objKey string, d *clusterv1beta1.PlacementDecision) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.byObject[objKey]; ok {
		for _, c := range old.clusters {
			x.remove(old.placement, c)
		}
		delete(x.byObject, objKey)
	}
	if d == nil {
		return
	}
	placement := d.Labels[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return
	}
	key := d.Namespace + "/" + placement
	od := objectDecisions{placement: key, clusters: make([]string, 0, len(d.Status.Decisions))}
	for _, cd := range d.Status.Decisions {
		od.clusters = append(od.clusters, cd.ClusterName)
		m := x.byPlacement[key]
		if m == nil {
			m = map[string]int{}
			x.byPlacement[key] = m
		}
		if m[cd.ClusterName] == 0 {
			x.count[cd.ClusterName]++
		}
		m[cd.ClusterName]++
	}
	x.byObject[objKey] = od
}

func (x *decisionIndex) remove(placement, cluster string) {
	m := x.byPlacement[placement]
	if m == nil || m[cluster] == 0 {
		return
	}
	m[cluster]--
	if m[cluster] == 0 {
		delete(m, cluster)
		if x.count[cluster]--; x.count[cluster] <= 0 {
			delete(x.count, cluster)
		}
		if len(m) == 0 {
			delete(x.byPlacement, placement)
		}
	}
}

// DecisionCount is the number of placements other than placement selecting cluster.
func (x *decisionIndex) DecisionCount(cluster, placement string) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.count[cluster]
	if x.byPlacement[placement][cluster] > 0 {
		n--
	}
	return int64(n)
}

// Selected says whether placement selects cluster.
func (x *decisionIndex) Selected(cluster, placement string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byPlacement[placement][cluster] > 0
}

// MaxDecisionCount is the largest DecisionCount(cluster, placement) over every cluster: what
// OCM's Balance normalises by.
func (x *decisionIndex) MaxDecisionCount(placement string) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	own := x.byPlacement[placement]
	var hi int
	for cluster, n := range x.count {
		if own[cluster] > 0 {
			n--
		}
		hi = max(hi, n)
	}
	return int64(hi)
}

// Decided is the set of clusters placement selects; the caller owns it.
func (x *decisionIndex) Decided(placement string) map[string]bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make(map[string]bool, len(x.byPlacement[placement]))
	for c := range x.byPlacement[placement] {
		out[c] = true
	}
	return out
}

// DecisionCounts sets counts[i] to DecisionCount(clusters[i].Name, placement) and returns
// MaxDecisionCount(placement), under one read lock.
func (x *decisionIndex) DecisionCounts(placement string, clusters []*clusterv1.ManagedCluster, counts []int64) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	own := x.byPlacement[placement]
	for i, c := range clusters {
		n := x.count[c.Name]
		if own[c.Name] > 0 {
			n--
		}
		counts[i] = int64(n)
	}
	var hi int
	for cluster, n := range x.count {
		if own[cluster] > 0 {
			n--
		}
		hi = max(hi, n)
	}
	return int64(hi)
}
