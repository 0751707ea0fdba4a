package addon

import (
	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/rollout"
)

// RolloutState is where mca stands in the rollout of the configurations desired, as the
// configuration controller decides it (clusterState) — for views that read the rollout
// without resolving configurations: desired is what the controller resolved for the
// cluster's placement, in its order, which it reports as a ClusterManagementAddOn's
// status.installProgressions[].configReferences. A nil mca is ToApply.
func RolloutState(mca *addonv1alpha1.ManagedClusterAddOn, desired []addonv1alpha1.InstallConfigReference) rollout.ClusterState {
	want := make([]resolvedConfig, 0, len(desired))
	for _, d := range desired {
		if d.DesiredConfig == nil {
			// Not resolved: nothing can match it, as the controller would not admit it.
			return rollout.ClusterState{Status: rollout.ToApply}
		}
		want = append(want, resolvedConfig{ConfigGroupResource: d.ConfigGroupResource, ConfigSpecHash: *d.DesiredConfig})
	}
	return clusterState(mca, want)
}
