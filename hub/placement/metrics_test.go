package placement

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

func TestMetricsObserve(t *testing.T) {
	m, err := registerMetrics()
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(m.errors.WithLabelValues("Plugin/broken"))
	m.observe(&scheduler.Result{Timings: []scheduler.Timing{
		{Stage: scheduler.StageCandidates, Duration: time.Millisecond},
		{Stage: scheduler.StagePredicate, Duration: time.Millisecond},
		{Stage: scheduler.StagePrioritize + "/Balance", Duration: 2 * time.Millisecond},
		{Stage: scheduler.StagePrioritize + "/Plugin/broken", Duration: time.Millisecond, Failed: true},
		{Stage: scheduler.StageSelect, Duration: time.Millisecond},
	}})
	if got := testutil.ToFloat64(m.errors.WithLabelValues("Plugin/broken")) - before; got != 1 {
		t.Errorf("errors of Plugin/broken grew by %v, want 1", got)
	}
	// Each stage, the prioritize total and both prioritizers have a series.
	if n := testutil.CollectAndCount(m.stage); n < 4 {
		t.Errorf("stage series = %d, want at least Candidates, Predicate, Prioritize, Select", n)
	}
	if n := testutil.CollectAndCount(m.prioritizer); n < 2 {
		t.Errorf("prioritizer series = %d, want Balance and Plugin/broken", n)
	}
}
