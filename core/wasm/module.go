package wasm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Module is a loaded, validated plugin. Call is safe for concurrent use; concurrency is
// bounded by the pool size (callers beyond it wait for a free instance or their context).
type Module struct {
	engine        *Engine
	name          string
	typ           abi.PluginType
	digest        string
	size          int
	abiVersion    int
	limits        Limits
	warnings      []string
	failurePolicy FailurePolicy
	deterministic bool
	highWater     uint64
	hasABIExport  bool
	// stdio: the module accepts the bulk transport (abi.ExportStdio).
	stdio bool
	// declared is what a FeedbackExtractor's declare_resources answered at load (declare.go).
	declared *abi.FeedbackResources

	compiled *extism.CompiledPlugin
	logger   *guestLogger

	// slots bounds live instances: a call holds a slot while it owns an instance, and
	// instances are only created while idle is empty, so live instances <= PoolSize.
	slots chan struct{}
	idle  chan *instance

	mu       sync.Mutex
	closed   bool
	pins     int // Registry.Acquire leases; a pinned module keeps serving while draining
	inflight sync.WaitGroup
	// aborted is set when Close gave up waiting and closed the runtime under running
	// calls; their results are meaningless (wazero reports a clean exit).
	aborted atomic.Bool
}

// Name is the WasmPlugin name.
func (m *Module) Name() string { return m.name }

// Type is the extension point the module was validated for.
func (m *Module) Type() abi.PluginType { return m.typ }

// Digest is the hex sha256 of the uncompressed module.
func (m *Module) Digest() string { return m.digest }

// Size is the uncompressed module size in bytes.
func (m *Module) Size() int { return m.size }

// ABIVersion is what the module's flotilla_abi_version export returned (1 when absent).
func (m *Module) ABIVersion() int { return m.abiVersion }

// Limits are the effective limits after defaults and clamping.
func (m *Module) Limits() Limits { return m.limits }

// Warnings describes limits that were clamped to the engine maxima, and a module that
// could not be instrumented with loop fuel (so its loops run slower).
func (m *Module) Warnings() []string { return slices.Clone(m.warnings) }

// Deterministic reports whether instances run without host clocks and entropy.
func (m *Module) Deterministic() bool { return m.deterministic }

// FailurePolicy is the policy given in the ModuleSpec (Fail when unset).
func (m *Module) FailurePolicy() FailurePolicy { return m.failurePolicy }

// instance is one Extism plugin instance with its own memory budget and stderr tail.
type instance struct {
	plugin *extism.Plugin
	budget *memoryBudget
	stderr *headBuffer
	stdin  *stdioInput
	stdout *stdioOutput
	header []byte
}

func (in *instance) close(ctx context.Context) { _ = in.plugin.Close(ctx) }

func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	budget := newMemoryBudget(m.limits.MemoryBytes)
	stderr := newHeadBuffer(1024)
	stdin, stdout := &stdioInput{}, &stdioOutput{max: math.MaxInt32}
	if m.limits.MemoryBytes > 0 && m.limits.MemoryBytes < math.MaxInt32 {
		stdout.max = int(m.limits.MemoryBytes)
	}
	// wazero reads the allocator from the instantiation context; both the Extism kernel
	// and the guest draw from the same budget.
	ictx := experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(budget.Allocate))
	// A wasm start function runs here, outside any Extism call, and Extism's wrapper
	// refuses host calls without a plugin in the context: give deadlineCheck (which
	// needs none) one, so such a function may run past its fuel.
	ictx = context.WithValue(ictx, extism.PluginCtxKey("plugin"), (*extism.Plugin)(nil))
	p, err := m.compiled.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: newModuleConfig(stderr, stdin, stdout, m.deterministic)})
	if err != nil {
		return nil, err
	}
	in := &instance{plugin: p, budget: budget, stderr: stderr, stdin: stdin, stdout: stdout}
	if budget.hit.Load() {
		in.close(ctx)
		return nil, fmt.Errorf("initial memory of %d bytes exceeds the memory limit of %d bytes", budget.Bytes(), m.limits.MemoryBytes)
	}
	p.SetLogger(m.logger.emit)
	if m.hasABIExport {
		// Calling a trivial export starts the guest's language runtime (Go's runtime
		// init takes milliseconds) now, so it does not eat into a real call's deadline.
		if _, err := m.callOn(ctx, in, abi.ExportABIVersion, nil); err != nil {
			return nil, fmt.Errorf("warming up: %w", err)
		}
	}
	return in, nil
}

// validate runs the load-time checks on a first instance, which then seeds the pool.
func (m *Module) validate(ctx context.Context, required []string, config []byte) error {
	in, err := m.newInstance(ctx)
	if err != nil {
		return loadErr(m.name, ReasonInvalidModule, err, "instantiating: %v", err)
	}
	var missing []string
	for _, exp := range required {
		if !in.plugin.FunctionExists(exp) {
			missing = append(missing, exp)
		}
	}
	if len(missing) > 0 {
		in.close(ctx)
		return loadErr(m.name, ReasonMissingExport, nil, "a %s plugin must export %s; missing: %s",
			m.typ, strings.Join(required, ", "), strings.Join(missing, ", "))
	}
	m.hasABIExport = in.plugin.FunctionExists(abi.ExportABIVersion)
	m.stdio = in.plugin.FunctionExists(abi.ExportStdio)
	if m.hasABIExport {
		out, err := m.callOn(ctx, in, abi.ExportABIVersion, nil)
		if err != nil {
			return loadErr(m.name, ReasonInvalidModule, err, "calling %s: %v", abi.ExportABIVersion, err)
		}
		v, perr := strconv.Atoi(strings.TrimSpace(string(out)))
		if perr != nil || v < 1 {
			in.close(ctx)
			return loadErr(m.name, ReasonInvalidModule, perr, "%s returned %q, want a positive decimal integer", abi.ExportABIVersion, truncate(out, 64))
		}
		if v > abi.Version {
			in.close(ctx)
			return loadErr(m.name, ReasonInvalidModule, nil, "module was built for ABI version %d; this host supports up to %d", v, abi.Version)
		}
		m.abiVersion = v
	}
	if in.plugin.FunctionExists(abi.ExportValidateConfig) {
		if _, err := m.callOn(ctx, in, abi.ExportValidateConfig, config); err != nil {
			var ce *CallError
			msg := err.Error()
			if errors.As(err, &ce) {
				msg = ce.Message
			}
			return loadErr(m.name, ReasonConfigRejected, err, "%s rejected spec.pluginConfig: %s", abi.ExportValidateConfig, msg)
		}
	}
	if err := m.declare(ctx, in); err != nil {
		return err
	}
	m.put(ctx, in)
	return nil
}

// acquire registers an in-flight call; false once Close has begun, unless a lease still
// pins the module (its holder may make further calls until it releases).
func (m *Module) acquire() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed && m.pins == 0 {
		return false
	}
	m.inflight.Add(1)
	return true
}

func (m *Module) release() { m.inflight.Done() }

// pin is acquire for a lease that spans several calls.
func (m *Module) pin() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.pins++
	m.inflight.Add(1)
	return true
}

func (m *Module) unpin() {
	m.mu.Lock()
	m.pins--
	m.mu.Unlock()
	m.inflight.Done()
}

// Call runs export with input on a pooled instance under the plugin's timeout and
// memory limit. The instance is discarded after any failure, so a trapped or
// half-written guest never serves another call.
func (m *Module) Call(ctx context.Context, export string, input []byte) ([]byte, error) {
	if !m.acquire() {
		return nil, &CallError{Plugin: m.name, Export: export, Kind: KindClosed, Message: "module was closed (replaced or removed)"}
	}
	defer m.release()
	out, err := m.call(ctx, export, input)
	if err != nil {
		// Before release, so it is logged by the time Close (which waits for release) returns.
		m.engine.log.V(1).Info("wasm plugin call failed", "wasmPlugin", m.name, "export", export, "kind", CallErrorKindOf(err))
	}
	return out, err
}

func (m *Module) call(ctx context.Context, export string, input []byte) ([]byte, error) {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &CallError{Plugin: m.name, Export: export, Kind: KindCanceled, Err: ctx.Err(),
			Message: fmt.Sprintf("waiting for a free instance (pool size %d): %v", m.limits.PoolSize, ctx.Err())}
	}
	defer func() { <-m.slots }()

	var in *instance
	select {
	case in = <-m.idle:
	default:
		var err error
		if in, err = m.newInstance(ctx); err != nil {
			return nil, &CallError{Plugin: m.name, Export: export, Kind: KindInstance, Err: err, Message: fmt.Sprintf("creating an instance: %v", err)}
		}
	}
	if !in.plugin.FunctionExists(export) {
		m.put(ctx, in)
		return nil, &CallError{Plugin: m.name, Export: export, Kind: KindUnknownExport, Message: "the module has no such export"}
	}
	out, err := m.callOn(ctx, in, export, input)
	if err == nil {
		m.put(ctx, in)
	}
	return out, err
}

// callOn calls export on in, which the caller owns. On failure in is closed and a
// *CallError returned; on success the caller decides whether to pool it.
func (m *Module) callOn(ctx context.Context, in *instance, export string, input []byte) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, m.limits.CallTimeout)
	defer cancel()
	in.budget.hit.Store(false)
	in.stderr.Reset()
	in.stdout.reset()
	if m.stdio {
		in.stdin.set(input)
		in.header = abi.AppendStdioHeader(in.header[:0], len(input))
		input = in.header
		defer in.stdin.set(nil)
	}
	rc, out, err := in.plugin.CallWithContext(cctx, export, input)
	if err == nil && rc == 0 && m.stdio {
		if n, ok := abi.ParseStdioHeader(out); ok {
			if out, ok = in.stdout.take(n); !ok {
				in.close(context.WithoutCancel(ctx))
				return nil, InvalidOutput(m.name, export, nil, "the output header announces %d bytes on stdout, the guest wrote %d", n, len(in.stdout.b))
			}
		}
	}
	if m.aborted.Load() {
		in.close(context.WithoutCancel(ctx))
		return nil, &CallError{Plugin: m.name, Export: export, Kind: KindClosed, Err: err, Message: "module was closed while the call was running"}
	}
	if err == nil && rc == 0 {
		return out, nil
	}
	ce := m.classify(ctx, cctx, in, export, rc, err)
	in.close(context.WithoutCancel(ctx))
	return nil, ce
}

func (m *Module) classify(ctx, cctx context.Context, in *instance, export string, rc uint32, err error) *CallError {
	ce := &CallError{Plugin: m.name, Export: export, Err: err}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	switch {
	case in.budget.hit.Load():
		ce.Kind = KindMemoryLimit
		ce.Message = fmt.Sprintf("the guest tried to grow its memory past the limit of %d bytes", m.limits.MemoryBytes)
	case ctx.Err() != nil && cctx.Err() != nil:
		ce.Kind = KindCanceled
		ce.Message = fmt.Sprintf("caller gave up: %v", ctx.Err())
	// A guest stopped at its deadline fails with deadlineCheck's panic (errInterrupted,
	// wrapped by wazero) or, not instrumented, with wazero's exit error; either way
	// cctx is done by then, so the context decides between the two kinds.
	case cctx.Err() != nil || (isExit && exit.ExitCode() == sys.ExitCodeDeadlineExceeded):
		ce.Kind = KindTimeout
		ce.Message = fmt.Sprintf("did not return within the %s call timeout", m.limits.CallTimeout)
	case isExit:
		ce.Kind = KindTrap
		ce.Message = fmt.Sprintf("the guest exited with code %d", exit.ExitCode())
	case err == nil:
		ce.Kind = KindGuestError
		ce.Message = fmt.Sprintf("returned code %d without an error message", rc)
	default:
		// Extism reports an error the guest set (error_set) as a plain error carrying
		// exactly that text; anything else came from the runtime: a trap.
		if guestMsg := in.plugin.GetErrorWithContext(context.WithoutCancel(ctx)); guestMsg != "" && guestMsg == err.Error() {
			ce.Kind = KindGuestError
			ce.Message = truncate([]byte(guestMsg), 1024)
		} else {
			ce.Kind = KindTrap
			ce.Message = firstLine(err.Error())
		}
	}
	if msg := in.stderr.Summary(); msg != "" && ce.Kind != KindGuestError {
		ce.Message += "; guest stderr: " + msg
	}
	return ce
}

// put returns a healthy instance to the pool, recycling it past the memory high-water
// mark (a Go guest's heap never shrinks) or when the module is shutting down.
func (m *Module) put(ctx context.Context, in *instance) {
	if in.budget.Bytes() > m.highWater {
		in.close(context.WithoutCancel(ctx))
		return
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		in.close(context.WithoutCancel(ctx))
		return
	}
	select {
	case m.idle <- in:
	default:
		in.close(context.WithoutCancel(ctx))
	}
}

// Close stops new calls, waits for in-flight ones (or ctx) and releases everything.
// When ctx ends first, running calls are aborted by closing the runtime under them.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.aborted.Store(true)
	}
	m.engine.forget(m)
	return m.shutdown(context.WithoutCancel(ctx))
}

func (m *Module) shutdown(ctx context.Context) error {
	for {
		select {
		case in := <-m.idle:
			in.close(ctx)
			continue
		default:
		}
		break
	}
	if err := m.compiled.Close(ctx); err != nil {
		return fmt.Errorf("wasm plugin %q: closing: %w", m.name, err)
	}
	return nil
}

// headBuffer keeps the first n bytes written to guest stderr: a panicking or aborting
// guest prints its reason first (Go's goroutine dump follows), and a guest cannot grow
// host memory by writing more.
type headBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newHeadBuffer(n int) *headBuffer { return &headBuffer{n: n} }

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.n - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Summary is the first paragraph written, trimmed: enough to say why the guest died.
func (h *headBuffer) Summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := string(h.buf)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func (h *headBuffer) Reset() {
	h.mu.Lock()
	h.buf = h.buf[:0]
	h.mu.Unlock()
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
