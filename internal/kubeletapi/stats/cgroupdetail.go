package stats

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupDetail is what cAdvisor's libcontainer handler reads of one cgroup
// beyond the summary's figures: the CPU split and throttling, the memory
// breakdown, the limits set (its "spec") and the processes. The has*
// fields tell which parts the cgroup had files for.
type cgroupDetail struct {
	hasCPU                                    bool
	cpuTotal                                  uint64 // ns
	hasCPUSplit                               bool
	cpuUser, cpuSystem                        uint64 // ns
	hasThrottling                             bool
	periods, throttledPeriods, throttledNanos uint64
	hasMemory                                 bool
	memory                                    memoryFigures
	cache, mappedFile                         uint64
	pgfault, pgmajfault                       uint64 // this cgroup's own
	hierarchyPgfault, hierarchyPgmajfault     uint64 // with descendants
	hasSwap                                   bool
	swap                                      uint64
	hasFailcnt                                bool
	failcnt                                   uint64
	hasCPUSpec                                bool
	shares, period, quota                     uint64 // quota 0: none
	hasMemorySpec                             bool
	memoryLimit, swapLimit, memoryReservation uint64 // > maxMemory: none
	hasProcesses                              bool
	processes, threads, threadsMax            uint64 // threadsMax 0: none
	hasStartTime                              bool
	startTime                                 time.Time
}

// clockTicks is USER_HZ, the unit of cpuacct.stat, as libcontainer
// assumes it.
const clockTicks = userHZ

// detail reads cgroup name's figures; the parts it has no files for stay
// unset. The root cgroup's processes are left out, as cAdvisor's raw
// handler leaves them (pids.current does not exist there).
func (c cgroups) detail(name string, boot time.Time) cgroupDetail {
	var d cgroupDetail
	if v, err := c.cpuNanos(name); err == nil {
		d.hasCPU, d.cpuTotal = true, v
	}
	if m, err := c.memory(name); err == nil {
		d.hasMemory, d.memory = true, m
	}
	if t, err := c.startTime(name, boot); err == nil {
		d.hasStartTime, d.startTime = true, t
	}
	if c.unified {
		c.detailV2(name, &d)
	} else {
		c.detailV1(name, &d)
	}
	if !isRootCgroup(name) {
		c.processes(name, &d)
	}
	return d
}

func (c cgroups) detailV1(name string, d *cgroupDetail) {
	if stat, err := readKeyed(filepath.Join(c.cpuDir(name), "cpuacct.stat")); err == nil {
		d.hasCPUSplit = true
		d.cpuUser = stat["user"] * uint64(time.Second) / clockTicks
		d.cpuSystem = stat["system"] * uint64(time.Second) / clockTicks
	}
	cpu := c.dir(name, "cpu", "cpu,cpuacct", "cpuacct,cpu")
	if stat, err := readKeyed(filepath.Join(cpu, "cpu.stat")); err == nil {
		d.hasThrottling = true
		d.periods, d.throttledPeriods, d.throttledNanos = stat["nr_periods"], stat["nr_throttled"], stat["throttled_time"]
	}
	if shares, err := readUint(filepath.Join(cpu, "cpu.shares")); err == nil {
		d.hasCPUSpec, d.shares = true, shares
		d.period, _ = readUint(filepath.Join(cpu, "cpu.cfs_period_us"))
		// -1 is no quota, which ParseUint refuses: 0.
		d.quota, _ = readUint(filepath.Join(cpu, "cpu.cfs_quota_us"))
	}
	mem := c.memoryDir(name)
	if stat, err := readKeyed(filepath.Join(mem, "memory.stat")); err == nil {
		d.cache, d.mappedFile = stat["total_cache"], stat["total_mapped_file"]
		d.pgfault, d.pgmajfault = stat["pgfault"], stat["pgmajfault"]
		d.hierarchyPgfault, d.hierarchyPgmajfault = stat["total_pgfault"], stat["total_pgmajfault"]
	}
	if d.hasMemory {
		// Swap as cAdvisor: memsw usage less memory usage.
		if memsw, err := readUint(filepath.Join(mem, "memory.memsw.usage_in_bytes")); err == nil {
			d.hasSwap, d.swap = true, saturatingSub(memsw, d.memory.usage)
		}
		if f, err := readUint(filepath.Join(mem, "memory.failcnt")); err == nil {
			d.hasFailcnt, d.failcnt = true, f
		}
		d.hasMemorySpec = true
		d.memoryLimit = d.memory.limit
		d.swapLimit, _ = readUint(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
		d.memoryReservation, _ = readUint(filepath.Join(mem, "memory.soft_limit_in_bytes"))
	}
}

func (c cgroups) detailV2(name string, d *cgroupDetail) {
	dir := filepath.Join(c.root, name)
	if stat, err := readKeyed(filepath.Join(dir, "cpu.stat")); err == nil {
		if _, ok := stat["user_usec"]; ok {
			d.hasCPUSplit = true
			d.cpuUser, d.cpuSystem = stat["user_usec"]*uint64(time.Microsecond), stat["system_usec"]*uint64(time.Microsecond)
		}
		if _, ok := stat["nr_periods"]; ok {
			d.hasThrottling = true
			d.periods, d.throttledPeriods = stat["nr_periods"], stat["nr_throttled"]
			d.throttledNanos = stat["throttled_usec"] * uint64(time.Microsecond)
		}
	}
	if w, err := readUint(filepath.Join(dir, "cpu.weight")); err == nil {
		d.hasCPUSpec, d.shares = true, weightToShares(w)
		if data, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
			if q, p, ok := strings.Cut(strings.TrimSpace(string(data)), " "); ok {
				d.period, _ = strconv.ParseUint(p, 10, 64)
				d.quota, _ = strconv.ParseUint(q, 10, 64) // "max": 0
			}
		}
	}
	if stat, err := readKeyed(filepath.Join(dir, "memory.stat")); err == nil {
		d.cache, d.mappedFile = stat["file"], stat["file_mapped"]
		// v2 counts faults with descendants only.
		d.pgfault, d.pgmajfault = stat["pgfault"], stat["pgmajfault"]
		d.hierarchyPgfault, d.hierarchyPgmajfault = d.pgfault, d.pgmajfault
	}
	if d.hasMemory && !isRootCgroup(name) {
		if s, err := readUint(filepath.Join(dir, "memory.swap.current")); err == nil {
			d.hasSwap, d.swap = true, s
		}
		if ev, err := readKeyed(filepath.Join(dir, "memory.events")); err == nil {
			d.hasFailcnt, d.failcnt = true, ev["max"]
		}
		d.hasMemorySpec = true
		d.memoryLimit = d.memory.limit
		d.swapLimit, _ = readLimit(filepath.Join(dir, "memory.swap.max"))
		d.memoryReservation, _ = readLimit(filepath.Join(dir, "memory.min"))
	}
}

// weightToShares converts a v2 cpu.weight back to v1 shares, as cAdvisor's
// convertCPUWeightToCPULimit (the inverse of runc's conversion).
func weightToShares(w uint64) uint64 {
	if w < 1 || w > 10000 {
		return 0
	}
	return 2 + ((w-1)*262142)/9999
}

// processes counts the cgroup's own processes (cgroup.procs) and its
// tasks against the pids limit, as cAdvisor's container_processes,
// container_threads and container_threads_max.
func (c cgroups) processes(name string, d *cgroupDetail) {
	dir := c.dir(name, "pids")
	current, err := readUint(filepath.Join(dir, "pids.current"))
	if err != nil {
		return
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	d.hasProcesses, d.threads = true, current
	d.processes = uint64(bytes.Count(procs, []byte("\n")))
	d.threadsMax, _ = readLimit(filepath.Join(dir, "pids.max"))
	if d.threadsMax == ^uint64(0) {
		d.threadsMax = 0
	}
}

func readKeyed(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseKeyedValues(data), nil
}
