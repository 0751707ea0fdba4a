package abi

import "testing"

func TestStdioHeader(t *testing.T) {
	for _, n := range []int{0, 1, 35_000, 1 << 40} {
		h := AppendStdioHeader(nil, n)
		if len(h) != StdioHeaderSize {
			t.Fatalf("header of %d bytes, want %d", len(h), StdioHeaderSize)
		}
		got, ok := ParseStdioHeader(h)
		if !ok || got != uint64(n) {
			t.Fatalf("ParseStdioHeader(AppendStdioHeader(%d)) = %d, %v", n, got, ok)
		}
	}
	for _, b := range [][]byte{nil, []byte("FLSTDIO1"), []byte("FLSTDIO2\x01\x00\x00\x00\x00\x00\x00\x00"), append(AppendStdioHeader(nil, 3), 0)} {
		if _, ok := ParseStdioHeader(b); ok {
			t.Fatalf("ParseStdioHeader(%q) accepted", b)
		}
	}
}
