package wasm

import (
	"strings"
	"sync"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/go-logr/logr/funcr"
)

func TestGuestLoggerGatesLevelsAndLimitsRate(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{Verbosity: 2})
	now := time.Unix(1000, 0)
	g := newGuestLogger(log, "chatty", extism.LogLevelInfo, 1, 3)
	g.now = func() time.Time { return now }

	g.emit(extism.LogLevelDebug, "below the level")
	for i := 0; i < 10; i++ {
		g.emit(extism.LogLevelInfo, "burst line")
	}
	if len(lines) != 3 {
		t.Fatalf("burst of 3 should let 3 lines through, got %d: %v", len(lines), lines)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"wasmPlugin"="chatty"`) || strings.Contains(l, "below the level") {
			t.Fatalf("line %q: want plugin tag and no debug lines", l)
		}
	}
	now = now.Add(2 * time.Second) // refills two tokens
	g.emit(extism.LogLevelWarn, "after pause")
	g.emit(extism.LogLevelError, "an error")
	g.emit(extism.LogLevelError, "dropped again")
	if len(lines) != 5 {
		t.Fatalf("want 5 lines after refill, got %d: %v", len(lines), lines)
	}
	if !strings.Contains(lines[3], "after pause") || !strings.Contains(lines[3], `"suppressedBefore"=7`) {
		t.Fatalf("line after the pause should report 7 suppressed lines: %q", lines[3])
	}
	// Guest errors go to logr's Error with a nil error, which funcr prints as "error"=null.
	if !strings.Contains(lines[4], `"msg"="an error"`) || !strings.Contains(lines[4], `"error"=null`) {
		t.Fatalf("error line %q: want the guest's message logged at error level", lines[4])
	}
}

func TestGuestLoggerTruncatesLongLines(t *testing.T) {
	var got string
	log := funcr.New(func(_, args string) { got = args }, funcr.Options{Verbosity: 1})
	g := newGuestLogger(log, "long", extism.LogLevelInfo, 10, 10)
	g.emit(extism.LogLevelInfo, strings.Repeat("x", 10000))
	if len(got) > 5000 || !strings.Contains(got, "(truncated)") {
		t.Fatalf("long line not truncated (len %d)", len(got))
	}
}

func TestMemoryBudgetRefusesGrowthPastTheLimit(t *testing.T) {
	b := newMemoryBudget(10 << 16)
	a := b.Allocate(0, 1<<32)
	c := b.Allocate(0, 1<<32)
	if buf := a.Reallocate(4 << 16); len(buf) != 4<<16 {
		t.Fatalf("initial allocation: len %d", len(buf))
	}
	buf := c.Reallocate(2 << 16)
	buf[0] = 42
	if buf := c.Reallocate(5 << 16); len(buf) != 5<<16 || buf[0] != 42 {
		t.Fatalf("growth within the shared budget must succeed and keep contents")
	}
	if b.hit.Load() || b.Bytes() != 9<<16 {
		t.Fatalf("used %d, hit %v", b.Bytes(), b.hit.Load())
	}
	if buf := a.Reallocate(6 << 16); buf != nil {
		t.Fatalf("growth past the budget must fail")
	}
	if !b.hit.Load() || b.Bytes() != 9<<16 {
		t.Fatalf("refused growth must be recorded and not counted: used %d", b.Bytes())
	}
	a.Free()
	c.Free()
	if b.Bytes() != 0 {
		t.Fatalf("after Free used = %d", b.Bytes())
	}
	// The module's declared minimum cannot be refused (wazero would panic); it is
	// recorded so the host fails the instantiation itself.
	small := newMemoryBudget(1 << 16)
	if buf := small.Allocate(0, 1<<32).Reallocate(3 << 16); len(buf) != 3<<16 || !small.hit.Load() {
		t.Fatalf("oversized minimum must be allocated and flagged")
	}
}
