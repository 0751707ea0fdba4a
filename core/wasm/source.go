package wasm

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Source keys a module may be stored under. The suffix selects the decompressor.
const (
	KeyPlain = "plugin.wasm"
	KeyZstd  = "plugin.wasm.zst"
	KeyGzip  = "plugin.wasm.gz"
)

// Digest returns the lowercase hex sha256 of an uncompressed module, the form used by
// spec.sha256 and status.digest.
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// Decompress returns the uncompressed module stored under key, choosing the codec by the
// key's suffix (.wasm, .wasm.zst, .wasm.gz). At most maxBytes uncompressed bytes are
// produced: anything larger, including a decompression bomb, fails with ReasonTooLarge
// without ever holding more than maxBytes+1 bytes. plugin names the WasmPlugin in errors.
func Decompress(plugin, key string, blob []byte, maxBytes int) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxModuleBytes
	}
	var r io.Reader
	switch {
	case strings.HasSuffix(key, ".wasm.zst"):
		// The window cap stops a frame from demanding a huge buffer before any output.
		d, err := zstd.NewReader(bytes.NewReader(blob), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(uint64(max(maxBytes, 1<<20))), zstd.WithDecoderMaxMemory(uint64(maxBytes)+1))
		if err != nil {
			return nil, loadErr(plugin, ReasonInvalidModule, err, "source key %q: opening zstd stream: %v", key, err)
		}
		defer d.Close()
		r = d
	case strings.HasSuffix(key, ".wasm.gz"):
		g, err := gzip.NewReader(bytes.NewReader(blob))
		if err != nil {
			return nil, loadErr(plugin, ReasonInvalidModule, err, "source key %q: not a gzip stream: %v", key, err)
		}
		defer g.Close()
		r = g
	case strings.HasSuffix(key, ".wasm"):
		if len(blob) > maxBytes {
			return nil, loadErr(plugin, ReasonTooLarge, nil, "source key %q: module is %d bytes, above the limit of %d bytes", key, len(blob), maxBytes)
		}
		return blob, nil
	default:
		return nil, loadErr(plugin, ReasonInvalidSpec, nil, "source key %q: unsupported suffix (want .wasm, .wasm.zst or .wasm.gz)", key)
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, loadErr(plugin, ReasonTooLarge, err, "source key %q: decompressed module exceeds the limit of %d bytes", key, maxBytes)
		}
		return nil, loadErr(plugin, ReasonInvalidModule, err, "source key %q: decompressing: %v", key, err)
	}
	if len(out) > maxBytes {
		return nil, loadErr(plugin, ReasonTooLarge, nil, "source key %q: decompressed module exceeds the limit of %d bytes", key, maxBytes)
	}
	return out, nil
}

// Compress zstd-compresses a module for storage under KeyZstd (used by `flotilla plugin push`).
func Compress(wasm []byte) ([]byte, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("creating zstd encoder: %w", err)
	}
	defer enc.Close()
	return enc.EncodeAll(wasm, nil), nil
}
