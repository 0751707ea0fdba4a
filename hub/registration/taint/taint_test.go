package taint

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func available(s metav1.ConditionStatus) []metav1.Condition {
	return []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: s}}
}

func TestDesired(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	custom := clusterv1.Taint{Key: "maintenance", Value: "yes", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: earlier}
	unreachable := clusterv1.Taint{Key: clusterv1.ManagedClusterTaintUnreachable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: earlier}
	unavailable := clusterv1.Taint{Key: clusterv1.ManagedClusterTaintUnavailable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: earlier}

	for _, tc := range []struct {
		name        string
		taints      []clusterv1.Taint
		conds       []metav1.Condition
		wantKeys    []string
		wantChanged bool
	}{
		{name: "no condition: unreachable", conds: nil, wantKeys: []string{clusterv1.ManagedClusterTaintUnreachable}, wantChanged: true},
		{name: "unknown: unreachable", conds: available(metav1.ConditionUnknown), wantKeys: []string{clusterv1.ManagedClusterTaintUnreachable}, wantChanged: true},
		{name: "false: unavailable replaces unreachable", taints: []clusterv1.Taint{unreachable}, conds: available(metav1.ConditionFalse),
			wantKeys: []string{clusterv1.ManagedClusterTaintUnavailable}, wantChanged: true},
		{name: "true: both removed, custom kept", taints: []clusterv1.Taint{custom, unreachable, unavailable}, conds: available(metav1.ConditionTrue),
			wantKeys: []string{"maintenance"}, wantChanged: true},
		{name: "already right", taints: []clusterv1.Taint{custom, unreachable}, conds: available(metav1.ConditionUnknown),
			wantKeys: []string{"maintenance", clusterv1.ManagedClusterTaintUnreachable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Desired(tc.taints, tc.conds, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if len(got) != len(tc.wantKeys) {
				t.Fatalf("got %+v, want keys %v", got, tc.wantKeys)
			}
			for i, k := range tc.wantKeys {
				if got[i].Key != k {
					t.Errorf("taint %d: key %q, want %q", i, got[i].Key, k)
				}
			}
		})
	}

	// A taint that stays keeps timeAdded; a new one gets now; hub taints have NoSelect and no value.
	got, _ := Desired([]clusterv1.Taint{unreachable}, available(metav1.ConditionUnknown), now)
	if !got[0].TimeAdded.Equal(&earlier) {
		t.Errorf("kept taint lost its timeAdded: %v", got[0].TimeAdded)
	}
	got, _ = Desired(nil, available(metav1.ConditionFalse), now)
	if !got[0].TimeAdded.Time.Equal(now) || got[0].Effect != clusterv1.TaintEffectNoSelect || got[0].Value != "" {
		t.Errorf("new taint: %+v", got[0])
	}
	// An edited hub taint is restored, keeping when it was added.
	edited := unreachable
	edited.Value, edited.Effect = "x", clusterv1.TaintEffectPreferNoSelect
	got, changed := Desired([]clusterv1.Taint{edited}, nil, now)
	if !changed || got[0].Value != "" || got[0].Effect != clusterv1.TaintEffectNoSelect || !got[0].TimeAdded.Equal(&earlier) {
		t.Errorf("edited taint: changed=%v %+v", changed, got[0])
	}
}
