package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/e2e/internal/benchenv"
)

// workWrites reads the hub API server's requests that write ManifestWorks (their status
// included), by verb and subresource: apiserver_request_total.
func workWrites(ctx context.Context, cfg *rest.Config, url string) (map[string]float64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	err = benchenv.Metrics(ctx, hc, url+"/metrics", func(s benchenv.Sample) {
		if s.Name != "apiserver_request_total" || s.Label("resource") != "manifestworks" {
			return
		}
		switch verb := s.Label("verb"); verb {
		case "GET", "LIST", "WATCH", "CONNECT":
		default:
			if sub := s.Label("subresource"); sub != "" {
				verb += " " + sub
			}
			out[verb] += s.Value
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the hub API server's metrics: %w", err)
	}
	return out, nil
}

// settleWrites waits until the ManifestWork writes stop for a second: what trails a phase
// (a status write after Applied) is counted in it.
func settleWrites(ctx context.Context, cfg *rest.Config, url string) error {
	total := func() (float64, error) {
		w, err := workWrites(ctx, cfg, url)
		n := 0.0
		for _, v := range w {
			n += v
		}
		return n, err
	}
	return benchenv.Settle(ctx, "ManifestWork writes to stop", 250*time.Millisecond, time.Second, total)
}

// printWrites prints one row of the writes table: the writes since before, the bench's own
// creates (POST, one per work) taken out.
func printWrites(phase string, works int, before, after map[string]float64) {
	diff := map[string]float64{}
	total := 0.0
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			if k == "POST" || k == "CREATE" {
				d -= float64(works)
			}
			if d > 0 {
				diff[k] = d
				total += d
			}
		}
	}
	keys := make([]string, 0, len(diff))
	for k := range diff {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, diff[k]))
	}
	fmt.Printf("%-10s  %5d  %-52s  %.2f\n", phase, works, fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", ")), total/float64(works))
}

// profileSelf profiles this process (the in-process hub, and the bench's own clients) until
// the returned function is called.
func profileSelf(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		fmt.Fprintln(os.Stderr, "wrote", path)
	}, nil
}

// fetchProfile reads a CPU profile of seconds from the klusterlet's --pprof-bind-address.
func fetchProfile(ctx context.Context, addr string, seconds int, path string) error {
	if err := benchenv.FetchProfile(ctx, http.DefaultClient, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), path, "the klusterlet"); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return nil
}
