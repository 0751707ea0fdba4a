package wasm

import (
	"errors"
	"io"
)

// stdioInput is an instance's stdin under the bulk transport (abi.ExportStdio): the
// current call's input, then EOF. One call at a time uses an instance.
type stdioInput struct {
	b   []byte
	off int
}

func (r *stdioInput) set(b []byte) { r.b, r.off = b, 0 }

func (r *stdioInput) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// errStdoutFull is what a guest's write past the output bound gets.
var errStdoutFull = errors.New("stdout is full: a call's output is bounded by the instance's memory limit")

// stdioOutput is an instance's stdout under the bulk transport: what the guest wrote
// during the current call, at most max bytes.
type stdioOutput struct {
	b   []byte
	max int
}

func (w *stdioOutput) reset() {
	// A guest's one huge answer should not pin its buffer for the instance's life.
	if cap(w.b) > 4<<20 {
		w.b = nil
	}
	w.b = w.b[:0]
}

func (w *stdioOutput) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > w.max {
		return 0, errStdoutFull
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// take returns a copy of the last n bytes written, which the guest announced as its
// output; false when it wrote fewer.
func (w *stdioOutput) take(n uint64) ([]byte, bool) {
	if n > uint64(len(w.b)) {
		return nil, false
	}
	return append([]byte(nil), w.b[uint64(len(w.b))-n:]...), true
}
