package wasm

import (
	"fmt"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/go-logr/logr"
)

// LogLevel is the minimum level of guest log messages the host forwards.
type LogLevel string

const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogWarn  LogLevel = "warn"
	LogError LogLevel = "error"
	LogOff   LogLevel = "off"
)

func (l LogLevel) extism() (extism.LogLevel, error) {
	switch strings.ToLower(string(l)) {
	case "debug":
		return extism.LogLevelDebug, nil
	case "", "info":
		return extism.LogLevelInfo, nil
	case "warn":
		return extism.LogLevelWarn, nil
	case "error":
		return extism.LogLevelError, nil
	case "off":
		return extism.LogLevelOff, nil
	}
	return 0, fmt.Errorf("unknown guest log level %q (want debug, info, warn, error or off)", l)
}

// logr verbosity per guest level: warnings and infos at V(0)/V(1) so a default hub
// logger shows warnings, debug and trace only at higher verbosity.
func logrVerbosity(l extism.LogLevel) int {
	switch l {
	case extism.LogLevelWarn:
		return 0
	case extism.LogLevelInfo:
		return 1
	case extism.LogLevelDebug:
		return 2
	default:
		return 3
	}
}

// guestLogger forwards one plugin's guest log lines to the engine logger, tagged with
// the plugin name, gated by level and limited by a token bucket so a chatty or hostile
// guest cannot flood the hub's logs. Suppressed lines are counted and reported.
type guestLogger struct {
	log      logr.Logger
	minLevel extism.LogLevel
	rate     float64 // tokens per second
	burst    float64
	maxLen   int
	now      func() time.Time

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

func newGuestLogger(log logr.Logger, plugin string, minLevel extism.LogLevel, perSecond, burst int) *guestLogger {
	return &guestLogger{
		log:      log.WithValues("wasmPlugin", plugin),
		minLevel: minLevel,
		rate:     float64(perSecond),
		burst:    float64(burst),
		tokens:   float64(burst),
		maxLen:   4096,
		now:      time.Now,
	}
}

// emit is installed as the Extism logger of every instance of the plugin.
func (g *guestLogger) emit(level extism.LogLevel, msg string) {
	if level < g.minLevel {
		return
	}
	g.mu.Lock()
	now := g.now()
	if !g.last.IsZero() {
		g.tokens = min(g.burst, g.tokens+now.Sub(g.last).Seconds()*g.rate)
	}
	g.last = now
	if g.tokens < 1 {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	g.tokens--
	suppressed := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()

	if len(msg) > g.maxLen {
		msg = msg[:g.maxLen] + "…(truncated)"
	}
	kv := []any{"guestLevel", level.String()}
	if suppressed > 0 {
		kv = append(kv, "suppressedBefore", suppressed)
	}
	if level >= extism.LogLevelError {
		g.log.Error(nil, msg, kv...)
		return
	}
	g.log.V(logrVerbosity(level)).Info(msg, kv...)
}
