// Command benchline reads `go test -bench` output on stdin, echoes it, and ends
// with a wasm/native summary line, by default `make bench-wasm`'s:
//
//	wasm-prioritizer-5000 ratio=<wasm/native> wasm_ms=<median> native_ms=<median>
//
// The medians are over every run (-count) of <benchmark>/wasm and /native found in the
// input; -bench names the benchmark and -label the line (bench-placement's pass over 5,000
// clusters uses BenchmarkSchedulePass5000 and placement-pass-5000).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	flag.StringVar(&benchmark, "bench", "BenchmarkPrioritizer5000", "the benchmark with /wasm and /native sub-benchmarks")
	flag.StringVar(&label, "label", "wasm-prioritizer-5000", "the summary line's first word")
	flag.Parse()
	wasmNs, nativeNs, err := scan(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchline:", err)
		os.Exit(1)
	}
	if len(wasmNs) == 0 || len(nativeNs) == 0 {
		fmt.Fprintf(os.Stderr, "benchline: no %s/wasm and /native results in the input\n", benchmark)
		os.Exit(1)
	}
	fmt.Println(summary(wasmNs, nativeNs))
}

// The benchmark read and the summary's label (flags).
var (
	benchmark = "BenchmarkPrioritizer5000"
	label     = "wasm-prioritizer-5000"
)

func summary(wasmNs, nativeNs []float64) string {
	w, n := median(wasmNs)/1e6, median(nativeNs)/1e6
	return fmt.Sprintf("%s ratio=%.2f wasm_ms=%.3f native_ms=%.3f", label, w/n, w, n)
}

// scan copies in to out and collects the ns/op of the two prioritizer benchmarks.
func scan(in io.Reader, out io.Writer) (wasmNs, nativeNs []float64, err error) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		f := strings.Fields(line)
		// BenchmarkPrioritizer5000/wasm-2   136   8698411 ns/op ...
		if len(f) < 4 || f[3] != "ns/op" || !strings.HasPrefix(f[0], benchmark+"/") {
			continue
		}
		ns, perr := strconv.ParseFloat(f[2], 64)
		if perr != nil {
			return nil, nil, fmt.Errorf("line %q: %v", line, perr)
		}
		name := strings.TrimPrefix(f[0], benchmark+"/")
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
