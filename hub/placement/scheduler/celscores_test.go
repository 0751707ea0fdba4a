package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// OCM's CEL selector can read AddOnPlacementScores: managedCluster.scores("<resource>").
func TestCELScores(t *testing.T) {
	now := time.Now()
	score := func(cluster, resource string, validUntil *metav1.Time, kv map[string]int32) *clusterv1alpha1.AddOnPlacementScore {
		s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: resource}}
		s.Status.ValidUntil = validUntil
		for k, v := range kv {
			s.Status.Scores = append(s.Status.Scores, clusterv1alpha1.AddOnPlacementScoreItem{Name: k, Value: v})
		}
		return s
	}
	past := metav1.NewTime(now.Add(-time.Minute))
	in := SnapshotInput{
		Now: now,
		Clusters: []*clusterv1.ManagedCluster{
			{ObjectMeta: metav1.ObjectMeta{Name: "busy"}}, {ObjectMeta: metav1.ObjectMeta{Name: "idle"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}, {ObjectMeta: metav1.ObjectMeta{Name: "none"}},
		},
		Sets: []*clusterv1beta2.ManagedClusterSet{{ObjectMeta: metav1.ObjectMeta{Name: "global"}, Spec: clusterv1beta2.ManagedClusterSetSpec{
			ClusterSelector: clusterv1beta2.ManagedClusterSelector{SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "global"},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "global"}}},
		Scores: []*clusterv1alpha1.AddOnPlacementScore{
			score("busy", "default", nil, map[string]int32{"cpu": 20}),
			score("idle", "default", nil, map[string]int32{"cpu": 90}),
			score("stale", "default", &past, map[string]int32{"cpu": 95}), // expired: not seen
		},
	}
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: clusterv1beta1.PlacementSpec{
		PrioritizerPolicy: clusterv1beta1.PrioritizerPolicy{Mode: clusterv1beta1.PrioritizerPolicyModeExact},
		Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: []string{
				`managedCluster.scores("default").exists(s, s.name == "cpu" && s.value > 50)`,
			}}}}}}}
	res, err := (&Scheduler{}).Schedule(context.Background(), NewSnapshot(in), p)
	if err != nil || res.Misconfigured != "" {
		t.Fatalf("%v %q", err, res.Misconfigured)
	}
	if got := res.Filters[0].Clusters; len(got) != 1 || got[0] != "idle" {
		t.Fatalf("selected %v, want [idle]", got)
	}
}
