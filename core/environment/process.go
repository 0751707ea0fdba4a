package environment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawner starts child processes from one dedicated, locked OS thread.
//
// Children must die with us even when the test binary or `flotilla dev` is killed
// (SIGKILL, `go test` timeout, a panic that skips cleanup), so each child is started with
// Pdeathsig=SIGKILL. Linux delivers that signal when the *thread* that forked the child
// exits, not when the process does, and the Go runtime may retire the thread an ordinary
// goroutine forked from (https://go.dev/issue/27505), which would kill a healthy child at
// a random moment. Forking only from a goroutine that has called runtime.LockOSThread and
// that stays alive until every child it started has been stopped ties each child's
// lifetime to the spawner: the thread dies when the process dies, or when close returns
// after the owner has stopped the children.
type spawner struct {
	reqs chan spawnRequest
	done chan struct{}
	once sync.Once
}

type spawnRequest struct {
	cmd    *exec.Cmd
	result chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnRequest), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *spawner) loop() {
	// Never unlocked: when loop returns the runtime terminates this thread, which also
	// SIGKILLs any child its owner forgot to stop.
	runtime.LockOSThread()
	defer close(s.done)
	for req := range s.reqs {
		req.result <- req.cmd.Start()
	}
}

// start runs cmd.Start on the spawner's thread.
func (s *spawner) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group: Stop signals the whole group, and a Ctrl-C in the terminal
	// reaches only us, so we shut children down in order instead of racing them.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	req := spawnRequest{cmd: cmd, result: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-s.done:
		return errors.New("process spawner already closed")
	}
	return <-req.result
}

// close stops the spawner thread. Call it only after every child has exited.
func (s *spawner) close() {
	s.once.Do(func() { close(s.reqs) })
	<-s.done
}

// process is one running control-plane component.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// startProcess launches path with args and our environment plus env, stdout and stderr
// written to logPath (truncated: a retried start must not find the previous attempt's
// errors in it).
func startProcess(s *spawner, name, path string, args, env []string, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log file for %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	if err := s.start(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, log: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid returns the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs the group.
// The group is SIGKILLed even after a clean exit so that no grandchild survives.
func (p *process) stop(grace time.Duration) error {
	pgid := p.pid()
	if p.running() {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("sending SIGTERM to %s (pgid %d): %w", p.name, pgid, err)
		}
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("sending SIGKILL to %s (pgid %d): %w", p.name, pgid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit 30s after SIGKILL", p.name, pgid)
	}
}

// exitError describes an unexpected exit, with the end of the process log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited: %v\n--- last lines of %s ---\n%s", p.name, p.waitErr, p.logPath, logTail(p.logPath, 40))
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// addressInUse reports whether a process log shows it lost a race for its port.
func addressInUse(logPath string) bool {
	return strings.Contains(logTail(logPath, 200), "address already in use")
}

// waitFor polls check every interval until it succeeds, the process exits, ctx ends or
// timeout passes. lastErr from check is reported on timeout.
func waitFor(ctx context.Context, p *process, timeout time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if lastErr = check(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)\n--- last lines of %s ---\n%s",
				what, ctx.Err(), lastErr, p.logPath, logTail(p.logPath, 40))
		case <-tick.C:
		}
	}
}
