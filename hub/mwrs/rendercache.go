package mwrs

import (
	"container/list"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

// DefaultRenderCacheBytes bounds a Reconciler's render cache.
const DefaultRenderCacheBytes = 64 << 20

// Metric names (H6's benchmark reads them from the hub's /metrics).
const (
	// RenderDurationMetric is the time to render one replica set's selected clusters.
	RenderDurationMetric = "flotilla_mwrs_render_duration_seconds"
	// RenderFailuresMetric counts failed cluster renders by reason.
	RenderFailuresMetric = "flotilla_mwrs_render_failures_total"
	// RenderCacheHitsMetric and RenderCacheMissesMetric count cluster renders served from the
	// render cache and rendered.
	RenderCacheHitsMetric   = "flotilla_mwrs_render_cache_hits_total"
	RenderCacheMissesMetric = "flotilla_mwrs_render_cache_misses_total"
)

// Reasons of RenderFailuresMetric.
const (
	failureRule             = "rule"
	failureTemplate         = "template"
	failureWasm             = "wasm"
	failureSize             = "size"
	failureNondeterministic = "nondeterministic"
)

type renderMetrics struct {
	duration     prometheus.Histogram
	failures     *prometheus.CounterVec
	hits, misses prometheus.Counter
}

func registerRenderMetrics() (*renderMetrics, error) {
	var err error
	m := &renderMetrics{}
	if m.duration, err = flmetrics.Register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: RenderDurationMetric, Help: "Time to render the selected clusters of a ManifestWorkReplicaSet with overrides (cache hits included).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	})); err != nil {
		return nil, err
	}
	if m.failures, err = flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: RenderFailuresMetric, Help: "Cluster renders that failed, by reason (rule, template, wasm, size, nondeterministic).",
	}, []string{"reason"})); err != nil {
		return nil, err
	}
	if m.hits, err = flmetrics.Register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: RenderCacheHitsMetric, Help: "Cluster renders served from the render cache (same render inputs).",
	})); err != nil {
		return nil, err
	}
	if m.misses, err = flmetrics.Register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: RenderCacheMissesMetric, Help: "Cluster renders not in the render cache, rendered.",
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// failureReason classifies a render failure for RenderFailuresMetric: by the failing rule's
// overrider (transform, expandTemplates), else by what the message says.
func failureReason(f *override.RuleFailure, rulePlugins map[string]string, templateRules map[string]bool) string {
	key := f.Override + "/" + f.Rule
	switch {
	case rulePlugins[key] != "" || strings.Contains(f.Message, "WasmPlugin"):
		return failureWasm
	case strings.Contains(f.Message, "bytes, at most") || strings.Contains(f.Message, "over ") && strings.Contains(f.Message, "bytes"):
		return failureSize
	case templateRules[key] || strings.Contains(f.Message, "template:"):
		return failureTemplate
	}
	return failureRule
}

// cachedRender is one cluster's successful render.
type cachedRender struct {
	key  string
	hash string
	// spec is nil when the render is the template itself (no rule changed anything).
	spec    *workv1.ManifestWorkSpec
	applied string
	trace   []override.Applied
	matched []string
	size    int64
}

// renderCache is a Reconciler's LRU of renders by render inputs, bounded by bytes: the same
// inputs render the same work (checkDeterminism watches that), so a steady-state reconcile
// renders nothing.
type renderCache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	lru     *list.List // of *cachedRender, most recently used first
	entries map[string]*list.Element
}

func newRenderCache(maxBytes int64) *renderCache {
	return &renderCache{max: maxBytes, lru: list.New(), entries: map[string]*list.Element{}}
}

func (c *renderCache) get(key string) *cachedRender {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cachedRender)
}

func (c *renderCache) put(e *cachedRender) {
	if c == nil {
		return
	}
	e.size = int64(len(e.key)+len(e.hash)+len(e.applied)) + 256
	if e.spec != nil {
		for _, m := range e.spec.Workload.Manifests {
			e.size += int64(len(m.Raw))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.size > c.max {
		return
	}
	if el, ok := c.entries[e.key]; ok {
		c.size -= el.Value.(*cachedRender).size
		c.lru.Remove(el)
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.size += e.size
	for c.size > c.max {
		oldest := c.lru.Back()
		old := oldest.Value.(*cachedRender)
		c.lru.Remove(oldest)
		delete(c.entries, old.key)
		c.size -= old.size
	}
}

func (c *renderCache) remove(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.size -= el.Value.(*cachedRender).size
		c.lru.Remove(el)
		delete(c.entries, key)
	}
}

// purge empties the cache (as a restart does).
func (c *renderCache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	c.entries = map[string]*list.Element{}
	c.size = 0
}

// len and bytes are for tests.
func (c *renderCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *renderCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
