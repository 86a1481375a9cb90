package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Join creates the cgroup name (cgroupfs form) in every hierarchy, as
// upstream's cgroupfs manager's Apply, and moves pid into it there. It is
// upstream's ensureProcessInContainerWithOOMScore's move for
// kubeletCgroups, and ensureSystemCgroups' for systemCgroups.
func (m *Manager) Join(name string, pid int) error {
	if err := m.create(name); err != nil {
		return err
	}
	for _, dir := range m.hierarchies(name) {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("failed to move PID %d to %q: %w", pid, name, err)
		}
	}
	return nil
}

// Procs lists the processes of the cgroup name: its memory hierarchy's on
// v1 (upstream's GetPids reads one hierarchy too), the unified one's on
// v2.
func (m *Manager) Procs(name string) ([]int, error) {
	dir := filepath.Join(m.cfg.Root, name)
	if !m.v2 {
		dir = filepath.Join(m.cfg.Root, "memory", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}

// SystemPids is upstream's choice of the processes ensureSystemCgroups
// moves into systemCgroups: every process of the root cgroup but init,
// kernel threads and those excluded (the agent itself, which goes to
// kubeletCgroups).
func SystemPids(pids []int, isKernel func(int) bool, exclude ...int) []int {
	var out []int
	for _, pid := range pids {
		if pid == 1 || slices.Contains(exclude, pid) || isKernel(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// IsKernelPid is upstream's isKernelPid: a kernel thread has no
// executable.
func IsKernelPid(pid int) bool {
	_, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err != nil
}
