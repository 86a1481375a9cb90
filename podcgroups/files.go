package podcgroups

// setting is one cgroup file's value: File in the hierarchy of
// Controller (cgroup v1), or in the cgroup's one directory (v2, where
// Controller only says which controller the parent must delegate).
type setting struct {
	Controller, File, Value string
}

// settings are the files rc writes, as runc's (opencontainers/cgroups)
// fs and fs2 managers write a cgroup's resources, in their order: the CFS
// period before the quota (see Manager.apply for the kernel's refusals).
func settings(rc ResourceConfig, v2 bool) []setting {
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
