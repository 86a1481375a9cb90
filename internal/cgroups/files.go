package cgroups

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// setting is one cgroup file's value: File in the hierarchy of
// Controller (cgroup v1), or in the cgroup's one directory (v2, where
// Controller only says which controller the parent must delegate).
type setting struct {
	Controller, File, Value string
}

// settings are the files rc writes, as runc's (opencontainers/cgroups)
// fs and fs2 managers write a cgroup's resources, in their order: the CFS
// period before the quota (see Manager.apply for the kernel's refusals).
// hugePageSizes are the machine's huge page sizes in bytes (HugePageSizes).
func settings(rc ResourceConfig, v2 bool, hugePageSizes ...int64) []setting {
	out := cpuMemPids(rc, v2)
	if rc.HugePageLimit == nil {
		return out
	}
	file := "hugetlb.%s.limit_in_bytes"
	if v2 {
		file = "hugetlb.%s.max"
	}
	for _, size := range hugePageSizes {
		out = append(out, setting{"hugetlb", fmt.Sprintf(file, HugePageSizeName(size)), itoa(rc.HugePageLimit[size])})
	}
	return out
}

// HugePageSizeName is the kernel's (and runc's) name of a huge page size
// in the hugetlb files: 2MB, 1GB, 64KB.
func HugePageSizeName(size int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return itoa(size) + units[i]
}

// HugePageSizes are the machine's huge page sizes in bytes, from the
// directories of dir (/sys/kernel/mm/hugepages: hugepages-2048kB, ...).
func HugePageSizes(dir string) []int64 {
	entries, _ := os.ReadDir(dir)
	var out []int64
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(kb, "kB"), 10, 64)
		if err == nil && strings.HasSuffix(kb, "kB") {
			out = append(out, n*1024)
		}
	}
	slices.Sort(out)
	return out
}

func cpuMemPids(rc ResourceConfig, v2 bool) []setting {
	var out []setting
	if v2 {
		if rc.CPUShares != nil && *rc.CPUShares != 0 {
			out = append(out, setting{"cpu", "cpu.weight", utoa(CPUSharesToWeight(*rc.CPUShares))})
		}
		if rc.CPUQuota != nil || rc.CPUPeriod != nil {
			v := "max"
			if rc.CPUQuota != nil && *rc.CPUQuota > 0 {
				v = itoa(*rc.CPUQuota)
			}
			if rc.CPUPeriod != nil && *rc.CPUPeriod != 0 {
				v += " " + utoa(*rc.CPUPeriod)
			}
			out = append(out, setting{"cpu", "cpu.max", v})
		}
		if v, ok := limitValue(rc.Memory); ok {
			out = append(out, setting{"memory", "memory.max", v})
		}
		if v, ok := limitValue(rc.PidsLimit); ok {
			out = append(out, setting{"pids", "pids.max", v})
		}
		return out
	}
	if rc.CPUShares != nil && *rc.CPUShares != 0 {
		out = append(out, setting{"cpu", "cpu.shares", utoa(*rc.CPUShares)})
	}
	if rc.CPUPeriod != nil && *rc.CPUPeriod != 0 {
		out = append(out, setting{"cpu", "cpu.cfs_period_us", utoa(*rc.CPUPeriod)})
	}
	if rc.CPUQuota != nil && *rc.CPUQuota != 0 {
		out = append(out, setting{"cpu", "cpu.cfs_quota_us", itoa(max(*rc.CPUQuota, -1))})
	}
	if rc.Memory != nil && *rc.Memory != 0 {
		out = append(out, setting{"memory", "memory.limit_in_bytes", itoa(max(*rc.Memory, -1))})
	}
	if v, ok := limitValue(rc.PidsLimit); ok {
		out = append(out, setting{"pids", "pids.max", v})
	}
	return out
}

// limitValue is a v2 memory.max or pids.max value (and v1's pids.max): a
// negative limit is "max", 0 is left as it is.
func limitValue(p *int64) (string, bool) {
	switch {
	case p == nil || *p == 0:
		return "", false
	case *p < 0:
		return "max", true
	}
	return itoa(*p), true
}

// CPUSharesToWeight is runc's (and upstream's) conversion of cgroup v1
// cpu.shares [2, 262144] to v2 cpu.weight [1, 10000].
func CPUSharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	shares = min(max(shares, MinShares), MaxShares)
	return 1 + ((shares-2)*9999)/262142
}
