//go:build wasip1

package guest

import (
	"errors"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Extism kernel functions. Offsets and lengths are in the kernel's memory, not
// the guest's linear memory; data moves through load/store calls.

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(off uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(off uint64) uint64

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env free
func free(off uint64)

//go:wasmimport extism:host/env length
func length(off uint64) uint64

//go:wasmimport extism:host/env load_u8
func loadU8(off uint64) uint32

//go:wasmimport extism:host/env load_u64
func loadU64(off uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(off uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func storeU64(off uint64, v uint64)

//go:wasmimport extism:host/env output_set
func outputSet(off, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(off uint64)

//go:wasmimport extism:host/env config_get
func configGet(off uint64) uint64

//go:wasmimport extism:host/env log_debug
func logDebug(off uint64)

//go:wasmimport extism:host/env log_info
func logInfo(off uint64)

//go:wasmimport extism:host/env log_warn
func logWarn(off uint64)

//go:wasmimport extism:host/env log_error
func logError(off uint64)

// put64 and get64 move 8 bytes with one memory access: wasm is little-endian, like
// the Extism kernel's u64 calls, and the callers pass 8-byte slices.
func put64(b []byte, v uint64) { *(*uint64)(unsafe.Pointer(unsafe.SliceData(b))) = v }

func get64(b []byte) uint64 { return *(*uint64)(unsafe.Pointer(unsafe.SliceData(b))) }

// inputBuf is reused across calls: a Go guest's memory never shrinks, so keeping
// the largest buffer costs nothing more and saves garbage.
var inputBuf []byte

// stdioCall: the current call came through the bulk transport (abi.ExportStdio), so
// its output goes back the same way.
var stdioCall bool

//go:wasmexport flotilla_stdio
func acceptStdio() int32 { return 1 }

// Input returns the call's input. The slice is reused by the next call.
func Input() []byte {
	n := int(inputLength())
	stdioCall = false
	if n == abi.StdioHeaderSize {
		var h [abi.StdioHeaderSize]byte
		put64(h[:8], inputLoadU64(0))
		put64(h[8:], inputLoadU64(8))
		if size, ok := abi.ParseStdioHeader(h[:]); ok {
			stdioCall = true
			return readStdin(int(size))
		}
	}
	if cap(inputBuf) < n {
		inputBuf = make([]byte, n)
	}
	b := inputBuf[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		put64(b[i:i+8], inputLoadU64(uint64(i)))
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(uint64(i)))
	}
	return b
}

// readStdin reads the n input bytes the host put on stdin: one fd_read moves them all.
func readStdin(n int) []byte {
	if cap(inputBuf) < n {
		inputBuf = make([]byte, n)
	}
	b := inputBuf[:n]
	for off := 0; off < n; {
		k, err := syscall.Read(0, b[off:])
		if err != nil || k <= 0 {
			panic("reading the input from stdin: " + strconv.Itoa(off) + " of " + strconv.Itoa(n) + " bytes")
		}
		off += k
	}
	return b
}

// store copies b into a new kernel block and returns its offset.
func store(b []byte) uint64 {
	off := alloc(uint64(len(b)))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		storeU64(off+uint64(i), get64(b[i:i+8]))
	}
	for ; i < len(b); i++ {
		storeU8(off+uint64(i), uint32(b[i]))
	}
	return off
}

func load(off uint64) []byte {
	n := int(length(off))
	b := make([]byte, n)
	i := 0
	for ; i+8 <= n; i += 8 {
		put64(b[i:i+8], loadU64(off+uint64(i)))
	}
	for ; i < n; i++ {
		b[i] = byte(loadU8(off + uint64(i)))
	}
	return b
}

// Output sets the call's output: through stdout when the call came that way and the
// output is more than a header, else through the kernel.
func Output(b []byte) error {
	if stdioCall && len(b) > abi.StdioHeaderSize {
		for off := 0; off < len(b); {
			k, err := syscall.Write(1, b[off:])
			if err != nil {
				return errors.New("writing the output to stdout: " + err.Error())
			}
			off += k
		}
		b = abi.AppendStdioHeader(make([]byte, 0, abi.StdioHeaderSize), len(b))
	}
	outputSet(store(b), uint64(len(b)))
	return nil
}

// SetError reports msg as the call's error.
func SetError(msg string) { errorSet(store([]byte(msg))) }

// Host is the sdk.Host of a guest instance.
type Host struct {
	config     []byte
	configRead bool
}

// Config reads pluginConfig once per instance; the host never changes an
// instance's configuration (a new configuration means new instances).
func (h *Host) Config() []byte {
	if !h.configRead {
		key := store([]byte(abi.ConfigKey))
		if off := configGet(key); off != 0 {
			h.config = load(off)
			free(off)
		}
		free(key)
		h.configRead = true
	}
	return h.config
}

// Log sends msg to the host log; the host frees the block.
func (h *Host) Log(level sdk.LogLevel, msg string) {
	off := store([]byte(msg))
	switch level {
	case sdk.LogDebug:
		logDebug(off)
	case sdk.LogWarn:
		logWarn(off)
	case sdk.LogError:
		logError(off)
	default:
		logInfo(off)
	}
}

// TheHost is the single Host of this instance.
var TheHost = &Host{}

// Run calls fn, turning an error or a panic into an Extism error (return code 1).
func Run(fn func() error) (rc int32) {
	defer func() {
		if v := recover(); v != nil {
			SetError("plugin panicked: " + PanicMessage(v))
			rc = 1
		}
	}()
	if err := fn(); err != nil {
		SetError(err.Error())
		return 1
	}
	return 0
}

// Serve answers one call to an export of plugin p, the plugin its package
// registered (nil if none): fn gets p, the Host and the call's input and returns
// the output to set; an error or panic becomes the call's error (see Run).
func Serve[P any](p P, fn func(p P, h sdk.Host, input []byte) ([]byte, error)) int32 {
	return Run(func() error {
		if any(p) == nil {
			return ErrNotRegistered
		}
		out, err := fn(p, TheHost, Input())
		if err != nil {
			return err
		}
		return Output(out)
	})
}

// ValidateConfig answers validate_config for plugin p, the plugin its package
// registered (nil if none).
func ValidateConfig(p any) int32 {
	return Run(func() error {
		if p == nil {
			return ErrNotRegistered
		}
		return sdk.ValidateConfig(p, Input())
	})
}

// PanicMessage renders a recovered value without fmt.
func PanicMessage(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case string:
		return x
	case interface{ String() string }:
		return x.String()
	}
	return "(a value that is neither error nor string)"
}

// ErrNotRegistered is returned when an export is called before a plugin registered.
var ErrNotRegistered = errors.New("no plugin registered: call Register from an init function of the plugin's main package")

// ABIVersion answers flotilla_abi_version.
func ABIVersion() int32 {
	if err := Output([]byte(strconv.Itoa(abi.Version))); err != nil {
		SetError(err.Error())
		return 1
	}
	return 0
}
