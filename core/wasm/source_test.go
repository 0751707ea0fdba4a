package wasm_test

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/core/wasm"
)

func gz(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecompressBySuffix(t *testing.T) {
	mod := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte("flotilla"), 1000)...)
	zst, err := wasm.Compress(mod)
	if err != nil {
		t.Fatal(err)
	}
	if len(zst) >= len(mod) {
		t.Fatalf("compression did not shrink %d bytes (got %d)", len(mod), len(zst))
	}
	for key, blob := range map[string][]byte{
		wasm.KeyPlain:          mod,
		wasm.KeyZstd:           zst,
		wasm.KeyGzip:           gz(t, mod),
		"custom-name.wasm.zst": zst,
	} {
		got, err := wasm.Decompress("p", key, blob, 1<<20)
		if err != nil || !bytes.Equal(got, mod) {
			t.Fatalf("key %s: err %v, equal %v", key, err, bytes.Equal(got, mod))
		}
	}
}

func TestDecompressionBombIsTooLarge(t *testing.T) {
	huge := make([]byte, 64<<20) // 64 MiB of zeros compresses to a few KiB
	zst, err := wasm.Compress(huge)
	if err != nil {
		t.Fatal(err)
	}
	for key, blob := range map[string][]byte{wasm.KeyZstd: zst, wasm.KeyGzip: gz(t, huge), wasm.KeyPlain: huge[:2<<20]} {
		_, err := wasm.Decompress("bomb", key, blob, 1<<20)
		if wasm.LoadReasonOf(err) != wasm.ReasonTooLarge || !strings.Contains(err.Error(), `"bomb"`) {
			t.Fatalf("key %s (%d bytes): want TooLarge naming the plugin, got %v", key, len(blob), err)
		}
	}
}

func TestDecompressRejectsCorruptAndUnknown(t *testing.T) {
	for key, want := range map[string]wasm.LoadReason{
		wasm.KeyZstd:     wasm.ReasonInvalidModule,
		wasm.KeyGzip:     wasm.ReasonInvalidModule,
		"plugin.wasm.xz": wasm.ReasonInvalidSpec,
		"plugin.tar":     wasm.ReasonInvalidSpec,
	} {
		_, err := wasm.Decompress("corrupt", key, []byte("this is not compressed data at all"), 1<<20)
		if wasm.LoadReasonOf(err) != want || !strings.Contains(err.Error(), key) {
			t.Fatalf("key %s: want %s naming the key, got %v", key, want, err)
		}
	}
}
