package benchenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sample is one sample of Prometheus text: `name{labels} value`.
type Sample struct {
	Name   string
	Value  float64
	labels string
}

// Label is the value of label name, "" when the sample has none.
func (s Sample) Label(name string) string {
	_, v, ok := strings.Cut(","+s.labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// parseSample reads a line of Prometheus text; comments, blank lines and lines whose value is
// not a number are not samples.
func parseSample(line string) (Sample, bool) {
	if line == "" || line[0] == '#' {
		return Sample{}, false
	}
	var s Sample
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return Sample{}, false
		}
		s.Name, s.labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		s.Name, rest, _ = strings.Cut(line, " ")
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return Sample{}, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return Sample{}, false
	}
	s.Value = v
	return s, true
}

// Metrics calls each with every sample of the Prometheus text hc reads from url.
func Metrics(ctx context.Context, hc *http.Client, url string, each func(Sample)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if s, ok := parseSample(sc.Text()); ok {
			each(s)
		}
	}
	return sc.Err()
}

// Metrics calls each with every sample of the metrics the hub serves (HubOptions.Metrics).
func (h *Hub) Metrics(ctx context.Context, each func(Sample)) error {
	if err := Metrics(ctx, http.DefaultClient, "http://"+h.MetricsAddr+"/metrics", each); err != nil {
		return fmt.Errorf("reading the hub's metrics: %w", err)
	}
	return nil
}

// Settle waits until count (a counter read from metrics, say API writes) has not moved for
// quiet, reading it every poll; what says what it waits for in the error when ctx ends first.
func Settle(ctx context.Context, what string, poll, quiet time.Duration, count func() (float64, error)) error {
	last, err := count()
	if err != nil {
		return err
	}
	for still := time.Duration(0); still < quiet; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(poll):
		}
		n, err := count()
		if err != nil {
			return err
		}
		if n == last {
			still += poll
		} else {
			still, last = 0, n
		}
	}
	return nil
}

// FetchProfile writes the Go profile hc reads from url (a /debug/pprof endpoint) to path;
// what names the process in errors.
func FetchProfile(ctx context.Context, hc *http.Client, url, path, what string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("profiling %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling %s: %s", what, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Samples are every sample of the metrics the hub serves (HubOptions.Metrics).
func (h *Hub) Samples(ctx context.Context) ([]Sample, error) {
	var out []Sample
	err := h.Metrics(ctx, func(s Sample) { out = append(out, s) })
	return out, err
}

// Sum is the sum of the samples named name (a counter over all its label values); ok is
// false when there is none.
func Sum(samples []Sample, name string) (sum float64, ok bool) {
	for _, s := range samples {
		if s.Name == name {
			sum, ok = sum+s.Value, true
		}
	}
	return sum, ok
}

// HistogramQuantile estimates quantile q of histogram name from its name_bucket samples
// (those keep accepts; nil keeps all; buckets of equal bound are added up), linear within
// the bucket it falls in, as Prometheus' histogram_quantile does; count is the observations.
// ok is false when there are none.
func HistogramQuantile(samples []Sample, name string, q float64, keep func(Sample) bool) (v, count float64, ok bool) {
	byLe := map[float64]float64{}
	for _, s := range samples {
		if s.Name != name+"_bucket" || keep != nil && !keep(s) {
			continue
		}
		le := math.Inf(1)
		if l := s.Label("le"); l != "+Inf" {
			var err error
			if le, err = strconv.ParseFloat(l, 64); err != nil {
				continue
			}
		}
		byLe[le] += s.Value
	}
	les := slices.Sorted(maps.Keys(byLe))
	if len(les) == 0 || byLe[les[len(les)-1]] == 0 {
		return 0, 0, false
	}
	count = byLe[les[len(les)-1]]
	rank := q * count
	prevLe, prevN := 0.0, 0.0
	for _, le := range les {
		n := byLe[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevLe, count, true
			}
			if n == prevN {
				return le, count, true
			}
			return prevLe + (le-prevLe)*(rank-prevN)/(n-prevN), count, true
		}
		prevLe, prevN = le, n
	}
	return prevLe, count, true
}
