package placement

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// Metric names.
const (
	// StageDurationMetric is the time of each scheduling stage (Candidates, Predicate,
	// TaintToleration, Prioritize, Select) per placement decided.
	StageDurationMetric = "flotilla_placement_stage_duration_seconds"
	// PrioritizerDurationMetric is the time of each prioritizer (built-in name, AddOn, or
	// Plugin/<name>) per placement decided.
	PrioritizerDurationMetric = "flotilla_placement_prioritizer_duration_seconds"
	// PrioritizerErrorsMetric counts prioritizer calls that failed.
	PrioritizerErrorsMetric = "flotilla_placement_prioritizer_errors_total"
)

type metrics struct {
	stage, prioritizer *prometheus.HistogramVec
	errors             *prometheus.CounterVec
}

var buckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2}

func registerMetrics() (*metrics, error) {
	var err error
	m := &metrics{}
	if m.stage, err = flmetrics.Register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: StageDurationMetric, Help: "Time of each placement scheduling stage, per placement decided.", Buckets: buckets,
	}, []string{"stage"})); err != nil {
		return nil, err
	}
	if m.prioritizer, err = flmetrics.Register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: PrioritizerDurationMetric, Help: "Time of each prioritizer (built-in, AddOn or Plugin/<name>), per placement decided.", Buckets: buckets,
	}, []string{"prioritizer"})); err != nil {
		return nil, err
	}
	if m.errors, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PrioritizerErrorsMetric, Help: "Prioritizer calls that failed (their failure policy then applied).",
	}, []string{"prioritizer"})); err != nil {
		return nil, err
	}
	return m, nil
}

// observe records a result's timings.
func (m *metrics) observe(res *scheduler.Result) {
	var prioritize float64
	for _, t := range res.Timings {
		if name, ok := strings.CutPrefix(t.Stage, scheduler.StagePrioritize+"/"); ok {
			m.prioritizer.WithLabelValues(name).Observe(t.Duration.Seconds())
			prioritize += t.Duration.Seconds()
			if t.Failed {
				m.errors.WithLabelValues(name).Inc()
			}
			continue
		}
		m.stage.WithLabelValues(t.Stage).Observe(t.Duration.Seconds())
	}
	if prioritize > 0 {
		m.stage.WithLabelValues(scheduler.StagePrioritize).Observe(prioritize)
	}
}
