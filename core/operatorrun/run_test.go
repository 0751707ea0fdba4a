package operatorrun

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun/operatorruntest"
)

// fakeSource holds a ClusterManager in memory.
type fakeSource struct {
	subscribers
	mu   sync.Mutex
	obj  *operatorv1.ClusterManager // nil: none
	gets int
}

func newFakeSource() *fakeSource { return &fakeSource{} }

func (f *fakeSource) Name() string { return "cluster-manager" }

func (f *fakeSource) Get(context.Context) (*operatorv1.ClusterManager, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.obj == nil {
		return nil, false, nil
	}
	return f.obj.DeepCopy(), true, nil
}

// set replaces the object (nil: deletes it) and notifies the subscribers.
func (f *fakeSource) set(obj *operatorv1.ClusterManager) {
	f.mu.Lock()
	f.obj = obj
	f.mu.Unlock()
	f.notify()
}

func (f *fakeSource) getCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

// withMode is a ClusterManager whose plan is mode (its "mode" label).
func withMode(mode string, generation int64) *operatorv1.ClusterManager {
	return &operatorv1.ClusterManager{ObjectMeta: metav1.ObjectMeta{Name: "cluster-manager", Generation: generation,
		Labels: map[string]string{"mode": mode}}}
}

// runner plans the "mode" label ("flags" without a ClusterManager) and starts with start.
func runner(src *fakeSource, start func(context.Context, string) error) Runner[*operatorv1.ClusterManager, string] {
	return Runner[*operatorv1.ClusterManager, string]{
		Source:    src,
		Component: "the component",
		Plan: func(cm *operatorv1.ClusterManager) (string, error) {
			if cm == nil {
				return "flags", nil
			}
			if cm.Labels["mode"] == "bad" {
				return "", errors.New("bad mode")
			}
			return cm.Labels["mode"], nil
		},
		Equal:      func(a, b string) bool { return a == b },
		Describe:   func(p string) any { return p },
		Diff:       func(a, b string) []string { return []string{a + " -> " + b} },
		Start:      start,
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 40 * time.Millisecond,
	}
}

// started is one call of a fake Start.
type started struct {
	plan string
	ctx  context.Context
	at   time.Time
}

// receive returns the next start, failing the test after 10 s.
func receive(t *testing.T, starts <-chan started) started {
	t.Helper()
	select {
	case s := <-starts:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no start")
		return started{}
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// runInBackground runs r until the test ends and returns Run's result channel.
func runInBackground(t *testing.T, r Runner[*operatorv1.ClusterManager, string]) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		done <- r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return cancel, done
}

func TestRunRestartsOnlyWhenThePlanChanges(t *testing.T) {
	src := newFakeSource()
	starts := make(chan started, 10)
	r := runner(src, func(ctx context.Context, p string) error {
		starts <- started{plan: p, ctx: ctx}
		<-ctx.Done()
		return nil
	})
	var logs *operatorruntest.Logs
	r.Log, logs = operatorruntest.NewLogger(io.Discard)
	cancel, done := runInBackground(t, r)

	first := receive(t, starts)
	if first.plan != "flags" {
		t.Fatalf("first plan %q, want flags", first.plan)
	}
	src.set(withMode("a", 1))
	second := receive(t, starts)
	if second.plan != "a" || first.ctx.Err() == nil {
		t.Fatalf("after the change: plan %q, first run's context %v", second.plan, first.ctx.Err())
	}
	if n := logs.Count("ClusterManager settings changed; restarting the component"); n != 1 {
		t.Errorf("%d restart lines, want 1", n)
	}

	// A new generation with the same plan restarts nothing.
	gets := src.getCount()
	src.set(withMode("a", 2))
	eventually(t, func() bool { return src.getCount() > gets }, "the change was not read")
	src.set(withMode("b", 3))
	if third := receive(t, starts); third.plan != "b" || second.ctx.Err() == nil {
		t.Fatalf("third start %q, want b", third.plan)
	}
	// A plan that cannot be made leaves the component running.
	gets = src.getCount()
	src.set(withMode("bad", 4))
	eventually(t, func() bool { return src.getCount() > gets }, "the change was not read")
	src.set(nil)
	if fourth := receive(t, starts); fourth.plan != "flags" {
		t.Fatalf("without the ClusterManager: %q, want flags", fourth.plan)
	}
	if len(starts) != 0 {
		t.Errorf("unexpected starts: %d", len(starts))
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestRunStartsAgainAfterABackoff(t *testing.T) {
	src := newFakeSource()
	starts := make(chan started, 10)
	var calls atomic.Int32
	r := runner(src, func(ctx context.Context, p string) error {
		starts <- started{plan: p, ctx: ctx, at: time.Now()}
		if calls.Add(1) == 3 {
			return nil // stopping on its own is a failure too
		}
		return errors.New("failed")
	})
	runInBackground(t, r)
	var at []time.Time
	for range 6 {
		at = append(at, receive(t, starts).at)
	}
	// The waits double from MinBackoff up to MaxBackoff.
	for i, want := range []time.Duration{10, 20, 40, 40, 40} {
		if gap := at[i+1].Sub(at[i]); gap < want*time.Millisecond {
			t.Errorf("wait %d: %v, want at least %v ms", i, gap, want)
		}
	}
}

func TestRunReturnsAPermanentError(t *testing.T) {
	src := newFakeSource()
	src.set(withMode("a", 1))
	wrong := errors.New("wrong options")
	calls := 0
	r := runner(src, func(context.Context, string) error {
		calls++
		return Permanent(wrong)
	})
	if err := r.Run(context.Background()); err != wrong {
		t.Errorf("Run: %v, want %v", err, wrong)
	}
	if calls != 1 {
		t.Errorf("%d starts, want 1", calls)
	}
}

func TestRunReturnsAPlanErrorBeforeAStart(t *testing.T) {
	src := newFakeSource()
	src.set(withMode("bad", 1))
	r := runner(src, func(context.Context, string) error {
		t.Error("started")
		return nil
	})
	if err := r.Run(context.Background()); err == nil || err.Error() != "bad mode" {
		t.Errorf("Run: %v, want bad mode", err)
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	b := newBackoff(time.Second, time.Minute)
	var got []time.Duration
	for range 8 {
		got = append(got, b.Step()/time.Second)
	}
	if want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}; !slices.Equal(got, want) {
		t.Errorf("waits %v s, want %v", got, want)
	}
}

func TestStatusLoopWritesOnEveryChange(t *testing.T) {
	src := newFakeSource()
	writes := make(chan struct{}, 10)
	var polled sync.Mutex
	pokes := 0
	changed := func() bool {
		polled.Lock()
		defer polled.Unlock()
		if pokes > 0 {
			pokes--
			return true
		}
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		StatusLoop(ctx, src, time.Hour, changed, logr.Discard(), func(context.Context) error {
			writes <- struct{}{}
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-writes:
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}
	wait("no first write")
	src.set(withMode("a", 1))
	wait("no write after a change of the object")
	polled.Lock()
	pokes = 1
	polled.Unlock()
	wait("no write after a change of the polled state")
}
