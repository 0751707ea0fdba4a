package main

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
)

// latencies is, per request kind of one API server ("APPLY manifestworks/status", "etcd
// create"), the summed seconds and the count: apiserver_request_duration_seconds for writes,
// apiserver_admission_webhook_admission_duration_seconds for each admission webhook,
// etcd_request_duration_seconds for the storage's creates and updates.
type latencies map[string][2]float64

// readLatencies reads the write latencies of the API server at url.
func readLatencies(ctx context.Context, cfg *rest.Config, url string) (latencies, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	out := latencies{}
	add := func(key string, i int, v float64) {
		x := out[key]
		x[i] += v
		out[key] = x
	}
	err = benchenv.Metrics(ctx, hc, url+"/metrics", func(s benchenv.Sample) {
		var key string
		var i int
		switch s.Name {
		case "apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count":
			switch verb := s.Label("verb"); verb {
			case "POST", "APPLY", "PATCH", "PUT", "DELETE":
				key = verb + " " + s.Label("resource")
				if sub := s.Label("subresource"); sub != "" {
					key += "/" + sub
				}
			}
			if s.Name == "apiserver_request_duration_seconds_count" {
				i = 1
			}
		case "apiserver_admission_webhook_admission_duration_seconds_sum", "apiserver_admission_webhook_admission_duration_seconds_count":
			key = "webhook " + s.Label("type") + " " + s.Label("name")
			if s.Name == "apiserver_admission_webhook_admission_duration_seconds_count" {
				i = 1
			}
		case "etcd_request_duration_seconds_sum", "etcd_request_duration_seconds_count":
			switch op := s.Label("operation"); op {
			case "create", "update", "delete":
				key = "etcd " + op
			}
			if s.Name == "etcd_request_duration_seconds_count" {
				i = 1
			}
		}
		if key != "" {
			add(key, i, s.Value)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the API server's request latencies at %s: %w", url, err)
	}
	return out, nil
}

// printLatencies prints, for one API server, the mean latency of each kind of write made
// between before and after: what the API server and etcd take of each step of a work's path.
func printLatencies(server string, before, after latencies) {
	keys := make([]string, 0, len(after))
	for k, v := range after {
		if v[1]-before[k][1] > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := after[k][1] - before[k][1]
		mean := (after[k][0] - before[k][0]) / n * 1000
		fmt.Printf("%-8s  %-42s  %5.0f  %7.2f\n", server, k, n, mean)
	}
}
