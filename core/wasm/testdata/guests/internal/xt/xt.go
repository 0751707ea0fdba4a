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
