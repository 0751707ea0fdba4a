package registration

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Backoff is a capped exponential delay with jitter for retrying calls to a hub
// or managed API server that may be away for a long time. The agent never gives
// up; it only waits longer, up to Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration

	next time.Duration
}

// NewBackoff returns a backoff starting at initial and capped at max.
func NewBackoff(initial, max time.Duration) *Backoff {
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

// sleep waits d on clk, returning false when ctx ends first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
