package fleetbench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on Linux).
const clockTicks = 100

// ProcessCPU is a process's user and system CPU seconds so far (Linux /proc).
func ProcessCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after its closing paren.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state is field 3, utime 14 and stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: CPU times %q %q", pid, f[11], f[12])
	}
	return (ut + st) / clockTicks, nil
}

// ProcessRSS is a process's resident memory in bytes (VmRSS of /proc/<pid>/status).
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status VmRSS %q: %w", pid, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// ProcessNamed is the pid among pids whose command (/proc/<pid>/comm) is name.
func ProcessNamed(pids []int, name string) (int, error) {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(b)) == name {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process %s among %v", name, pids)
}

// FileSize is the size of the file at path (etcd's database: <data-dir>/member/snap/db).
func FileSize(path ...string) func() (int64, error) {
	return func() (int64, error) {
		st, err := os.Stat(filepath.Join(path...))
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
}
