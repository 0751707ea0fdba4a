// Package sarcache is Flotilla's one cache of SubjectAccessReview answers, used by the hub's
// admission (flotilla.authorized) and by the work agent's executor checks: answers expire
// (TTL), the cache holds at most Size of them (least recently used go first), concurrent
// identical questions share one review, and RBACWatch drops every answer when a Role,
// ClusterRole or binding changes.
package sarcache

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	flmetrics "github.com/flotilla-dev/flotilla/core/metrics"
)

// Reviewer creates SubjectAccessReviews:
// kubernetes.Interface.AuthorizationV1().SubjectAccessReviews() satisfies it, and so does Cache.
type Reviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Defaults, as the API server's webhook authorizer caches but shorter: without an
// invalidation a grant takes effect within DefaultDeniedTTL, a revocation within
// DefaultAllowedTTL.
const (
	DefaultAllowedTTL = 10 * time.Second
	DefaultDeniedTTL  = 2 * time.Second
	DefaultSize       = 10000
	// DefaultReviewTimeout bounds one SubjectAccessReview, whoever waits for it.
	DefaultReviewTimeout = 10 * time.Second
)

// Metric names; each has the label cache (Options.Name).
const (
	// HitsMetric counts questions answered without a review of their own: from the cache, or
	// by sharing a review another caller started.
	HitsMetric = "flotilla_sar_cache_hits_total"
	// MissesMetric counts SubjectAccessReviews made.
	MissesMetric = "flotilla_sar_cache_misses_total"
	// InvalidationsMetric counts times every answer was dropped (RBAC changed).
	InvalidationsMetric = "flotilla_sar_cache_invalidations_total"
)

// Options configure a Cache. Zero values take the defaults.
type Options struct {
	// Reviews answers what the cache does not hold. Required.
	Reviews Reviewer
	// Name labels the cache's metrics (cache="executor", cache="admission"). Required.
	Name string
	// AllowedTTL and DeniedTTL are how long an allowed or a denied answer is kept.
	AllowedTTL, DeniedTTL time.Duration
	// Size is how many answers are kept at most.
	Size int
	// ReviewTimeout bounds each SubjectAccessReview.
	ReviewTimeout time.Duration
	// Clock tells the time of expiries. Default the real clock.
	Clock clock.PassiveClock
}

// Cache answers SubjectAccessReviews through Options.Reviews, keeping answers for their TTL.
// Create makes it a Reviewer; safe for concurrent use.
type Cache struct {
	opts                        Options
	hits, misses, invalidations prometheus.Counter
	mu                          sync.Mutex
	generation                  uint64
	lru                         *list.List // of *entry, most recently used first
	entries                     map[string]*list.Element
	inflight                    map[string]*call
}

type entry struct {
	key     string
	status  authorizationv1.SubjectAccessReviewStatus
	expires time.Time
}

// call is one review shared by everyone asking the same question meanwhile.
type call struct {
	done   chan struct{}
	status authorizationv1.SubjectAccessReviewStatus
	err    error
}

// New returns an empty cache; it fails only if its metrics cannot be registered.
func New(opts Options) (*Cache, error) {
	switch {
	case opts.Reviews == nil:
		return nil, errors.New("sarcache: Options.Reviews is required")
	case opts.Name == "":
		return nil, errors.New("sarcache: Options.Name is required")
	}
	if opts.AllowedTTL <= 0 {
		opts.AllowedTTL = DefaultAllowedTTL
	}
	if opts.DeniedTTL <= 0 {
		opts.DeniedTTL = DefaultDeniedTTL
	}
	if opts.Size <= 0 {
		opts.Size = DefaultSize
	}
	if opts.ReviewTimeout <= 0 {
		opts.ReviewTimeout = DefaultReviewTimeout
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Cache{opts: opts, lru: list.New(), entries: map[string]*list.Element{}, inflight: map[string]*call{}}
	for _, m := range []struct {
		into       *prometheus.Counter
		name, help string
	}{
		{&c.hits, HitsMetric, "SubjectAccessReview questions answered from the cache or by a review another caller started."},
		{&c.misses, MissesMetric, "SubjectAccessReviews made because the cache held no answer."},
		{&c.invalidations, InvalidationsMetric, "Times the cached SubjectAccessReview answers were dropped because RBAC changed."},
	} {
		vec, err := flmetrics.Register(prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.name, Help: m.help}, []string{"cache"}))
		if err != nil {
			return nil, fmt.Errorf("sarcache: %w", err)
		}
		*m.into = vec.WithLabelValues(opts.Name)
	}
	return c, nil
}

// Create answers sar.Spec from the cache or with a review; it returns a copy of sar with the
// answer in its status. Options are not passed on: a SubjectAccessReview is never stored.
//
// A review runs detached from any one caller's context, under ReviewTimeout, so a caller that
// gives up (its ctx ends: it gets ctx's error) fails no one else waiting for the same answer,
// and the answer is still kept. Errors are not kept.
func (c *Cache) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	keyBytes, err := json.Marshal(sar.Spec)
	if err != nil {
		return nil, fmt.Errorf("SubjectAccessReview for %s: %w", sar.Spec.User, err)
	}
	key := string(keyBytes)
	out := sar.DeepCopy()

	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*entry)
		if c.opts.Clock.Now().Before(e.expires) {
			c.lru.MoveToFront(el)
			out.Status = e.status
			c.mu.Unlock()
			c.hits.Inc()
			return out, nil
		}
		c.lru.Remove(el)
		delete(c.entries, key)
	}
	cl, shared := c.inflight[key]
	if !shared {
		cl = &call{done: make(chan struct{})}
		c.inflight[key] = cl
		go c.review(context.WithoutCancel(ctx), key, *sar.Spec.DeepCopy(), cl, c.generation)
	}
	c.mu.Unlock()
	if shared {
		c.hits.Inc()
	} else {
		c.misses.Inc()
	}

	select {
	case <-cl.done:
		if cl.err != nil {
			return nil, cl.err
		}
		out.Status = cl.status
		return out, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the SubjectAccessReview for %s: %w", sar.Spec.User, context.Cause(ctx))
	}
}

// review makes the review of cl and keeps its answer unless the cache was invalidated
// meanwhile (the answer may predate the RBAC change).
func (c *Cache) review(detached context.Context, key string, spec authorizationv1.SubjectAccessReviewSpec, cl *call, gen uint64) {
	ctx, cancel := context.WithTimeout(detached, c.opts.ReviewTimeout)
	defer cancel()
	res, err := c.opts.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err == nil {
		cl.status = res.Status
	} else {
		cl.err = err
	}
	c.mu.Lock()
	if c.inflight[key] == cl {
		delete(c.inflight, key)
	}
	if err == nil && gen == c.generation {
		c.store(key, cl.status)
	}
	c.mu.Unlock()
	close(cl.done)
}

// store keeps an answer, evicting the least recently used beyond Size. Called with mu held.
func (c *Cache) store(key string, status authorizationv1.SubjectAccessReviewStatus) {
	ttl := c.opts.AllowedTTL
	if !status.Allowed {
		ttl = c.opts.DeniedTTL
	}
	e := &entry{key: key, status: status, expires: c.opts.Clock.Now().Add(ttl)}
	if el, ok := c.entries[key]; ok {
		el.Value = e
		c.lru.MoveToFront(el)
		return
	}
	c.entries[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.opts.Size {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
}

// Invalidate drops every answer, and lets no review already under way keep its answer or
// answer a question asked from now on.
func (c *Cache) Invalidate() {
	c.mu.Lock()
	c.generation++
	c.lru.Init()
	clear(c.entries)
	c.inflight = map[string]*call{}
	c.mu.Unlock()
	c.invalidations.Inc()
}

// Len is how many answers the cache holds (expired ones included until they are asked for or
// evicted).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
