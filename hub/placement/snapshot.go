package placement

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

type workqueueAdder = workqueue.TypedRateLimitingInterface[reconcile.Request]

// snapshotter shares one scheduler.Snapshot between the placements of a pass: it is built
// from the caches (no copies) when something it holds changed, and reused until then. The
// current decisions are not part of it: the live decision index answers for them.
type snapshotter struct {
	reader client.Reader
	index  *decisionIndex
	clock  clock.PassiveClock

	mu    sync.Mutex
	dirty bool
	snap  *scheduler.Snapshot
}

// invalidate makes the next get rebuild.
func (s *snapshotter) invalidate() {
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
}

// get returns the current snapshot, rebuilt if something changed. Its clock is now.
func (s *snapshotter) get(ctx context.Context) (*scheduler.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty && s.snap != nil {
		// Same fleet, new clock: tolerations and score validity are judged at the time of use.
		cp := *s.snap
		cp.Now = s.clock.Now()
		return &cp, nil
	}
	clusters := &clusterv1.ManagedClusterList{}
	sets := &clusterv1beta2.ManagedClusterSetList{}
	bindings := &clusterv1beta2.ManagedClusterSetBindingList{}
	scores := &clusterv1alpha1.AddOnPlacementScoreList{}
	for _, l := range []client.ObjectList{clusters, sets, bindings, scores} {
		if err := s.reader.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("placement: listing %T: %w", l, err)
		}
	}
	in := scheduler.SnapshotInput{Now: s.clock.Now(), Index: s.index}
	for i := range clusters.Items {
		in.Clusters = append(in.Clusters, &clusters.Items[i])
	}
	for i := range sets.Items {
		in.Sets = append(in.Sets, &sets.Items[i])
	}
	for i := range bindings.Items {
		in.Bindings = append(in.Bindings, &bindings.Items[i])
	}
	for i := range scores.Items {
		in.Scores = append(in.Scores, &scores.Items[i])
	}
	s.snap, s.dirty = scheduler.NewSnapshot(in), false
	return s.snap, nil
}
