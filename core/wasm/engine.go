// Package wasm is the sandboxed Wasm plugin host shared by every Flotilla extension
// point (placement prioritizers, CSR approval, status feedback extractors, add-on
// templates). It runs Extism-ABI modules on wazero: each module is compiled once (the
// compilation cache is keyed by content, optionally persisted on disk), instantiated
// into a bounded pool, and every call runs under a deadline and a memory budget.
// Guests get WASI with no filesystem, environment, arguments or network, the Extism
// kernel, level-gated and rate-limited logging, and pluginConfig as an Extism config key.
package wasm

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/go-logr/logr"
	"github.com/tetratelabs/wazero"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Defaults and hub-wide maxima, used when EngineOptions or Limits leave a field zero.
const (
	DefaultMaxMemoryBytes uint64 = 256 << 20
	DefaultMaxCallTimeout        = 30 * time.Second
	DefaultMaxModuleBytes        = 32 << 20
	DefaultMaxPoolSize           = 16
	DefaultMemoryBytes    uint64 = 64 << 20
	DefaultCallTimeout           = 2 * time.Second
	DefaultGuestLogPerSec        = 20
	DefaultGuestLogBurst         = 100
	minMemoryBytes        uint64 = 1 << 20
)

// EngineOptions configures an Engine. Zero values pick the defaults above.
type EngineOptions struct {
	// CacheDir, when set, persists compiled machine code so a restart does not recompile.
	CacheDir string
	// MaxMemoryBytes is the hub-wide ceiling on a plugin's memory limit.
	MaxMemoryBytes uint64
	// MaxCallTimeout is the hub-wide ceiling on a plugin's per-call timeout.
	MaxCallTimeout time.Duration
	// MaxModuleBytes caps the uncompressed module size (Load and Decompress).
	MaxModuleBytes int
	// MaxPoolSize caps a plugin's instance pool.
	MaxPoolSize int
	// Logger receives host diagnostics and guest log lines (tagged wasmPlugin=<name>).
	Logger logr.Logger
	// GuestLogLevel is the lowest guest level forwarded (default info).
	GuestLogLevel LogLevel
	// GuestLogPerSecond and GuestLogBurst bound each plugin's log rate.
	GuestLogPerSecond, GuestLogBurst int
}

// Limits are one plugin's resource limits. Zero fields take the defaults; values above
// the engine maxima are clamped (see Module.Warnings).
type Limits struct {
	// MemoryBytes bounds all linear memory of one instance.
	MemoryBytes uint64
	// CallTimeout bounds one call, including lazy guest runtime start-up.
	CallTimeout time.Duration
	// PoolSize bounds the number of live instances, hence concurrent calls.
	PoolSize int
}

// ModuleSpec is everything Load needs.
type ModuleSpec struct {
	// Name is the WasmPlugin name; every error and log line carries it.
	Name string
	Type abi.PluginType
	// Wasm is the uncompressed module.
	Wasm []byte
	// SHA256, when set, is the expected hex digest of Wasm (spec.sha256); a mismatch
	// refuses the module with ReasonDigestMismatch.
	SHA256 string
	// Config is spec.pluginConfig as JSON; empty means none (the config key is then absent).
	Config []byte
	Limits Limits
	// FailurePolicy is carried for the module's users; the host does not act on it.
	FailurePolicy FailurePolicy
	// Deterministic gives instances no wall clock, monotonic clock or host entropy: they read
	// wazero's fake clocks (a fixed start, +1 ms per reading) and its seeded random source, so
	// the same calls in the same order give the same outputs. For types whose outputs are
	// hashed and rolled out (ManifestTransformer).
	Deterministic bool
}

// FailurePolicy tells users of a plugin what to do when it cannot be called.
type FailurePolicy string

const (
	FailurePolicyFail   FailurePolicy = "Fail"
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// Engine owns the compilation cache and hub-wide limits. Create one per process and
// share it; it is safe for concurrent use.
type Engine struct {
	opts       EngineOptions
	log        logr.Logger
	cache      wazero.CompilationCache
	guestLevel extism.LogLevel
	// instrument is the package's instrument; tests replace it to exercise the fallback.
	instrument func([]byte) ([]byte, error)

	mu      sync.Mutex
	closed  bool
	modules map[*Module]struct{}
}

// NewEngine validates opts and prepares the compilation cache.
func NewEngine(ctx context.Context, opts EngineOptions) (*Engine, error) {
	if opts.MaxMemoryBytes == 0 {
		opts.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if opts.MaxMemoryBytes < minMemoryBytes || opts.MaxMemoryBytes > 4<<30 {
		return nil, fmt.Errorf("wasm engine: MaxMemoryBytes %d outside [1MiB, 4GiB]", opts.MaxMemoryBytes)
	}
	if opts.MaxCallTimeout <= 0 {
		opts.MaxCallTimeout = DefaultMaxCallTimeout
	}
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if opts.MaxPoolSize <= 0 {
		opts.MaxPoolSize = DefaultMaxPoolSize
	}
	if opts.GuestLogPerSecond <= 0 {
		opts.GuestLogPerSecond = DefaultGuestLogPerSec
	}
	if opts.GuestLogBurst <= 0 {
		opts.GuestLogBurst = DefaultGuestLogBurst
	}
	level, err := opts.GuestLogLevel.extism()
	if err != nil {
		return nil, fmt.Errorf("wasm engine: GuestLogLevel: %w", err)
	}
	// Extism keeps the level that guests see (get_log_level) and that gates its log host
	// functions in a process-wide variable. Open it down to debug and gate per engine in
	// guestLogger, so two engines with different levels do not interfere. Not trace:
	// Extism logs its own trace lines while creating an instance, before our logger is
	// attached, to the standard library logger.
	extism.SetLogLevel(extism.LogLevelDebug)

	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("wasm engine: CacheDir %q: %w", opts.CacheDir, err)
		}
		cache, err = wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm engine: CacheDir %q: %w", opts.CacheDir, err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	return &Engine{
		opts:       opts,
		log:        opts.Logger,
		cache:      cache,
		guestLevel: level,
		instrument: instrument,
		modules:    map[*Module]struct{}{},
	}, nil
}

// Options returns the effective options (defaults filled in).
func (e *Engine) Options() EngineOptions { return e.opts }

// runtimeConfig is shared by all modules: the shared cache makes a second compile of
// the same bytes (a config-only change, a restart with CacheDir) nearly free.
// closeOnDone is for modules instrument could not rewrite: wazero then checks the
// context at every loop iteration itself, which stops a looping guest at its deadline
// but costs ~60 ns per iteration. Instrumented modules check through deadlineCheck.
func (e *Engine) runtimeConfig(closeOnDone bool) wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().
		WithCompilationCache(e.cache).
		WithCloseOnContextDone(closeOnDone)
}

// deadlineCheck is the host side of instrument's fuel check: it stops the call (by
// panicking; wazero turns that into the call's error, and callOn then discards the
// instance) once the call's context is done, or once Close gave up on the module,
// which wazero's close-on-done would otherwise have noticed.
func deadlineCheck(aborted *atomic.Bool) extism.HostFunction {
	f := extism.NewHostFunctionWithStack(deadlineField, func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
		if err := ctx.Err(); err != nil {
			panic(fmt.Errorf("%w: %w", errInterrupted, err))
		}
		if aborted.Load() {
			panic(fmt.Errorf("%w: the module was closed", errInterrupted))
		}
	}, nil, nil)
	f.SetNamespace(deadlineModule)
	return f
}

// errInterrupted is in the error of a call deadlineCheck stopped.
var errInterrupted = errors.New("call interrupted by the host")

// effectiveLimits applies defaults and clamps to the engine maxima, describing each clamp.
func (e *Engine) effectiveLimits(l Limits) (Limits, []string) {
	var warn []string
	if l.MemoryBytes == 0 {
		l.MemoryBytes = min(DefaultMemoryBytes, e.opts.MaxMemoryBytes)
	}
	if l.MemoryBytes > e.opts.MaxMemoryBytes {
		warn = append(warn, fmt.Sprintf("limits.memory %d bytes clamped to the hub maximum of %d bytes", l.MemoryBytes, e.opts.MaxMemoryBytes))
		l.MemoryBytes = e.opts.MaxMemoryBytes
	}
	if l.MemoryBytes < minMemoryBytes {
		warn = append(warn, fmt.Sprintf("limits.memory %d bytes raised to the minimum of %d bytes", l.MemoryBytes, minMemoryBytes))
		l.MemoryBytes = minMemoryBytes
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = min(DefaultCallTimeout, e.opts.MaxCallTimeout)
	}
	if l.CallTimeout > e.opts.MaxCallTimeout {
		warn = append(warn, fmt.Sprintf("limits.timeout %s clamped to the hub maximum of %s", l.CallTimeout, e.opts.MaxCallTimeout))
		l.CallTimeout = e.opts.MaxCallTimeout
	}
	if l.PoolSize <= 0 {
		l.PoolSize = min(max(2, runtime.GOMAXPROCS(0)), e.opts.MaxPoolSize)
	}
	if l.PoolSize > e.opts.MaxPoolSize {
		warn = append(warn, fmt.Sprintf("pool size %d clamped to the hub maximum of %d", l.PoolSize, e.opts.MaxPoolSize))
		l.PoolSize = e.opts.MaxPoolSize
	}
	return l, warn
}

// Load compiles and validates a module: it instantiates it once, checks the exports
// required by spec.Type, reads the optional ABI version and lets the optional
// validate_config export accept or reject spec.Config. Every failure is a *LoadError
// and leaves nothing allocated behind.
func (e *Engine) Load(ctx context.Context, spec ModuleSpec) (*Module, error) {
	name := spec.Name
	if name == "" {
		return nil, loadErr(name, ReasonInvalidSpec, nil, "name is empty")
	}
	required := abi.RequiredExports(spec.Type)
	if required == nil {
		return nil, loadErr(name, ReasonInvalidSpec, nil, "spec.type %q is not one of Prioritizer, CSRApproval, FeedbackExtractor, AddOnTemplate, ManifestTransformer", spec.Type)
	}
	if len(spec.Config) > 0 && !json.Valid(spec.Config) {
		return nil, loadErr(name, ReasonInvalidSpec, nil, "spec.pluginConfig is not valid JSON")
	}
	switch spec.FailurePolicy {
	case "":
		spec.FailurePolicy = FailurePolicyFail
	case FailurePolicyFail, FailurePolicyIgnore:
	default:
		return nil, loadErr(name, ReasonInvalidSpec, nil, "spec.failurePolicy %q is not Fail or Ignore", spec.FailurePolicy)
	}
	if len(spec.Wasm) > e.opts.MaxModuleBytes {
		return nil, loadErr(name, ReasonTooLarge, nil, "module is %d bytes, above the limit of %d bytes", len(spec.Wasm), e.opts.MaxModuleBytes)
	}
	if len(spec.Wasm) == 0 {
		return nil, loadErr(name, ReasonInvalidModule, nil, "module is empty")
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, loadErr(name, ReasonInvalidModule, nil, "engine is closed")
	}

	digest := Digest(spec.Wasm)
	if spec.SHA256 != "" && !strings.EqualFold(spec.SHA256, digest) {
		return nil, loadErr(name, ReasonDigestMismatch, nil, "spec.sha256 is %s but the module's sha256 is %s", spec.SHA256, digest)
	}
	start := time.Now()
	limits, warnings := e.effectiveLimits(spec.Limits)
	m := &Module{
		engine:        e,
		name:          name,
		typ:           spec.Type,
		digest:        digest,
		size:          len(spec.Wasm),
		limits:        limits,
		failurePolicy: spec.FailurePolicy,
		deterministic: spec.Deterministic,
		logger:        newGuestLogger(e.log, name, e.guestLevel, e.opts.GuestLogPerSecond, e.opts.GuestLogBurst),
		idle:          make(chan *instance, limits.PoolSize),
		slots:         make(chan struct{}, limits.PoolSize),
		abiVersion:    1,
	}
	// What runs is the instrumented module; Digest and spec.sha256 are the original's.
	code, hostFuncs, fallback := spec.Wasm, []extism.HostFunction(nil), error(nil)
	switch instrumented, err := e.instrument(spec.Wasm); {
	case errors.Is(err, errReservedImport):
		return nil, loadErr(name, ReasonInvalidModule, err, "%v", err)
	case err != nil:
		fallback = err
		warnings = append(warnings, fmt.Sprintf("the module could not be instrumented with loop fuel (%v); "+
			"it runs with per-iteration deadline checks instead, which makes loops much slower", err))
	default:
		code, hostFuncs = instrumented, []extism.HostFunction{deadlineCheck(&m.aborted)}
	}
	m.warnings = warnings
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: code, Name: "main"}},
		// Zero disables Extism vars and caps HTTP bodies; with no AllowedHosts every
		// HTTP request is refused anyway.
		Memory: &extism.ManifestMemory{MaxVarBytes: 0, MaxHttpResponseBytes: 0},
	}
	if len(spec.Config) > 0 {
		manifest.Config = map[string]string{abi.ConfigKey: string(spec.Config)}
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: e.runtimeConfig(fallback != nil),
		// WASI is needed by Go, Rust-wasi and C guests for their runtime start-up;
		// instances get no preopened directories, env, args, or real stdin/stdout.
		EnableWasi: true,
	}, hostFuncs)
	if err != nil {
		return nil, loadErr(name, ReasonInvalidModule, err, "compiling: %v", err)
	}
	m.compiled = compiled
	m.highWater = limits.MemoryBytes / 4 * 3
	if err := m.validate(ctx, required, spec.Config); err != nil {
		_ = m.shutdown(context.WithoutCancel(ctx))
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = m.shutdown(context.WithoutCancel(ctx))
		return nil, loadErr(name, ReasonInvalidModule, nil, "engine is closed")
	}
	e.modules[m] = struct{}{}
	e.mu.Unlock()
	if fallback != nil {
		e.log.Info("wasm plugin not instrumented with loop fuel; its loops run with per-iteration deadline checks",
			"wasmPlugin", name, "digest", digest, "reason", fallback.Error())
	}
	e.log.V(1).Info("loaded wasm plugin", "wasmPlugin", name, "type", spec.Type, "digest", digest,
		"bytes", len(spec.Wasm), "abiVersion", m.abiVersion, "took", time.Since(start))
	return m, nil
}

// Close closes every module still open and releases the compilation cache.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	mods := make([]*Module, 0, len(e.modules))
	for m := range e.modules {
		mods = append(mods, m)
	}
	e.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close(ctx))
	}
	errs = append(errs, e.cache.Close(ctx))
	return errors.Join(errs...)
}

func (e *Engine) forget(m *Module) {
	e.mu.Lock()
	delete(e.modules, m)
	e.mu.Unlock()
}

// newModuleConfig is the WASI view of one instance: nothing from the host but clocks and
// randomness (Go's runtime needs both to start), stderr captured for trap messages, and
// stdin and stdout carrying the calls' input and output under the bulk transport
// (abi.ExportStdio).
func newModuleConfig(stderr *headBuffer, stdin *stdioInput, stdout *stdioOutput, deterministic bool) wazero.ModuleConfig {
	c := wazero.NewModuleConfig().WithStderr(stderr).WithStdin(stdin).WithStdout(stdout)
	if deterministic {
		return c // wazero's defaults: fake clocks and a seeded random source
	}
	return c.WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
}
