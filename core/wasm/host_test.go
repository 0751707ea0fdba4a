package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
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

// loopWatcher is a logger that also reports when a guest's "loop" export is running,
// and passes every line (funcr's key/value text) to the optional also.
func loopWatcher(t *testing.T, also ...func(args string)) (logr.Logger, <-chan struct{}) {
	started := make(chan struct{}, 16)
	log := funcr.New(func(prefix, args string) {
		t.Log(prefix, args)
		if strings.Contains(args, "loop started") {
			started <- struct{}{}
		}
		for _, f := range also {
			f(args)
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
	// The host logger runs in the calling goroutine, so holding the looping call's "loop
	// started" line keeps that call in flight until the other calls are done: they are
	// served while it runs whatever the scheduling (a fresh instance for them can take
	// longer than the timeout on a loaded machine). Released, the guest spins until its
	// deadline stops it.
	var startedOnce sync.Once
	started, resume := make(chan struct{}), make(chan struct{})
	log := funcr.New(func(prefix, args string) {
		t.Log(prefix, args)
		if strings.Contains(args, "loop started") {
			startedOnce.Do(func() { close(started) })
			<-resume
		}
	}, funcr.Options{Verbosity: 1})
	var resumeOnce sync.Once
	release := func() { resumeOnce.Do(func() { close(resume) }) }
	defer release() // before the cleanups, whose Close waits for the looping call

	e := newEngine(t, wasm.EngineOptions{Logger: log})
	const timeout = 2 * time.Second // not shorter: it also bounds the guest's start-up at Load
	m := load(t, e, wasm.ModuleSpec{Name: "looper", Limits: wasm.Limits{CallTimeout: timeout, PoolSize: 3}})
	loopErr := make(chan error, 1)
	var loopStart, loopEnd time.Time
	go func() {
		loopStart = time.Now()
		_, err := m.Call(context.Background(), "loop", nil)
		loopEnd = time.Now()
		loopErr <- err
	}()
	<-started
	served := make(chan error, 1)
	go func() {
		for i := range 20 {
			out, err := m.Call(context.Background(), "echo", []byte(fmt.Sprint(i)))
			if err != nil || string(out) != fmt.Sprint(i) {
				served <- fmt.Errorf("echo %d = %q, %v", i, out, err)
				return
			}
		}
		served <- nil
	}()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // only when calls wait for the looping one
		t.Fatalf("no call was served while the looping call was in flight")
	}
	released := time.Now()
	release()
	err := <-loopErr
	wantCallError(t, err, wasm.KindTimeout, "looper", "loop", timeout.String())
	// Generous bound: the deadline must actually stop the guest (not merely the caller),
	// at the deadline or as soon as it is released after it.
	deadline := loopStart.Add(timeout)
	if loopEnd.Before(deadline) {
		t.Fatalf("looping call returned after %s, before its %s deadline", loopEnd.Sub(loopStart), timeout)
	}
	stop := deadline
	if released.After(stop) {
		stop = released
	}
	if loopEnd.After(stop.Add(5 * time.Second)) {
		t.Fatalf("looping call returned %s after its deadline (released %s after it started)", loopEnd.Sub(deadline), released.Sub(loopStart))
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
	// A long timeout: a starved machine must not turn the memory limit into a Timeout.
	m := load(t, e, wasm.ModuleSpec{Name: "bomber", Limits: wasm.Limits{MemoryBytes: 48 << 20, PoolSize: 1, CallTimeout: 20 * time.Second}})
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
		{"missing transform_manifest", wasm.ModuleSpec{Type: abi.TypeManifestTransformer, Wasm: wasmtest.CSR(t)}, wasm.ReasonMissingExport, "transform_manifest"},
		{"rejected config", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, Config: []byte(`{"reject":true}`)}, wasm.ReasonConfigRejected, "config rejected: field reject is set"},
		// The timeout also bounds the guest runtime's start-up (the first call), which can take a
		// few hundred milliseconds on a loaded machine.
		{"config validation hangs", wasm.ModuleSpec{Type: abi.TypePrioritizer, Wasm: v1, Config: []byte(`{"hang":true}`), Limits: wasm.Limits{CallTimeout: 2 * time.Second}}, wasm.ReasonConfigRejected, "call timeout"},
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

func TestDefaultEngineLimits(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{}) // newEngine sets only CacheDir and Logger
	if o := e.Options(); o.MaxMemoryBytes != wasm.DefaultMaxMemoryBytes || o.MaxCallTimeout != wasm.DefaultMaxCallTimeout ||
		o.MaxPoolSize != wasm.DefaultMaxPoolSize || o.MaxModuleBytes != wasm.DefaultMaxModuleBytes {
		t.Fatalf("default engine options: %+v", o)
	}
	maxima := wasm.Limits{MemoryBytes: wasm.DefaultMaxMemoryBytes, CallTimeout: wasm.DefaultMaxCallTimeout, PoolSize: wasm.DefaultMaxPoolSize}
	atMax := load(t, e, wasm.ModuleSpec{Name: "at-max", Limits: maxima})
	if atMax.Limits() != maxima || len(atMax.Warnings()) != 0 {
		t.Fatalf("limits at the hub maxima: %+v %v, want %+v unchanged", atMax.Limits(), atMax.Warnings(), maxima)
	}
	greedy := load(t, e, wasm.ModuleSpec{Name: "greedy", Limits: wasm.Limits{
		MemoryBytes: wasm.DefaultMaxMemoryBytes + 1, CallTimeout: wasm.DefaultMaxCallTimeout + 1, PoolSize: wasm.DefaultMaxPoolSize + 1}})
	if greedy.Limits() != maxima {
		t.Fatalf("limits above the hub maxima: %+v, want clamped to %+v", greedy.Limits(), maxima)
	}
	if w := strings.Join(greedy.Warnings(), "; "); !strings.Contains(w, "limits.memory") || !strings.Contains(w, "limits.timeout") || !strings.Contains(w, "pool size") {
		t.Fatalf("warnings %q should describe the three clamps", w)
	}

	// The default pool size is GOMAXPROCS, at least 2 and at most the hub maximum.
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	for _, tc := range []struct{ procs, pool int }{{1, 2}, {5, 5}, {wasm.DefaultMaxPoolSize + 8, wasm.DefaultMaxPoolSize}} {
		runtime.GOMAXPROCS(tc.procs)
		d := load(t, e, wasm.ModuleSpec{Name: fmt.Sprintf("defaults-%d", tc.procs)})
		want := wasm.Limits{MemoryBytes: wasm.DefaultMemoryBytes, CallTimeout: wasm.DefaultCallTimeout, PoolSize: tc.pool}
		if d.Limits() != want || len(d.Warnings()) != 0 {
			t.Fatalf("default limits with GOMAXPROCS=%d: %+v %v, want %+v", tc.procs, d.Limits(), d.Warnings(), want)
		}
	}
	runtime.GOMAXPROCS(procs)

	d := load(t, e, wasm.ModuleSpec{Name: "defaults"})
	start := time.Now()
	_, err := d.Call(context.Background(), "loop", nil)
	wantCallError(t, err, wasm.KindTimeout, "defaults", "loop", "within the "+wasm.DefaultCallTimeout.String()+" call timeout")
	// Generous upper bound, far below the 30s hub maximum: the default deadline stops the guest.
	if elapsed := time.Since(start); elapsed < wasm.DefaultCallTimeout || elapsed > wasm.DefaultCallTimeout+10*time.Second {
		t.Fatalf("the looping call timed out after %s, want about the default %s", elapsed, wasm.DefaultCallTimeout)
	}
}

func TestPoolSizeBoundsConcurrentCalls(t *testing.T) {
	log, started := loopWatcher(t)
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	m := load(t, e, wasm.ModuleSpec{Name: "pooled", Limits: wasm.Limits{PoolSize: 2, CallTimeout: 20 * time.Second}})
	loopCtx, stopLoops := context.WithCancel(context.Background())
	defer stopLoops()
	loopErrs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := m.Call(loopCtx, "loop", nil)
			loopErrs <- err
		}()
	}
	<-started
	<-started
	// Both instances are busy: a third call waits for one, until its own context ends.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := m.Call(ctx, "echo", []byte("third"))
	wantCallError(t, err, wasm.KindCanceled, "pooled", "echo", "waiting for a free instance (pool size 2)", "deadline exceeded")
	stopLoops()
	for range 2 {
		wantCallError(t, <-loopErrs, wasm.KindCanceled, "pooled", "loop")
	}
	if got := call(t, m, "echo", "after"); got != "after" {
		t.Fatalf("echo after the loops ended = %q", got)
	}
}

// TestSandboxRefusesEveryWayOut backs PLUGINS.md: a guest gets no filesystem, network,
// environment, arguments or Extism vars. Each attempt is made by the guest's "escape"
// export; a host that opened the corresponding door would let it succeed.
func TestSandboxRefusesEveryWayOut(t *testing.T) {
	const secret = "host secret 7f3a"
	secretFile := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOTILLA_SANDBOX_PROBE", secret)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte(secret))
	}))
	defer srv.Close()

	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "escaper"})
	output := func(want string) func(*testing.T, string, error) {
		return func(t *testing.T, out string, err error) {
			if err != nil || out != want {
				t.Fatalf("guest saw %q (error %v), want %q", out, err, want)
			}
		}
	}
	failedIO := func(t *testing.T, out string, err error) {
		if err != nil || !strings.HasPrefix(out, "error ") || strings.Contains(out, secret) {
			t.Fatalf("guest saw %q (call error %v), want an I/O error", out, err)
		}
	}
	trapped := func(contains string) func(*testing.T, string, error) {
		return func(t *testing.T, out string, err error) {
			if err == nil {
				t.Fatalf("the call succeeded with %q, want a trap", out)
			}
			wantCallError(t, err, wasm.KindTrap, "escaper", "escape", contains)
		}
	}
	for _, tc := range []struct {
		name, attempt string
		check         func(t *testing.T, out string, err error)
	}{
		{"read a host file", "read " + secretFile, failedIO},
		{"list the root directory", "readdir /", failedIO},
		{"list the working directory", "readdir .", failedIO},
		{"list the environment", "environ", output(`environ(0) ""`)},
		{"read a host variable", "getenv FLOTILLA_SANDBOX_PROBE", output(`set=false value=""`)},
		{"read the arguments", "args", output(`args(0) ""`)},
		{"send an HTTP request", "http " + srv.URL + "/leak", trapped("HTTP request to '" + srv.URL + "/leak' is not allowed")},
		{"use Extism vars", "vars", trapped("Vars are disabled by this host")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := m.Call(context.Background(), "escape", []byte(tc.attempt))
			t.Logf("%s: output %q, error %v", tc.attempt, out, err)
			tc.check(t, string(out), err)
		})
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the guest's HTTP request reached the server (%d requests)", n)
	}
}

func TestInstanceIsRecycledPastTheMemoryHighWaterMark(t *testing.T) {
	e := newEngine(t, wasm.EngineOptions{})
	m := load(t, e, wasm.ModuleSpec{Name: "grower", Limits: wasm.Limits{MemoryBytes: 64 << 20, PoolSize: 1, CallTimeout: 20 * time.Second}})
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
	// Call logs a failure before it releases the call, and Close returns only after every
	// release: the looping call's failure line must be logged by the time Close returns.
	// The looping call ends only when the test cancels it, after Close has begun waiting,
	// so the test does not depend on timing (a short call timeout could expire before
	// Close is even called on a loaded machine, or fail the load itself).
	var loopFailed atomic.Bool
	log, started := loopWatcher(t, func(args string) {
		if strings.Contains(args, `"msg"="wasm plugin call failed"`) && strings.Contains(args, `"wasmPlugin"="closing"`) &&
			strings.Contains(args, `"export"="loop"`) && strings.Contains(args, `"kind"="Canceled"`) {
			loopFailed.Store(true)
		}
	})
	e := newEngine(t, wasm.EngineOptions{Logger: log})
	m := load(t, e, wasm.ModuleSpec{Name: "closing", Limits: wasm.Limits{CallTimeout: 20 * time.Second, PoolSize: 2}})
	loopCtx, stopLoop := context.WithCancel(context.Background())
	defer stopLoop()
	res := make(chan error, 1)
	go func() {
		_, err := m.Call(loopCtx, "loop", nil)
		res <- err
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- m.Close(context.Background()) }()
	// Close refuses new calls before it waits: once a call is refused, Close has begun
	// and the looping call is still running (nothing can end it but stopLoop).
	for {
		_, err := m.Call(context.Background(), "echo", nil)
		if wasm.CallErrorKindOf(err) == wasm.KindClosed {
			break
		}
		if err != nil {
			t.Fatalf("echo while Close was starting: %v (want success, then Closed)", err)
		}
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a call was running", err)
	default:
	}
	stopLoop()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !loopFailed.Load() {
		t.Fatalf("Close returned before the in-flight call finished")
	}
	wantCallError(t, <-res, wasm.KindCanceled, "closing", "loop")
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
