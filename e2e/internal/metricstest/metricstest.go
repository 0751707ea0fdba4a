// Package metricstest reads the counters of components the e2e suites run in their own
// process (the hub, in-process klusterlets), from controller-runtime's metrics registry.
package metricstest

import (
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Counter is the value of counter name with (at least) labels; 0 when there is none.
func Counter(name string, labels map[string]string) (float64, error) {
	m, err := find(name, labels)
	return m.GetCounter().GetValue(), err
}

// Gauge is the value of gauge name with (at least) labels; 0 when there is none.
func Gauge(name string, labels map[string]string) (float64, error) {
	m, err := find(name, labels)
	return m.GetGauge().GetValue(), err
}

// find is the first metric name with (at least) labels; nil when there is none.
func find(name string, labels map[string]string) (*dto.Metric, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return nil, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				return m, nil
			}
		}
	}
	return nil, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
