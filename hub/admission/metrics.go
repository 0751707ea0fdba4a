package admission

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
)

// Metric names.
const (
	// RequestsMetric counts admission requests by resource and result (allowed, denied, error).
	RequestsMetric = "flotilla_admission_requests_total"
	// PolicyErrorsMetric counts policy evaluations that failed (reason error) or ran out of time
	// (reason timeout); each denied its request.
	PolicyErrorsMetric = "flotilla_admission_policy_errors_total"
	// DurationMetric is the time to decide a request.
	DurationMetric = "flotilla_admission_duration_seconds"
	// RejectedMetric counts policy ConfigMap versions refused (compile or test failure).
	RejectedMetric = "flotilla_admission_policy_rejections_total"
)

type metrics struct {
	requests, errors, rejected *prometheus.CounterVec
	duration                   prometheus.Histogram
}

// registerMetrics registers (or reuses, when several hubs share a process) the metrics in
// controller-runtime's registry.
func registerMetrics() (*metrics, error) {
	var err error
	m := &metrics{}
	if m.requests, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsMetric, Help: "Admission requests decided by the hub's policies, by resource and result (allowed, denied, error).",
	}, []string{"resource", "result"})); err != nil {
		return nil, err
	}
	if m.errors, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PolicyErrorsMetric, Help: "Policy evaluations that failed or timed out, each denying its request, by policy and reason.",
	}, []string{"policy", "reason"})); err != nil {
		return nil, err
	}
	if m.rejected, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RejectedMetric, Help: "Policy ConfigMap versions refused because they failed to compile or to pass their tests.",
	}, []string{"configmap"})); err != nil {
		return nil, err
	}
	if m.duration, err = flmetrics.Register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: DurationMetric, Help: "Time to evaluate the policies of one admission request.",
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5},
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// sortRules orders rules by group and resource, so the configuration is stable.
func sortRules(rules []admissionregistrationv1.RuleWithOperations) {
	sort.Slice(rules, func(i, j int) bool {
		a, b := rules[i].Rule, rules[j].Rule
		if a.APIGroups[0] != b.APIGroups[0] {
			return a.APIGroups[0] < b.APIGroups[0]
		}
		return a.Resources[0] < b.Resources[0]
	})
}
