package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkCompile/cold-2   	       1	1523456789 ns/op
BenchmarkPrioritizer5000/wasm-2         	     136	   3000000 ns/op	  138873 B/op	      74 allocs/op
BenchmarkPrioritizer5000/native-2       	    1748	    600000 ns/op	       0 B/op	       0 allocs/op
BenchmarkPrioritizer5000/wasm-2         	     136	   9000000 ns/op	  138873 B/op	      74 allocs/op
BenchmarkPrioritizer5000/native-2       	    1748	    500000 ns/op	       0 B/op	       0 allocs/op
BenchmarkPrioritizer5000/wasm-2         	     136	   4000000 ns/op	  138873 B/op	      74 allocs/op
BenchmarkPrioritizer5000/native-2       	    1748	    400000 ns/op	       0 B/op	       0 allocs/op
PASS
`

func TestSummaryUsesMedians(t *testing.T) {
	var echo bytes.Buffer
	w, n, err := scan(strings.NewReader(sample), &echo)
	if err != nil {
		t.Fatal(err)
	}
	if echo.String() != sample {
		t.Fatalf("input not echoed verbatim:\n%s", echo.String())
	}
	if got, want := summary(w, n), "wasm-prioritizer-5000 ratio=8.00 wasm_ms=4.000 native_ms=0.500"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
}

func TestMalformedNumberIsAnError(t *testing.T) {
	_, _, err := scan(strings.NewReader("BenchmarkPrioritizer5000/wasm-2 10 x ns/op\n"), &bytes.Buffer{})
	if err == nil {
		t.Fatal("no error for a malformed ns/op value")
	}
}
