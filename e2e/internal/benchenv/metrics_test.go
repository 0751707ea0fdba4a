package benchenv

import (
	"strings"
	"testing"
)

func samples(t *testing.T, text string) []Sample {
	t.Helper()
	var out []Sample
	for _, l := range strings.Split(text, "\n") {
		if s, ok := parseSample(strings.TrimSpace(l)); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestHistogramQuantile(t *testing.T) {
	s := samples(t, `
# TYPE d histogram
d_bucket{c="a",le="0.1"} 2
d_bucket{c="a",le="0.2"} 6
d_bucket{c="a",le="+Inf"} 8
d_bucket{c="b",le="0.1"} 2
d_bucket{c="b",le="0.2"} 2
d_bucket{c="b",le="+Inf"} 2
d_sum{c="a"} 1
d_count{c="a"} 8
hits_total{r="x"} 3
hits_total{r="y"} 1
`)
	// a and b together: 4 ≤ 0.1, 8 ≤ 0.2, 10 in all; the median (rank 5) is a quarter into (0.1, 0.2].
	if v, n, ok := HistogramQuantile(s, "d", 0.5, nil); !ok || n != 10 || v < 0.1249 || v > 0.1251 {
		t.Errorf("p50 of all = %v over %v (%v), want 0.125 over 10", v, n, ok)
	}
	// a alone: rank 4 of 8, halfway into (0.1, 0.2].
	if v, n, ok := HistogramQuantile(s, "d", 0.5, func(s Sample) bool { return s.Label("c") == "a" }); !ok || n != 8 || v < 0.1499 || v > 0.1501 {
		t.Errorf("p50 of a = %v over %v (%v), want 0.15 over 8", v, n, ok)
	}
	// Beyond the last finite bound: that bound.
	if v, _, ok := HistogramQuantile(s, "d", 0.99, nil); !ok || v != 0.2 {
		t.Errorf("p99 = %v (%v), want 0.2", v, ok)
	}
	if _, _, ok := HistogramQuantile(s, "missing", 0.5, nil); ok {
		t.Error("a histogram the metrics do not have is ok")
	}
	if sum, ok := Sum(s, "hits_total"); !ok || sum != 4 {
		t.Errorf("Sum(hits_total) = %v, %v; want 4, true", sum, ok)
	}
	if _, ok := Sum(s, "misses_total"); ok {
		t.Error("a counter the metrics do not have is ok")
	}
}
