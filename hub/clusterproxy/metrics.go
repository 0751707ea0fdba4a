package clusterproxy

import (
	"github.com/prometheus/client_golang/prometheus"

	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
)

// Metric names.
const (
	// AgentStreamsMetric is the number of connected agent streams per cluster.
	AgentStreamsMetric = "flotilla_cluster_proxy_agent_streams"
	// AgentConnectsMetric counts agent streams accepted per cluster.
	AgentConnectsMetric = "flotilla_cluster_proxy_agent_connects_total"
	// DialsMetric counts dials through the tunnels by result: ok, no_tunnel, refused, timeout, error.
	DialsMetric = "flotilla_cluster_proxy_dials_total"
	// OpenConnectionsMetric is the number of open tunnelled connections per cluster.
	OpenConnectionsMetric = "flotilla_cluster_proxy_open_connections"
	// BytesMetric counts tunnelled payload bytes per cluster and direction (to_cluster, from_cluster).
	BytesMetric = "flotilla_cluster_proxy_bytes_total"
)

// Dial results.
const (
	DialOK       = "ok"
	DialNoTunnel = "no_tunnel"
	DialRefused  = "refused"
	DialTimeout  = "timeout"
	DialError    = "error"
)

type metrics struct {
	streams, open   *prometheus.GaugeVec
	connects, dials *prometheus.CounterVec
	bytes           *prometheus.CounterVec
}

func registerMetrics() (*metrics, error) {
	var err error
	m := &metrics{}
	if m.streams, err = flmetrics.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: AgentStreamsMetric, Help: "Connected cluster-proxy agent streams, per cluster.",
	}, []string{"cluster"})); err != nil {
		return nil, err
	}
	if m.connects, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: AgentConnectsMetric, Help: "Cluster-proxy agent streams accepted, per cluster.",
	}, []string{"cluster"})); err != nil {
		return nil, err
	}
	if m.dials, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DialsMetric, Help: "Dials through cluster-proxy tunnels, by result (ok, no_tunnel, refused, timeout, error).",
	}, []string{"result"})); err != nil {
		return nil, err
	}
	if m.open, err = flmetrics.Register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: OpenConnectionsMetric, Help: "Open connections through cluster-proxy tunnels, per cluster.",
	}, []string{"cluster"})); err != nil {
		return nil, err
	}
	if m.bytes, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: BytesMetric, Help: "Payload bytes through cluster-proxy tunnels, per cluster and direction (to_cluster, from_cluster).",
	}, []string{"cluster", "direction"})); err != nil {
		return nil, err
	}
	return m, nil
}
