package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Each run starts from an idle node (issue #8): not only with no pods, but
// with the previous phase's teardown over. That teardown goes on after its
// CRI calls return (containerd's garbage collection of snapshots and
// metadata, the kernel's release of network namespaces), and a run that
// starts inside it is late as a whole: every pod by about the same amount.
// So before a side creates its pods, the benchmark waits until the machine's
// CPUs have been nearly idle for a while, for a bounded time.
const (
	quietBusy   = 0.15 // busy share of all CPUs, at most
	quietWindow = time.Second
	quietMax    = 30 * time.Second
	quietPoll   = 250 * time.Millisecond
)

// waitQuiet waits until the CPUs were less than quietBusy busy over
// quietWindow, or quietMax passed; it returns how long it waited.
func waitQuiet(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	type sample struct {
		at          time.Time
		busy, total uint64
	}
	var window []sample
	for {
		raw, err := os.ReadFile("/proc/stat")
		if err != nil {
			return time.Since(start), err
		}
		busy, total, err := parseProcStatCPU(string(raw))
		if err != nil {
			return time.Since(start), err
		}
		now := time.Now()
		window = append(window, sample{now, busy, total})
		for len(window) > 1 && now.Sub(window[1].at) >= quietWindow {
			window = window[1:]
		}
		if first := window[0]; now.Sub(first.at) >= quietWindow && total > first.total &&
			float64(busy-first.busy)/float64(total-first.total) < quietBusy {
			return time.Since(start), nil
		}
		if time.Since(start) >= quietMax {
			return time.Since(start), nil
		}
		if err := sleep(ctx, quietPoll); err != nil {
			return time.Since(start), err
		}
	}
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat (proc(5)):
// the busy and total time of all CPUs, in clock ticks. Idle and iowait are
// not busy; guest time is already in user and nice.
func parseProcStatCPU(stat string) (busy, total uint64, err error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("parse /proc/stat: first line %q is not the aggregate cpu line", line)
	}
	// user nice system idle iowait irq softirq steal (guest guest_nice).
	for i, v := range f[1:] {
		if i >= 8 {
			break
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse /proc/stat: field %d %q of the cpu line: %w", i+2, v, err)
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, nil
}
