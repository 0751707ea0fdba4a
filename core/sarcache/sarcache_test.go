package sarcache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviews allows alice only; with gate set, each review waits for it (or its context).
type fakeReviews struct {
	calls atomic.Int32
	gate  chan struct{}
	// started receives each review's context as it starts.
	started chan context.Context
	fail    atomic.Bool
}

func (f *fakeReviews) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.calls.Add(1)
	if f.started != nil {
		f.started <- ctx
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fail.Load() {
		return nil, errors.New("API server unavailable")
	}
	sar.Status.Allowed = sar.Spec.User == "alice"
	return sar, nil
}

func review(user string) *authorizationv1.SubjectAccessReview {
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "app"}}}
}

// newCache is a cache named after the test, so its metrics are its own.
func newCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	opts.Name = t.Name()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(t *testing.T, c *Cache, user string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := c.Create(ctx, review(user), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("asking for %s: %v", user, err)
	}
	return res.Status.Allowed
}

func wantCalls(t *testing.T, f *fakeReviews, n int32, why string) {
	t.Helper()
	if got := f.calls.Load(); got != n {
		t.Fatalf("%s: %d SubjectAccessReviews, want %d", why, got, n)
	}
}

func TestTTLExpiresAllowedAndDeniedAnswersSeparately(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := &fakeReviews{}
	c := newCache(t, Options{Reviews: f, Clock: clk, AllowedTTL: 10 * time.Second, DeniedTTL: 2 * time.Second})
	for range 3 {
		if !ask(t, c, "alice") || ask(t, c, "bob") {
			t.Fatal("wrong answer")
		}
	}
	wantCalls(t, f, 2, "two questions asked three times")
	if hits, misses := testutil.ToFloat64(c.hits), testutil.ToFloat64(c.misses); hits != 4 || misses != 2 {
		t.Fatalf("hits %v misses %v, want 4 and 2", hits, misses)
	}
	clk.SetTime(clk.Now().Add(3 * time.Second)) // bob's denial expired, alice's grant not
	ask(t, c, "alice")
	ask(t, c, "bob")
	wantCalls(t, f, 3, "after the denied TTL")
	clk.SetTime(clk.Now().Add(8 * time.Second))
	ask(t, c, "alice")
	wantCalls(t, f, 4, "after the allowed TTL")
	// Another group is another question.
	g := review("alice")
	g.Spec.Groups = []string{"team"}
	if _, err := c.Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, f, 5, "a question with a group")
}

func TestSizeBoundEvictsTheLeastRecentlyUsed(t *testing.T) {
	f := &fakeReviews{}
	c := newCache(t, Options{Reviews: f, Size: 2})
	ask(t, c, "a")
	ask(t, c, "b")
	ask(t, c, "a") // a is now the most recently used
	ask(t, c, "c") // evicts b
	if n := c.Len(); n != 2 {
		t.Fatalf("cache holds %d answers, bound 2", n)
	}
	wantCalls(t, f, 3, "before")
	ask(t, c, "a")
	wantCalls(t, f, 3, "a was kept")
	ask(t, c, "b")
	wantCalls(t, f, 4, "b was evicted")
}

func TestConcurrentQuestionsShareOneReviewAndACancelledWaiterFailsNoOther(t *testing.T) {
	f := &fakeReviews{gate: make(chan struct{}), started: make(chan context.Context, 10)}
	c := newCache(t, Options{Reviews: f})

	// The first caller starts the review, then gives up.
	first, cancelFirst := context.WithCancel(t.Context())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Create(first, review("alice"), metav1.CreateOptions{})
		firstErr <- err
	}()
	var reviewCtx context.Context
	select {
	case reviewCtx = <-f.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no SubjectAccessReview started within 10s")
	}

	const waiters = 3
	var wg sync.WaitGroup
	answers := make(chan error, waiters)
	for range waiters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			res, err := c.Create(ctx, review("alice"), metav1.CreateOptions{})
			if err == nil && !res.Status.Allowed {
				err = errors.New("alice denied")
			}
			answers <- err
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(c.hits) < waiters {
		if time.Now().After(deadline) {
			t.Fatalf("only %v of %d callers joined the review in flight within 10s", testutil.ToFloat64(c.hits), waiters)
		}
		time.Sleep(time.Millisecond)
	}

	cancelFirst()
	select {
	case err := <-firstErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled caller got %v, want its own context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled caller still waits 10s after its context ended")
	}
	if err := reviewCtx.Err(); err != nil {
		t.Fatalf("the shared review's context ended with its first caller's: %v", err)
	}
	if _, ok := reviewCtx.Deadline(); !ok {
		t.Fatal("the shared review has no deadline of its own")
	}

	close(f.gate)
	wg.Wait()
	close(answers)
	for err := range answers {
		if err != nil {
			t.Fatalf("a waiter failed: %v", err)
		}
	}
	wantCalls(t, f, 1, "four concurrent identical questions")
	// The answer is kept though the caller who started the review had gone.
	ask(t, c, "alice")
	wantCalls(t, f, 1, "asked again after")
}

func TestInvalidateDropsAnswersAndReviewsUnderWay(t *testing.T) {
	f := &fakeReviews{}
	c := newCache(t, Options{Reviews: f})
	ask(t, c, "alice")
	c.Invalidate()
	if c.Len() != 0 {
		t.Fatalf("%d answers kept across an invalidation", c.Len())
	}
	ask(t, c, "alice")
	wantCalls(t, f, 2, "after an invalidation")

	// A review that started before an invalidation may have read RBAC from before the change:
	// its answer is not kept, and a question asked after the change is not given it.
	f.gate, f.started = make(chan struct{}), make(chan context.Context, 10)
	stale := make(chan error, 1)
	go func() {
		_, err := c.Create(t.Context(), review("bob"), metav1.CreateOptions{})
		stale <- err
	}()
	<-f.started
	c.Invalidate()
	fresh := make(chan error, 1)
	go func() {
		_, err := c.Create(t.Context(), review("bob"), metav1.CreateOptions{})
		fresh <- err
	}()
	select {
	case <-f.started:
	case <-time.After(10 * time.Second):
		t.Fatal("a question asked after the invalidation joined the review from before it")
	}
	close(f.gate)
	for _, ch := range []chan error{stale, fresh} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	wantCalls(t, f, 4, "bob asked across an invalidation")
	if got := testutil.ToFloat64(c.invalidations); got != 2 {
		t.Fatalf("invalidations metric %v, want 2", got)
	}
}

func TestErrorsAreNotKept(t *testing.T) {
	f := &fakeReviews{}
	f.fail.Store(true)
	c := newCache(t, Options{Reviews: f})
	if _, err := c.Create(t.Context(), review("alice"), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("got %v, want the API server's error", err)
	}
	f.fail.Store(false)
	if !ask(t, c, "alice") {
		t.Fatal("alice denied after the API server came back")
	}
	wantCalls(t, f, 2, "an error then an answer")
}

func TestNewNeedsReviewsAndName(t *testing.T) {
	if _, err := New(Options{Name: "x"}); err == nil {
		t.Error("no Reviews accepted")
	}
	if _, err := New(Options{Reviews: &fakeReviews{}}); err == nil {
		t.Error("no Name accepted")
	}
}
