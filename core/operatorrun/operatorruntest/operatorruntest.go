// Package operatorruntest helps the tests of the packages built on core/operatorrun
// (hub/operator, klusterlet/operator).
package operatorruntest

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
)

// Logs keeps the lines a logger writes, so that a test can count what the operator logged
// (its restarts).
type Logs struct {
	mu    sync.Mutex
	lines []string
}

// NewLogger returns a logger that writes every line to w and keeps it in the returned Logs.
func NewLogger(w io.Writer) (logr.Logger, *Logs) {
	l := &Logs{}
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, prefix+" "+args)
		l.mu.Unlock()
		fmt.Fprintln(w, prefix, args)
	}, funcr.Options{}), l
}

// Count is how many lines contain s.
func (l *Logs) Count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// Gate is a featureGates entry: mode Enable when on, else Disable.
func Gate(name string, on bool) operatorv1.FeatureGate {
	mode := operatorv1.FeatureGateModeTypeDisable
	if on {
		mode = operatorv1.FeatureGateModeTypeEnable
	}
	return operatorv1.FeatureGate{Feature: name, Mode: mode}
}
