package clustergateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// fakeAgent reports the health values it is sent, then returns when ctx ends.
type fakeAgent struct{ health chan bool }

func (f fakeAgent) Run(ctx context.Context, env addon.BuiltinEnv) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ok := <-f.health:
			env.Healthy(ok)
		}
	}
}

func TestTapFollowsTheTappedAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	health := make(chan bool)
	tap := &Tap{Agent: fakeAgent{health}}
	reported := make(chan bool, 10)
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- tap.Run(runCtx, addon.BuiltinEnv{Healthy: func(ok bool) { reported <- ok }}) }()

	up, changed := tap.Up()
	if up {
		t.Fatal("Tap is up before the agent reported anything")
	}
	health <- true
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Tap did not signal the agent's report of healthy")
	}
	if up, _ := tap.Up(); !up {
		t.Fatal("Tap is not up after the agent reported healthy")
	}
	if ok := <-reported; !ok {
		t.Fatal("the klusterlet's Healthy did not get the agent's true")
	}
	// The agent ends (its add-on disabled): the tunnel counts as down.
	_, changed = tap.Up()
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Tap did not signal that the stopped agent is down")
	}
	if up, _ := tap.Up(); up {
		t.Fatal("Tap is still up after its agent returned")
	}
}

func TestAgentNeedsTunnelAndConfig(t *testing.T) {
	err := (&Agent{}).Run(t.Context(), addon.BuiltinEnv{})
	if err == nil {
		t.Fatal("Run without a tunnel tap and a managed config succeeded")
	}
	if err := (&Tap{}).Run(t.Context(), addon.BuiltinEnv{}); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Tap without an agent: %v, want an error", err)
	}
}
