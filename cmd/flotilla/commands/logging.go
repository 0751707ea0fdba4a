package commands

import (
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Every Flotilla component logs through a logr.Logger; the commands back it with a log/slog
// text handler. The daemons (hub, klusterlet) write to standard error; `flotilla dev` writes
// each component's log to a file and only errors to the terminal (see devLogs).

// logHandler writes text lines to w, up to logr verbosity v (logr's V(v) is slog level -v).
func logHandler(w io.Writer, v int) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.Level(-v)})
}

// newLogger logs to w up to verbosity v.
func newLogger(w io.Writer, v int) logr.Logger {
	return logr.FromSlogHandler(logHandler(w, v))
}

// setLibraryLoggers sends the logs that libraries write through process-wide loggers to l:
// controller-runtime's caches log through its root logger (which, never set, prints a stack
// trace after 30s) and client-go through klog. Only commands call it; they own the process.
// controller-runtime takes the first logger it is given.
func setLibraryLoggers(l logr.Logger) {
	ctrllog.SetLogger(l)
	klog.SetLogger(l)
}
