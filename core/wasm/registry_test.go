package wasm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

func nextEvent(t *testing.T, ch <-chan wasm.Event) wasm.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("event channel closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("no event delivered")
	}
	return wasm.Event{}
}

func TestRegistryHotReloadSwapsAtomicallyAndNotifies(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, wasm.EngineOptions{})
	r := wasm.NewRegistry()
	events, cancel := r.Subscribe(abi.TypePrioritizer)
	defer cancel()
	csrEvents, cancelCSR := r.Subscribe(abi.TypeCSRApproval)
	defer cancelCSR()

	v1, err := e.Load(ctx, wasm.ModuleSpec{Name: "spread", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.V1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, v1); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Name != "spread" || ev.Digest != v1.Digest() || ev.Removed {
		t.Fatalf("event %+v", ev)
	}

	// A user pinned to v1 (mid scheduling cycle) keeps v1 through the swap.
	pinned, release, err := r.Acquire("spread")
	if err != nil || pinned != v1 {
		t.Fatalf("Acquire: %v", err)
	}
	v2, err := e.Load(ctx, wasm.ModuleSpec{Name: "spread", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.Variant{Version: "v2", ABIVersion: "1"})})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Digest() == v1.Digest() {
		t.Fatalf("variants should differ")
	}
	setDone := make(chan error, 1)
	go func() { setDone <- r.Set(ctx, v2) }()
	if ev := nextEvent(t, events); ev.Digest != v2.Digest() {
		t.Fatalf("event after swap %+v, want digest %s", ev, v2.Digest())
	}
	// New callers already see v2 while v1 drains.
	if out, err := r.Call(ctx, "spread", "version", nil); err != nil || string(out) != "v2" {
		t.Fatalf("call after swap: %q %v", out, err)
	}
	if out, err := pinned.Call(ctx, "version", nil); err != nil || string(out) != "v1" {
		t.Fatalf("pinned call: %q %v", out, err)
	}
	select {
	case err := <-setDone:
		t.Fatalf("Set returned (%v) before the pinned user released v1", err)
	default:
	}
	release()
	if err := <-setDone; err != nil {
		t.Fatalf("Set: %v", err)
	}
	if _, err := v1.Call(ctx, "version", nil); wasm.CallErrorKindOf(err) != wasm.KindClosed {
		t.Fatalf("old module should be closed after draining, got %v", err)
	}

	if got := r.List(abi.TypePrioritizer); len(got) != 1 || got[0] != v2 {
		t.Fatalf("List = %v", got)
	}
	if got := r.List(abi.TypeCSRApproval); len(got) != 0 {
		t.Fatalf("List(CSRApproval) = %v", got)
	}
	if removed, err := r.Remove(ctx, "spread"); !removed || err != nil {
		t.Fatalf("Remove: %v %v", removed, err)
	}
	if ev := nextEvent(t, events); !ev.Removed || ev.Name != "spread" {
		t.Fatalf("remove event %+v", ev)
	}
	if _, err := r.Call(ctx, "spread", "version", nil); !errors.Is(err, wasm.ErrNotLoaded) {
		t.Fatalf("call after remove: %v", err)
	}
	select {
	case ev := <-csrEvents:
		t.Fatalf("CSRApproval subscriber got a Prioritizer event %+v", ev)
	default:
	}
}

func TestRegistryListIsSortedAndSubscribersDoNotBlock(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, wasm.EngineOptions{})
	r := wasm.NewRegistry()
	// A subscriber that never reads must not block Set.
	_, cancelIdle := r.Subscribe(abi.TypePrioritizer)
	events, cancel := r.Subscribe(abi.TypePrioritizer)
	bin := wasmtest.Misbehave(t, wasmtest.V1)
	for _, name := range []string{"zeta", "alpha", "mid"} {
		m, err := e.Load(ctx, wasm.ModuleSpec{Name: name, Type: abi.TypePrioritizer, Wasm: bin})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Set(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, m := range r.List(abi.TypePrioritizer) {
		names = append(names, m.Name())
	}
	if len(names) != 3 || names[0] != "alpha" || names[1] != "mid" || names[2] != "zeta" {
		t.Fatalf("List order %v", names)
	}
	for _, want := range []string{"zeta", "alpha", "mid"} {
		if ev := nextEvent(t, events); ev.Name != want {
			t.Fatalf("event %+v, want %s (in order, none dropped)", ev, want)
		}
	}
	cancel()
	cancelIdle()
	if _, ok := <-events; ok {
		t.Fatalf("channel should close after cancel")
	}
	for _, name := range []string{"zeta", "alpha", "mid"} {
		if _, err := r.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegistryTracksUnavailablePlugins(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, wasm.EngineOptions{})
	r := wasm.NewRegistry()
	events, cancel := r.Subscribe(abi.TypePrioritizer)
	defer cancel()

	m, err := e.Load(ctx, wasm.ModuleSpec{Name: "flaky", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.V1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, m); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events)

	u := wasm.Unavailable{Name: "flaky", Type: abi.TypePrioritizer, Reason: wasm.ReasonConfigRejected, Message: "no"}
	if err := r.MarkUnavailable(ctx, u); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); !ev.Removed || ev.Reason != wasm.ReasonConfigRejected {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := r.Get("flaky"); ok {
		t.Fatalf("an unavailable plugin must not serve")
	}
	if _, err := m.Call(ctx, "version", nil); wasm.CallErrorKindOf(err) != wasm.KindClosed {
		t.Fatalf("the module it served should be closed: %v", err)
	}
	got := r.Unavailable(abi.TypePrioritizer)
	if len(got) != 1 || got[0].Name != "flaky" || got[0].FailurePolicy != wasm.FailurePolicyFail || got[0].Reason != wasm.ReasonConfigRejected {
		t.Fatalf("Unavailable = %+v", got)
	}
	// Marking again with the same verdict is not news.
	if err := r.MarkUnavailable(ctx, u); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Fatalf("repeated verdict produced event %+v", ev)
	default:
	}

	m2, err := e.Load(ctx, wasm.ModuleSpec{Name: "flaky", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.V1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events); ev.Removed || ev.Digest != m2.Digest() {
		t.Fatalf("event after recovery %+v", ev)
	}
	if len(r.Unavailable(abi.TypePrioritizer)) != 0 {
		t.Fatalf("a serving plugin is not unavailable")
	}

	if err := r.MarkUnavailable(ctx, wasm.Unavailable{Name: "never-loaded", Type: abi.TypePrioritizer, FailurePolicy: wasm.FailurePolicyIgnore, Reason: wasm.ReasonSourceNotFound}); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, events)
	if removed, err := r.Remove(ctx, "never-loaded"); removed || err != nil {
		t.Fatalf("Remove of a plugin without module: %v %v", removed, err)
	}
	if ev := nextEvent(t, events); ev.Name != "never-loaded" || !ev.Removed || ev.Reason != "" {
		t.Fatalf("event after deleting an unavailable plugin %+v", ev)
	}
	if got := r.Unavailable(abi.TypePrioritizer); len(got) != 0 {
		t.Fatalf("Unavailable after Remove = %+v", got)
	}
	if _, err := r.Remove(ctx, "flaky"); err != nil {
		t.Fatal(err)
	}
}
