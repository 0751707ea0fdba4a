// Command misbehave is a test plugin with one export per way a plugin can behave or
// misbehave. It declares the Prioritizer exports so it loads as that type.
package main

import (
	"bytes"
	"strconv"

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
