// Command benchline reads `go test -bench` output on stdin, echoes it, and ends
// with the summary line of `make bench-wasm`:
//
//	wasm-prioritizer-5000 ratio=<wasm/native> wasm_ms=<median> native_ms=<median>
//
// The medians are over every run (-count) of BenchmarkPrioritizer5000/wasm and
// /native found in the input.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	wasmNs, nativeNs, err := scan(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchline:", err)
		os.Exit(1)
	}
	if len(wasmNs) == 0 || len(nativeNs) == 0 {
		fmt.Fprintln(os.Stderr, "benchline: no BenchmarkPrioritizer5000/wasm and /native results in the input")
		os.Exit(1)
	}
	fmt.Println(summary(wasmNs, nativeNs))
}

func summary(wasmNs, nativeNs []float64) string {
	w, n := median(wasmNs)/1e6, median(nativeNs)/1e6
	return fmt.Sprintf("wasm-prioritizer-5000 ratio=%.2f wasm_ms=%.3f native_ms=%.3f", w/n, w, n)
}

// scan copies in to out and collects the ns/op of the two prioritizer benchmarks.
func scan(in io.Reader, out io.Writer) (wasmNs, nativeNs []float64, err error) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		f := strings.Fields(line)
		// BenchmarkPrioritizer5000/wasm-2   136   8698411 ns/op ...
		if len(f) < 4 || f[3] != "ns/op" || !strings.HasPrefix(f[0], "BenchmarkPrioritizer5000/") {
			continue
		}
		ns, perr := strconv.ParseFloat(f[2], 64)
		if perr != nil {
			return nil, nil, fmt.Errorf("line %q: %v", line, perr)
		}
		name := strings.TrimPrefix(f[0], "BenchmarkPrioritizer5000/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		switch name {
		case "wasm":
			wasmNs = append(wasmNs, ns)
		case "native":
			nativeNs = append(nativeNs, ns)
		}
	}
	return wasmNs, nativeNs, sc.Err()
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
