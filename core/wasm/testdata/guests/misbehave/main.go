// Command misbehave is a test plugin with one export per way a plugin can behave or
// misbehave. It declares the Prioritizer exports so it loads as that type.
package main

import (
	"bytes"
	crand "crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"flotilla.test/guests/internal/xt"
)

// Overridden with -ldflags -X to build distinct modules from one source.
var (
	version    = "v1"
	abiVersion = "1"
)

func main() {}

//go:wasmexport flotilla_abi_version
func flotillaABIVersion() int32 { xt.Output([]byte(abiVersion)); return 0 }

//go:wasmexport declare_inputs
func declareInputs() int32 { xt.Output([]byte("{}")); return 0 }

// score answers "<version>:<input>" so concurrent callers can check they got their own result.
//
//go:wasmexport score
func score() int32 { xt.Output(append([]byte(version+":"), xt.Input()...)); return 0 }

//go:wasmexport echo
func echo() int32 { xt.Output(xt.Input()); return 0 }

//go:wasmexport version
func versionExport() int32 { xt.Output([]byte(version)); return 0 }

//go:wasmexport config
func configExport() int32 { xt.Output(xt.Config("pluginConfig")); return 0 }

// validate_config rejects any config mentioning "reject" and never returns for one
// mentioning "hang".
//
//go:wasmexport validate_config
func validateConfig() int32 {
	in := xt.Input()
	if bytes.Contains(in, []byte("reject")) {
		return xt.Fail("config rejected: field reject is set")
	}
	for bytes.Contains(in, []byte("hang")) {
		sink++
	}
	return 0
}

var sink uint64

// loop logs "loop started" (so a test knows the call is inside the guest) and spins.
//
//go:wasmexport loop
func loop() int32 {
	xt.Info("loop started")
	for i := uint64(0); ; i++ {
		sink += i
	}
}

var hog [][]byte

//go:wasmexport bomb
func bomb() int32 {
	for {
		b := make([]byte, 1<<20)
		b[len(b)-1] = 1
		hog = append(hog, b)
	}
}

// grow keeps N MiB (N from input) alive, to push an instance past the high-water mark.
//
//go:wasmexport grow
func grow() int32 {
	n, err := strconv.Atoi(string(xt.Input()))
	if err != nil {
		return xt.Fail("grow: input is not a number")
	}
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		b[0] = 1
		hog = append(hog, b)
	}
	xt.Output([]byte(strconv.Itoa(len(hog))))
	return 0
}

// calls counts calls on this instance, to observe instance reuse and replacement.
var calls int

//go:wasmexport calls
func callsExport() int32 {
	calls++
	xt.Output([]byte(strconv.Itoa(calls)))
	return 0
}

//go:wasmexport panic
func panicExport() int32 { panic("boom from guest") }

// render_addon makes the module loadable as an AddOnTemplate that always traps.
//
//go:wasmexport render_addon
func renderAddon() int32 { panic("render_addon: boom from guest") }

//go:wasmexport garbage
func garbage() int32 { xt.Output([]byte("\x00\xffnot json")); return 0 }

//go:wasmexport fail
func failExport() int32 { return xt.Fail("nope: input rejected by guest") }

//go:wasmexport silentfail
func silentFail() int32 { return 7 }

// log writes N info lines (N from input).
//
//go:wasmexport log
func logExport() int32 {
	n, _ := strconv.Atoi(string(xt.Input()))
	for i := 0; i < n; i++ {
		xt.Info("guest line " + strconv.Itoa(i))
	}
	return 0
}

// escape tries one way out of the sandbox, named by the input "<attempt> [<arg>]", and
// reports what it saw; the host tests assert every attempt is refused.
//
//go:wasmexport escape
func escape() int32 {
	attempt, arg, _ := strings.Cut(string(xt.Input()), " ")
	var out string
	switch attempt {
	case "read": // arg: an absolute host path
		b, err := os.ReadFile(arg)
		out = report(err, "read "+strconv.Quote(string(b)))
	case "readdir": // arg: a directory
		entries, err := os.ReadDir(arg)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		out = report(err, "entries "+strconv.Quote(strings.Join(names, ",")))
	case "environ": // names only: a broken sandbox must not copy the host's secrets into test logs
		var names []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		out = "environ(" + strconv.Itoa(len(names)) + ") " + strconv.Quote(strings.Join(names, ","))
	case "getenv": // arg: a variable name
		v, ok := os.LookupEnv(arg)
		out = "set=" + strconv.FormatBool(ok) + " value=" + strconv.Quote(v)
	case "args":
		out = "args(" + strconv.Itoa(len(os.Args)) + ") " + strconv.Quote(strings.Join(os.Args, ","))
	case "http": // arg: a URL
		body := xt.HTTPRequest([]byte(`{"method":"GET","url":` + strconv.Quote(arg) + `}`))
		out = "response " + strconv.Quote(string(body))
	case "vars":
		xt.VarSet("probe", []byte("stored"))
		out = "var " + strconv.Quote(string(xt.VarGet("probe")))
	default:
		return xt.Fail("escape: unknown attempt " + strconv.Quote(attempt))
	}
	xt.Output([]byte(out))
	return 0
}

func report(err error, ok string) string {
	if err != nil {
		return "error " + err.Error()
	}
	return ok
}

// clock answers the wall clock, the monotonic clock and two random numbers (one from the
// runtime's seed, one from WASI random_get): what a deterministic instance must not take
// from the host.
//
//go:wasmexport clock
func clock() int32 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	xt.Output([]byte(fmt.Sprintf("%d %d %d %x", time.Now().UnixNano(), time.Since(start), mrand.Uint64(), b)))
	return 0
}

var start = time.Now()

// transform_manifest answers a patch setting the manifest's annotations to the number of
// calls this instance has had: a ManifestTransformer whose output is not a function of its
// input.
//
//go:wasmexport transform_manifest
func transformManifest() int32 {
	transforms++
	xt.Output([]byte(`{"patch":[{"op":"add","path":"/metadata/annotations","value":{"calls":"` + strconv.Itoa(transforms) + `"}}]}`))
	return 0
}

var transforms int
