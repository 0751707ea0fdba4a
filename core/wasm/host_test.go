package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"

	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasm/wasmtest"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// newEngine returns an engine whose compiled code is cached on disk across test runs
// (the misbehave guest takes seconds to compile cold).
func newEngine(t *testing.T, opts wasm.EngineOptions) *wasm.Engine {
	t.Helper()
	if opts.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		opts.CacheDir = filepath.Join(dir, "flotilla", "wasm-test-compile")
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = testr.New(t)
	}
	e, err := wasm.NewEngine(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// loopWatcher is a logger that also reports when a guest's "loop" export is running.
func loopWatcher(t *testing.T) (logr.Logger, <-chan struct{}) {
	started := make(chan struct{}, 16)
	log := funcr.New(func(prefix, args string) {
		t.Log(prefix, args)
		if strings.Contains(args, "loop started") {
			started <- struct{}{}
		}
	}, funcr.Options{Verbosity: 1})
	return log, started
}

func load(t *testing.T, e *wasm.Engine, spec wasm.ModuleSpec) *wasm.Module {
	t.Helper()
	if spec.Name == "" {
		spec.Name = "test-plugin"
	}
	if spec.Type == "" {
		spec.Type = abi.TypePrioritizer
	}
	if spec.Wasm == nil {
		spec.Wasm = wasmtest.Misbehave(t, wasmtest.V1)
	}
	m, err := e.Load(context.Background(), spec)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func call(t *testing.T, m *wasm.Module, export, input string) string {
	t.Helper()
	out, err := m.Call(context.Background(), export, []byte(input))
	if err != nil {
		t.Fatalf("Call(%s): %v", export, err)
	}
	return string(out)
}

func wantCallError(t *testing.T, err error, kind wasm.CallErrorKind, plugin string, contains ...string) *wasm.CallError {
	t.Helper()
	var ce *wasm.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CallError of kind %s, got %T: %v", kind, err, err)
	}
	if ce.Kind != kind {
		t.Fatalf("want kind %s, got %s: %v", kind, ce.Kind, err)
	}
	msg := err.Error()
	for _, s := range append([]string{plugin}, contains...) {
		if !strings.Contains(msg, s) {
			t.Fatalf("error %q does not mention %q", msg, s)
		}
	}
	return ce
}

func TestLoadReportsModuleFacts(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	bin := wasmtest.Misbehave(t, wasmtest.V1)
	m := load(t, e, wasm.ModuleSpec{Name: "facts", Wasm: bin, SHA256: strings.ToUpper(wasm.Digest(bin))})
	if m.Name() != "facts" || m.Type() != abi.TypePrioritizer {
		t.Fatalf("name/type = %s/%s", m.Name(), m.Type())
	}
	if m.Digest() != wasm.Digest(bin) || len(m.Digest()) != 64 {
		t.Fatalf("digest %q, want %q", m.Digest(), wasm.Digest(bin))
	}
	if m.Size() != len(bin) || m.ABIVersion() != 1 || m.FailurePolicy() != wasm.FailurePolicyFail {
		t.Fatalf("size %d abi %d policy %s", m.Size(), m.ABIVersion(), m.FailurePolicy())
	}
	if got := call(t, m, "echo", "hello"); got != "hello" {
		t.Fatalf("echo = %q", got)
	}
}

func TestPluginConfigIsExposedUnderConfigKey(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "with-config", Config: []byte(`{"weights":{"cpu":2}}`)})
	if got := call(t, m, "config", ""); got != `{"weights":{"cpu":2}}` {
		t.Fatalf("config = %q", got)
	}
	bare := load(t, e, wasm.ModuleSpec{Name: "no-config"})
	if got := call(t, bare, "config", ""); got != "" {
		t.Fatalf("config without pluginConfig = %q, want empty", got)
	}
}

func TestLoopingGuestTimesOutWhileOtherCallsAreServed(t *testing.T) {
	log, started := loopWatcher(t)
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	const timeout = 500 * time.Millisecond
	m := load(t, e, wasm.ModuleSpec{Name: "looper", Limits: wasm.Limits{CallTimeout: timeout, PoolSize: 3}})
	var looping atomic.Bool
	looping.Store(true)
	loopErr := make(chan error, 1)
	var elapsed time.Duration
	go func() {
		start := time.Now()
		_, err := m.Call(context.Background(), "loop", nil)
		elapsed = time.Since(start)
		looping.Store(false)
		loopErr <- err
	}()
	<-started
	servedDuringLoop := 0
	for i := 0; i < 20; i++ {
		if got := call(t, m, "echo", fmt.Sprint(i)); got != fmt.Sprint(i) {
			t.Fatalf("echo %d = %q", i, got)
		}
		if looping.Load() {
			servedDuringLoop++
		}
	}
	if servedDuringLoop == 0 {
		t.Fatalf("no call was served while the looping call was running")
	}
	err := <-loopErr
	wantCallError(t, err, wasm.KindTimeout, "looper", "loop", timeout.String())
	// Generous bound: the deadline must actually stop the guest (not merely the caller).
	if elapsed < timeout || elapsed > timeout+5*time.Second {
		t.Fatalf("looping call returned after %s, want about %s", elapsed, timeout)
	}
	if got := call(t, m, "echo", "after"); got != "after" {
		t.Fatalf("echo after timeout = %q", got)
	}
}

func TestCallerCancellationIsNotATimeout(t *testing.T) {
	log, started := loopWatcher(t)
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	m := load(t, e, wasm.ModuleSpec{Name: "cancel", Limits: wasm.Limits{CallTimeout: 20 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := m.Call(ctx, "loop", nil)
	wantCallError(t, err, wasm.KindCanceled, "cancel")
}

func TestMemoryBombFailsCleanly(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "bomber", Limits: wasm.Limits{MemoryBytes: 48 << 20, PoolSize: 1}})
	_, err := m.Call(context.Background(), "bomb", nil)
	wantCallError(t, err, wasm.KindMemoryLimit, "bomber", "bomb", fmt.Sprint(48<<20))
	if got := call(t, m, "calls", ""); got != "1" {
		t.Fatalf("after a memory bomb the next call should run on a fresh instance, calls = %q", got)
	}
}

func TestTrapDiscardsTheInstance(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "trapper", Limits: wasm.Limits{PoolSize: 1}})
	call(t, m, "calls", "")
	if got := call(t, m, "calls", ""); got != "2" {
		t.Fatalf("a healthy instance should be reused, calls = %q", got)
	}
	_, err := m.Call(context.Background(), "panic", nil)
	wantCallError(t, err, wasm.KindTrap, "trapper", "boom from guest")
	if got := call(t, m, "calls", ""); got != "1" {
		t.Fatalf("the trapped instance should be discarded, calls = %q", got)
	}
}

func TestGuestErrorsAreReportedWithTheGuestsText(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "failer"})
	_, err := m.Call(context.Background(), "fail", nil)
	ce := wantCallError(t, err, wasm.KindGuestError, "failer", "nope: input rejected by guest")
	if ce.Export != "fail" {
		t.Fatalf("export = %q", ce.Export)
	}
	_, err = m.Call(context.Background(), "silentfail", nil)
	wantCallError(t, err, wasm.KindGuestError, "failer", "code 7")
	_, err = m.Call(context.Background(), "no_such_export", nil)
	wantCallError(t, err, wasm.KindUnknownExport, "failer", "no_such_export")
}

func TestGarbageOutputIsAnErrorNamingThePlugin(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "garbler"})
	var out struct {
		Approved bool `json:"approved"`
	}
	err := m.CallJSON(context.Background(), "garbage", map[string]string{}, &out)
	wantCallError(t, err, wasm.KindInvalidOutput, "garbler", "export garbage", "not a valid JSON")

	err = wasm.DecodeJSONOutput("garbler", "review_csr", []byte(`{"approved":true,"extra":1}`), &out)
	wantCallError(t, err, wasm.KindInvalidOutput, "garbler", "review_csr", `unknown field "extra"`)
	err = wasm.DecodeJSONOutput("garbler", "review_csr", []byte(`{"approved":true} {}`), &out)
	wantCallError(t, err, wasm.KindInvalidOutput, "garbler", "trailing data")
	err = wasm.DecodeJSONOutput("garbler", "review_csr", nil, &out)
	wantCallError(t, err, wasm.KindInvalidOutput, "garbler", "empty")
	if err := wasm.DecodeJSONOutput("garbler", "review_csr", []byte(`{"approved":true}`), &out); err != nil || !out.Approved {
		t.Fatalf("valid output: %v %+v", err, out)
	}
}

func TestLoadFailuresCarryTheirReason(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{MaxModuleBytes: 4 << 20})
	v1 := wasmtest.Misbehave(t, wasmtest.V1)
	abi99 := wasmtest.Misbehave(t, wasmtest.Variant{Version: "v1", ABIVersion: "99"})
	cases := []struct {
		name     string
		spec     wasm.ModuleSpec
		reason   wasm.LoadReason
		contains string
	}{
		{"missing export", wasm.ModuleSpec{Type: abi.TypeCSRApproval, Wasm: v1}, wasm.ReasonMissingExport, "review_csr"},
		{"rejected config", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, Config: []byte(`{"reject":true}`)}, wasm.ReasonConfigRejected, "config rejected: field reject is set"},
		{"config validation hangs", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, Config: []byte(`{"hang":true}`), Limits: wasm.Limits{CallTimeout: 200 * time.Millisecond}}, wasm.ReasonConfigRejected, "call timeout"},
		{"digest mismatch", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, SHA256: strings.Repeat("ab", 32)}, wasm.ReasonDigestMismatch, wasm.Digest(v1)},
		{"too large", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: make([]byte, 5<<20)}, wasm.ReasonTooLarge, "above the limit"},
		{"not wasm", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: []byte("definitely not wasm")}, wasm.ReasonInvalidModule, "compiling"},
		{"empty", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: []byte{}}, wasm.ReasonInvalidModule, "empty"},
		{"future abi", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: abi99}, wasm.ReasonInvalidModule, "ABI version 99"},
		{"config not json", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, Config: []byte(`{`)}, wasm.ReasonInvalidSpec, "pluginConfig"},
		{"unknown type", wasm.ModuleSpec{Type: "Scheduler", Wasm: v1}, wasm.ReasonInvalidSpec, "spec.type"},
		{"bad failure policy", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, FailurePolicy: "Retry"}, wasm.ReasonInvalidSpec, "failurePolicy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name = "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			m, err := e.Load(context.Background(), tc.spec)
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatalf("Load succeeded, want %s", tc.reason)
			}
			var le *wasm.LoadError
			if !errors.As(err, &le) || le.Reason != tc.reason {
				t.Fatalf("want LoadError %s, got %v", tc.reason, err)
			}
			if wasm.LoadReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.spec.Name) || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %q should name the plugin and mention %q", err, tc.contains)
			}
		})
	}
}

func TestLimitsAreClampedToEngineMaxima(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{MaxMemoryBytes: 96 << 20, MaxCallTimeout: time.Second, MaxPoolSize: 2})
	m := load(t, e, wasm.ModuleSpec{Name: "greedy", Limits: wasm.Limits{MemoryBytes: 1 << 30, CallTimeout: time.Hour, PoolSize: 50}})
	l := m.Limits()
	if l.MemoryBytes != 96<<20 || l.CallTimeout != time.Second || l.PoolSize != 2 {
		t.Fatalf("limits not clamped: %+v", l)
	}
	if w := strings.Join(m.Warnings(), "; "); !strings.Contains(w, "limits.memory") || !strings.Contains(w, "limits.timeout") {
		t.Fatalf("warnings %q should describe both clamps", w)
	}
	d := load(t, e, wasm.ModuleSpec{Name: "defaults"})
	if d.Limits().MemoryBytes != 64<<20 || d.Limits().CallTimeout != time.Second || len(d.Warnings()) != 0 {
		t.Fatalf("defaults: %+v %v", d.Limits(), d.Warnings())
	}
}

func TestInstanceIsRecycledPastTheMemoryHighWaterMark(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "grower", Limits: wasm.Limits{MemoryBytes: 64 << 20, PoolSize: 1}})
	call(t, m, "calls", "")
	if got := call(t, m, "calls", ""); got != "2" {
		t.Fatalf("calls = %q", got)
	}
	call(t, m, "grow", "52") // keeps 52 MiB live: past 3/4 of 64 MiB
	if got := call(t, m, "calls", ""); got != "1" {
		t.Fatalf("an instance past the high-water mark should be recycled, calls = %q", got)
	}
}

func TestHundredConcurrentCalls(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "busy", Limits: wasm.Limits{PoolSize: 4, CallTimeout: 20 * time.Second}})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := fmt.Sprintf("cluster-%03d", i)
			out, err := m.Call(context.Background(), abi.ExportScore, []byte(in))
			if err != nil {
				errs <- err
				return
			}
			if string(out) != "v1:"+in {
				errs <- fmt.Errorf("call %d: got %q, want %q", i, out, "v1:"+in)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCloseWaitsForInFlightCalls(t *testing.T) {
	log, started := loopWatcher(t)
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	m := load(t, e, wasm.ModuleSpec{Name: "closing", Limits: wasm.Limits{CallTimeout: 300 * time.Millisecond}})
	res := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "loop", nil)
		res <- err
	}()
	<-started
	if err := m.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-res:
		wantCallError(t, err, wasm.KindTimeout, "closing")
	default:
		t.Fatalf("Close returned before the in-flight call finished")
	}
	_, err := m.Call(context.Background(), "echo", nil)
	wantCallError(t, err, wasm.KindClosed, "closing")
}

func TestCloseWithExpiredContextAbortsRunningCalls(t *testing.T) {
	log, started := loopWatcher(t)
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	m := load(t, e, wasm.ModuleSpec{Name: "aborted", Limits: wasm.Limits{CallTimeout: 20 * time.Second}})
	res := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "loop", nil)
		res <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantCallError(t, <-res, wasm.KindClosed, "aborted")
}

func TestDiskCacheIsPopulated(t *testing.T) {
	dir := t.TempDir()
	e := newEngine(t, wasm.EngineOptions{CacheDir: dir})
	load(t, e, wasm.ModuleSpec{Name: "cached"})
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache dir %s is empty after a load (err %v)", dir, err)
	}
	// A second engine (a restarted hub) loads from the same directory.
	e2 := newEngine(t, wasm.EngineOptions{CacheDir: dir})
	m := load(t, e2, wasm.ModuleSpec{Name: "cached"})
	if got := call(t, m, "version", ""); got != "v1" {
		t.Fatalf("version = %q", got)
	}
}

func TestEngineCloseClosesModules(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m, err := e.Load(context.Background(), wasm.ModuleSpec{Name: "orphan", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.V1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatalf("Engine.Close: %v", err)
	}
	_, err = m.Call(context.Background(), "echo", nil)
	wantCallError(t, err, wasm.KindClosed, "orphan")
	_, err = e.Load(context.Background(), wasm.ModuleSpec{Name: "late", Type: abi.TypePrioritizer, Wasm: wasmtest.Misbehave(t, wasmtest.V1)})
	if wasm.LoadReasonOf(err) == "" || !strings.Contains(err.Error(), "engine is closed") {
		t.Fatalf("Load after Close: %v", err)
	}
}

func TestNewEngineRejectsBadOptions(t *testing.T) {
	if _, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{GuestLogLevel: "loud"}); err == nil || !strings.Contains(err.Error(), "GuestLogLevel") {
		t.Fatalf("bad log level: %v", err)
	}
	if _, err := wasm.NewEngine(context.Background(), wasm.EngineOptions{MaxMemoryBytes: 1024}); err == nil || !strings.Contains(err.Error(), "MaxMemoryBytes") {
		t.Fatalf("tiny memory: %v", err)
	}
}
