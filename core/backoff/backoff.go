// Package backoff paces retries of calls to API servers and tunnels that may be away for a
// long time: a capped exponential delay with jitter, and a sleep that a context ends.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Backoff is a capped exponential delay with jitter. Its user never gives up; it only waits
// longer, up to Max. Not safe for concurrent use.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration

	next time.Duration
}

// New returns a backoff starting at initial (500ms if not positive) and capped at max.
func New(initial, max time.Duration) *Backoff {
	if initial <= 0 {
		initial = 500 * time.Millisecond
	}
	if max < initial {
		max = initial
	}
	return &Backoff{Initial: initial, Max: max}
}

// Next returns the delay before the next attempt and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	if b.next == 0 {
		b.next = b.Initial
	}
	d := b.next
	b.next = min(2*b.next, b.Max)
	// Up to 20% jitter so that many agents do not retry in lockstep.
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// Reset starts the next failure sequence at Initial again.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits d on clk (clock.RealClock{} outside tests), returning false when ctx ends first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
