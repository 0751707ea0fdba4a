// Package metrics registers Flotilla's Prometheus collectors in controller-runtime's registry,
// which the hub and the agents serve.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Register registers c, or returns the collector already registered under its name (several
// hubs may share a process: tests, benchmarks).
func Register[C prometheus.Collector](c C) (C, error) {
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("registering metric: %w", err)
	}
	return c, nil
}
