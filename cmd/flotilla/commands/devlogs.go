package commands

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"

	"github.com/flotilla-dev/flotilla/core/environment"
)

// devLogVerbosity is the verbosity of component logs in `flotilla dev`, the daemons' default.
const devLogVerbosity = 0

// devLogFileName is the file, beside its control-plane logs, that the Flotilla component
// running for a control plane logs to: the hub controllers for the hub, the klusterlet for a
// managed cluster.
func devLogFileName(controlPlane string) string {
	if controlPlane == environment.HubName {
		return "flotilla-hub.log"
	}
	return "klusterlet.log"
}

// devLogs are the component log files of a dev session, one per control plane.
type devLogs struct {
	paths   map[string]string
	files   []*os.File
	loggers map[string]logr.Logger
}

// openDevLogs creates each control plane's log file. Its loggers write everything to the file
// and errors to term, or everything when verbose.
func openDevLogs(fleet *environment.Fleet, term io.Writer, verbose bool) (*devLogs, error) {
	l := &devLogs{paths: map[string]string{}, loggers: map[string]logr.Logger{}}
	var termHandler slog.Handler = slog.NewTextHandler(term, &slog.HandlerOptions{Level: slog.LevelError})
	if verbose {
		termHandler = logHandler(term, devLogVerbosity)
	}
	for _, cp := range fleet.ControlPlanes() {
		path := filepath.Join(cp.Dir, devLogFileName(cp.Name))
		f, err := os.Create(path)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s log: %w", cp.Name, err), l.Close())
		}
		l.files = append(l.files, f)
		l.paths[cp.Name] = path
		l.loggers[cp.Name] = logr.FromSlogHandler(slog.NewMultiHandler(logHandler(f, devLogVerbosity), termHandler))
	}
	return l, nil
}

// Logger is the logger of the component running for controlPlane; it discards when there is
// no such control plane (or no logs, as in tests of components alone).
func (l *devLogs) Logger(controlPlane string) logr.Logger {
	if l == nil {
		return logr.Discard()
	}
	if lg, ok := l.loggers[controlPlane]; ok {
		return lg
	}
	return logr.Discard()
}

// Close closes the files.
func (l *devLogs) Close() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
