// Package xt is a minimal binding of the Extism kernel for the test guests. They
// deliberately avoid any PDK so the host is tested against the bare ABI.
package xt

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env load_u8
func loadU8(offset uint64) uint32

//go:wasmimport extism:host/env length
func length(offset uint64) uint64

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(offset uint64)

//go:wasmimport extism:host/env config_get
func configGet(offset uint64) uint64

//go:wasmimport extism:host/env log_info
func logInfo(offset uint64)

// The kernel calls below are ones the host must refuse; guests use them to probe the sandbox.

//go:wasmimport extism:host/env var_set
func varSet(name, value uint64)

//go:wasmimport extism:host/env var_get
func varGet(name uint64) uint64

//go:wasmimport extism:host/env http_request
func httpRequest(request, body uint64) uint64

func Input() []byte {
	n := inputLength()
	b := make([]byte, n)
	for i := uint64(0); i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

func put(b []byte) uint64 {
	off := alloc(uint64(len(b)))
	for i, c := range b {
		storeU8(off+uint64(i), uint32(c))
	}
	return off
}

func get(off uint64) []byte {
	if off == 0 {
		return nil
	}
	n := length(off)
	b := make([]byte, n)
	for i := uint64(0); i < n; i++ {
		b[i] = byte(loadU8(off + i))
	}
	return b
}

func Output(b []byte) { outputSet(put(b), uint64(len(b))) }

func Fail(msg string) int32 {
	errorSet(put([]byte(msg)))
	return 1
}

func Config(key string) []byte { return get(configGet(put([]byte(key)))) }

func Info(msg string) { logInfo(put([]byte(msg))) }

// VarSet stores an Extism var (the host traps when vars are disabled).
func VarSet(name string, value []byte) { varSet(put([]byte(name)), put(value)) }

// VarGet reads an Extism var; nil when unset.
func VarGet(name string) []byte { return get(varGet(put([]byte(name)))) }

// HTTPRequest sends an Extism HTTP request (JSON: {"url":…,"method":…}) without a
// body and returns the response body (the host traps when the URL is not allowed).
func HTTPRequest(request []byte) []byte { return get(httpRequest(put(request), 0)) }
