package abi

// Cluster is a plain description of one candidate cluster, for tests and tools
// (`flotilla plugin test`, sdktest). Resource values are milli-units.
type Cluster struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Claims      map[string]string `json:"claims,omitempty"`
	Allocatable map[string]int64  `json:"allocatable,omitempty"`
	Capacity    map[string]int64  `json:"capacity,omitempty"`
	AddOnScores []AddOnScore      `json:"addOnScores,omitempty"`
	// Decisions is the number of the other placements' decisions naming the
	// cluster (PlacementSource.DecisionCount).
	Decisions int64 `json:"decisions,omitempty"`
	// Selected says the placement's current decisions name the cluster.
	Selected bool `json:"selected,omitempty"`
}

// AddOnScore is one AddOnPlacementScore value of a Cluster.
type AddOnScore struct {
	ResourceName string `json:"resourceName"`
	ScoreName    string `json:"scoreName"`
	Value        int64  `json:"value"`
}

// ClusterList implements ClusterSource and PlacementSource over a slice of Cluster
// (not MaxDecisionSource: a list knows no other cluster).
type ClusterList []Cluster

func (l ClusterList) Len() int          { return len(l) }
func (l ClusterList) Name(i int) string { return l[i].Name }

func (l ClusterList) Label(i int, key string) (string, bool) {
	v, ok := l[i].Labels[key]
	return v, ok
}

func (l ClusterList) Claim(i int, name string) (string, bool) {
	v, ok := l[i].Claims[name]
	return v, ok
}

func (l ClusterList) Resource(i int, kind ResourceKind, name string) (int64, bool) {
	m := l[i].Allocatable
	if kind == ResourceCapacity {
		m = l[i].Capacity
	}
	v, ok := m[name]
	return v, ok
}

func (l ClusterList) AddOnScore(i int, resourceName, scoreName string) (int64, bool) {
	for _, s := range l[i].AddOnScores {
		if s.ResourceName == resourceName && s.ScoreName == scoreName {
			return s.Value, true
		}
	}
	return 0, false
}

func (l ClusterList) DecisionCount(i int) int64 { return l[i].Decisions }
func (l ClusterList) Selected(i int) bool       { return l[i].Selected }
