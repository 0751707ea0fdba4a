package backoff

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffCapped(t *testing.T) {
	b := New(time.Second, 8*time.Second)
	var last time.Duration
	for i := range 10 {
		d := b.Next()
		base := min(time.Second<<i, 8*time.Second)
		if d < base || d > base+base/5 {
			t.Fatalf("attempt %d: %v outside [%v, %v]", i, d, base, base+base/5)
		}
		last = d
	}
	if last > 8*time.Second+8*time.Second/5 {
		t.Fatalf("not capped: %v", last)
	}
	b.Reset()
	if d := b.Next(); d > time.Second+time.Second/5 {
		t.Fatalf("after reset: %v", d)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, clk, time.Hour) }()
	cancel()
	select {
	case slept := <-done:
		if slept {
			t.Fatal("Sleep reported the full wait although its context ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return within 10 s of its context ending")
	}
	done2 := make(chan bool)
	go func() { done2 <- Sleep(context.Background(), clk, time.Minute) }()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("Sleep never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	select {
	case slept := <-done2:
		if !slept {
			t.Fatal("Sleep reported an ended context after its full wait")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return within 10 s of its clock passing the wait")
	}
}
