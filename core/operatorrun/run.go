package operatorrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Runner runs a component (the hub, the klusterlet's agents) with the settings an operator API
// object of type T asks for, worked out as a plan P, until its context ends. It starts the
// component, stops it when a change of the object gives a plan Equal does not match and starts
// it again with the new plan, logging what changed; a component that fails is started again
// after a backoff.
type Runner[T client.Object, P any] struct {
	// Source reads the object and says when it may have changed.
	Source Source[T]
	// Component names what runs, in messages: "the hub".
	Component string
	// Plan returns what obj asks for; obj is nil when there is none (the flags alone). An error
	// ends Run before a start; on a change it leaves the running component be.
	Plan func(obj T) (P, error)
	// Equal reports that the component would run alike with a and b: a change of the object
	// that gives a plan equal to the running one restarts nothing.
	Equal func(a, b P) bool
	// Describe says what a plan runs with, for the log; Diff what changed from old to new.
	Describe func(p P) any
	Diff     func(old, new P) []string
	// Start runs the component as p says until ctx ends (then it returns) or it fails. A
	// component that stops before ctx ends is started again after a backoff, unless the error
	// is Permanent: Run returns that.
	Start func(ctx context.Context, p P) error
	// MinBackoff and MaxBackoff bound the wait before a component that failed is started
	// again, doubling from one to the other; defaults 1 s and 1 min. One that ran for longer
	// than MaxBackoff before failing waits MinBackoff again.
	MinBackoff, MaxBackoff time.Duration
	// Log defaults to logr.Discard().
	Log logr.Logger
}

// Permanent marks err as one that starting again does not mend (the options are wrong):
// Runner.Run returns it rather than starting the component again.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Run runs the component until ctx ends; see Runner. It returns nil when ctx ends, and an
// error when the object cannot be read, Plan fails before a start, or Start fails Permanent.
func (r Runner[T, P]) Run(ctx context.Context) error {
	if r.MinBackoff <= 0 {
		r.MinBackoff = time.Second
	}
	if r.MaxBackoff < r.MinBackoff {
		r.MaxBackoff = max(time.Minute, r.MinBackoff)
	}
	if r.Log.GetSink() == nil {
		r.Log = logr.Discard()
	}
	kind, name := Kind[T](), r.Source.Name()
	key := lowerFirst(kind)
	changes, stop := r.Source.Subscribe()
	defer stop()
	b := newBackoff(r.MinBackoff, r.MaxBackoff)
	var last *P
	for ctx.Err() == nil {
		p, gen, err := r.plan(ctx)
		if err != nil {
			return err
		}
		switch {
		case last == nil:
			r.Log.Info("Starting "+r.Component, key, name, "generation", gen, "settings", r.Describe(p))
		case !r.Equal(*last, p):
			r.Log.Info(kind+" settings changed; restarting "+r.Component, key, name, "generation", gen, "changes", r.Diff(*last, p))
		default:
			r.Log.Info("Starting "+r.Component+" again", key, name, "generation", gen)
		}
		last = &p
		started := time.Now()
		changed, err := r.runOnce(ctx, p, changes)
		var permanent permanentError
		switch {
		case ctx.Err() != nil:
			return nil
		case changed:
			b = newBackoff(r.MinBackoff, r.MaxBackoff)
			continue
		case errors.As(err, &permanent):
			return permanent.error
		case time.Since(started) > r.MaxBackoff:
			// It ran well for a while: this is a new failure, not a repeated one.
			b = newBackoff(r.MinBackoff, r.MaxBackoff)
		}
		if err == nil {
			err = errors.New(r.Component + " stopped")
		}
		after := b.Step()
		r.Log.Error(err, "Starting "+r.Component+" again after a failure", "after", after)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(after):
		}
	}
	return nil
}

// plan reads the object and returns its plan and generation (0 without one).
func (r Runner[T, P]) plan(ctx context.Context) (P, int64, error) {
	obj, found, err := r.Source.Get(ctx)
	if err != nil {
		var zero P
		return zero, 0, fmt.Errorf("reading %s %s: %w", Kind[T](), r.Source.Name(), err)
	}
	var gen int64
	if found {
		gen = obj.GetGeneration()
	}
	p, err := r.Plan(obj)
	return p, gen, err
}

// runOnce runs the component as p says until ctx ends, it stops, or the object asks for
// another plan: then it stops the component (a leader hands its Lease over as it stops) and
// reports changed.
func (r Runner[T, P]) runOnce(ctx context.Context, p P, changes <-chan struct{}) (changed bool, err error) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- r.Start(runCtx, p) }()
	for {
		select {
		case err := <-done:
			return false, err
		case <-changes:
			next, _, err := r.plan(ctx)
			if err != nil {
				r.Log.Error(err, "Reading the new settings; "+r.Component+" keeps running")
				continue
			}
			if r.Equal(p, next) {
				continue
			}
			stop()
			if err := <-done; err != nil {
				r.Log.Error(err, "Stopping "+r.Component+" for new settings")
			}
			return true, nil
		}
	}
}

// newBackoff doubles a wait from minWait up to maxWait, without jitter: one process restarts.
func newBackoff(minWait, maxWait time.Duration) *wait.Backoff {
	return &wait.Backoff{Duration: minWait, Factor: 2, Cap: maxWait, Steps: math.MaxInt32}
}

// lowerFirst is a kind as a log key: "clusterManager".
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
