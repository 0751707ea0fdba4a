package clustergateway

import (
	"github.com/prometheus/client_golang/prometheus"

	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
)

// Metric names (design-23 §5.10).
const (
	// RequestsMetric counts proxied requests by cluster, inner verb and status code.
	RequestsMetric = "flotilla_cluster_gateway_requests_total"
	// DurationMetric is the time of proxied requests that are not long-running, by inner verb.
	DurationMetric = "flotilla_cluster_gateway_request_duration_seconds"
	// PolicyDenialsMetric counts requests a gateway policy denied (or failed on), by policy.
	PolicyDenialsMetric = "flotilla_cluster_gateway_policy_denials_total"
)

type metrics struct {
	requests, denials *prometheus.CounterVec
	duration          *prometheus.HistogramVec
}

// registerMetrics registers (or reuses, when several hubs share a process) the metrics in
// controller-runtime's registry.
func registerMetrics() (*metrics, error) {
	var err error
	m := &metrics{}
	if m.requests, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RequestsMetric, Help: "Requests proxied to managed clusters by the cluster-gateway, by cluster, verb of the proxied request and status code.",
	}, []string{"cluster", "verb", "code"})); err != nil {
		return nil, err
	}
	if m.denials, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: PolicyDenialsMetric, Help: "Cluster-gateway requests denied by a gateway policy (a denial or an evaluation error), by policy.",
	}, []string{"policy"})); err != nil {
		return nil, err
	}
	if m.duration, err = flmetrics.Register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: DurationMetric, Help: "Time of cluster-gateway requests that are not long-running (watch, exec, logs... are not observed), by verb.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
	}, []string{"verb"})); err != nil {
		return nil, err
	}
	return m, nil
}
