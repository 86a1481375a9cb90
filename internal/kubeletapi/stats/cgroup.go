package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// maxMemory is where a memory limit counts as none, as upstream's
// isMemoryUnlimited: not MaxInt64, since the kernel rounds it to pages.
const maxMemory = uint64(1 << 62)

// cgroups reads a cgroup's CPU, memory and pressure figures from cgroupfs
// as cAdvisor's raw handler does, for cgroup v1 (one hierarchy per
// controller) and v2 (one unified hierarchy).
type cgroups struct {
	root    string // <host>/sys/fs/cgroup
	unified bool
}

func newCgroups(hostRoot string) cgroups {
	root := filepath.Join(hostRoot, "sys", "fs", "cgroup")
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return cgroups{root: root, unified: err == nil}
}

// dir is cgroup name's directory in one of the controllers' hierarchies
// (v1; the first that exists) or in the unified hierarchy (v2).
func (c cgroups) dir(name string, controllers ...string) string {
	if c.unified {
		return filepath.Join(c.root, name)
	}
	for _, ctl := range controllers {
		d := filepath.Join(c.root, ctl, name)
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return filepath.Join(c.root, controllers[0], name)
}

func (c cgroups) cpuDir(name string) string {
	return c.dir(name, "cpuacct", "cpu,cpuacct", "cpuacct,cpu")
}

func (c cgroups) memoryDir(name string) string { return c.dir(name, "memory") }

// exists tells whether cgroup name has a memory controller directory: the
// controller whose figures matter most.
func (c cgroups) exists(name string) bool {
	_, err := os.Stat(c.memoryDir(name))
	return err == nil
}

// cpuNanos is the cgroup's cumulative CPU time.
func (c cgroups) cpuNanos(name string) (uint64, error) {
	dir := c.cpuDir(name)
	if !c.unified {
		return readUint(filepath.Join(dir, "cpuacct.usage"))
	}
	path := filepath.Join(dir, "cpu.stat")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	usec, ok := parseKeyedValues(data)["usage_usec"]
	if !ok {
		return 0, fmt.Errorf("%s: no usage_usec", path)
	}
	return usec * uint64(time.Microsecond), nil
}

// memoryFigures are a cgroup's memory counters in bytes, as cAdvisor
// derives them.
type memoryFigures struct {
	usage, workingSet, rss, pageFaults, majorPageFaults uint64
	limit                                               uint64 // > maxMemory: none
}

func (m memoryFigures) stats(at time.Time) *statsapi.MemoryStats {
	s := &statsapi.MemoryStats{
		Time:            metaTime(at),
		UsageBytes:      ptrTo(m.usage),
		WorkingSetBytes: ptrTo(m.workingSet),
		RSSBytes:        ptrTo(m.rss),
		PageFaults:      ptrTo(m.pageFaults),
		MajorPageFaults: ptrTo(m.majorPageFaults),
	}
	if m.limit <= maxMemory {
		s.AvailableBytes = ptrTo(saturatingSub(m.limit, m.workingSet))
	}
	return s
}

// memory reads the cgroup's memory counters. The working set is usage
// less inactive file pages, which the kernel can reclaim at once.
func (c cgroups) memory(name string) (memoryFigures, error) {
	dir := c.memoryDir(name)
	statPath := filepath.Join(dir, "memory.stat")
	data, err := os.ReadFile(statPath)
	if err != nil {
		return memoryFigures{}, err
	}
	stat := parseKeyedValues(data)
	var m memoryFigures
	var inactive uint64
	if c.unified {
		inactive, m.rss = stat["inactive_file"], stat["anon"]
		m.pageFaults, m.majorPageFaults = stat["pgfault"], stat["pgmajfault"]
		if isRootCgroup(name) {
			// The v2 root has no memory.current nor memory.max; runc
			// sums anon and file as v1's usage_in_bytes counts them.
			m.usage, m.limit = stat["anon"]+stat["file"], ^uint64(0)
		} else {
			if m.usage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
				return memoryFigures{}, err
			}
			if m.limit, err = readLimit(filepath.Join(dir, "memory.max")); err != nil {
				return memoryFigures{}, err
			}
		}
	} else {
		inactive, m.rss = stat["total_inactive_file"], stat["total_rss"]
		m.pageFaults, m.majorPageFaults = stat["total_pgfault"], stat["total_pgmajfault"]
		if m.usage, err = readUint(filepath.Join(dir, "memory.usage_in_bytes")); err != nil {
			return memoryFigures{}, err
		}
		if m.limit, err = readUint(filepath.Join(dir, "memory.limit_in_bytes")); err != nil {
			return memoryFigures{}, err
		}
	}
	m.workingSet = saturatingSub(m.usage, inactive)
	return m, nil
}

// swapUsage is the cgroup's swap use, when the kernel accounts it: v1
// counts memory and swap together in memsw, v2 swap alone. ok is false
// without swap accounting. Not for the root cgroup: see nodeMemory.
func (c cgroups) swapUsage(name string, m memoryFigures) (usage, limit uint64, ok bool) {
	dir := c.memoryDir(name)
	if c.unified {
		u, err := readUint(filepath.Join(dir, "memory.swap.current"))
		if err != nil {
			return 0, 0, false
		}
		l, err := readLimit(filepath.Join(dir, "memory.swap.max"))
		if err != nil {
			l = ^uint64(0)
		}
		return u, l, true
	}
	memsw, err := readUint(filepath.Join(dir, "memory.memsw.usage_in_bytes"))
	if err != nil {
		return 0, 0, false
	}
	return saturatingSub(memsw, m.usage), ^uint64(0), true
}

// pressure reads the cgroup's PSI file for resource ("cpu", "memory",
// "io"). cgroup v1 has none: nil.
func (c cgroups) pressure(name, resource string) *statsapi.PSIStats {
	if !c.unified {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(c.root, name, resource+".pressure"))
	if err != nil {
		return nil
	}
	psi, err := parsePressure(data)
	if err != nil {
		return nil
	}
	return psi
}

// startTime is when the cgroup was made, as cAdvisor guesses it: the
// older of its directory's and its cgroup.clone_children's (v1) or
// cgroup.events' (v2) modification times, the latter being rarely touched
// after creation. Never before boot.
func (c cgroups) startTime(name string, boot time.Time) (time.Time, error) {
	dir := c.memoryDir(name)
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, err
	}
	t := fi.ModTime()
	marker := "cgroup.clone_children"
	if c.unified {
		marker = "cgroup.events"
	}
	if fi, err := os.Stat(filepath.Join(dir, marker)); err == nil && fi.ModTime().Before(t) {
		t = fi.ModTime()
	}
	if t.Before(boot) {
		t = boot
	}
	return t, nil
}

func isRootCgroup(name string) bool { return name == "/" || name == "" }

// readLimit reads a v2 limit file, where "max" means none.
func readLimit(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return ^uint64(0), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func saturatingSub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}
