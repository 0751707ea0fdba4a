package lease

import (
	"testing"
	"time"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

func TestGracePeriod(t *testing.T) {
	mc := &clusterv1.ManagedCluster{}
	if got := GracePeriod(mc); got != 5*time.Minute {
		t.Errorf("default: %s, want 5 × 60s", got)
	}
	mc.Spec.LeaseDurationSeconds = 2
	if got := GracePeriod(mc); got != 10*time.Second {
		t.Errorf("2s lease: %s, want 10s", got)
	}
}
