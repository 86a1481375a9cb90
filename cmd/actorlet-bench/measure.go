package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports; reading it would need
// sysconf and cgo.
const clockTicks = 100

// procCPU is the CPU time a process has used so far (utime+stime) in
// seconds, from /proc/PID/stat.
func procCPU(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(raw)
}

// parseStatCPU reads utime and stime, fields 14 and 15 of proc(5)'s
// /proc/PID/stat. The command name (field 2) is in parentheses and may hold
// spaces and parentheses itself, so fields are counted from the last ')'.
func parseStatCPU(raw []byte) (float64, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc/PID/stat %q: no ')' after the command name", truncate(raw, 80))
	}
	// After ")": field 3 (state) is rest[0], so field k is rest[k-3].
	rest := strings.Fields(string(raw[end+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("parse /proc/PID/stat %q: %d fields after the command name, want at least 13", truncate(raw, 80), len(rest))
	}
	utime, err := strconv.ParseUint(rest[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse utime %q in /proc/PID/stat: %w", rest[11], err)
	}
	stime, err := strconv.ParseUint(rest[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse stime %q in /proc/PID/stat: %w", rest[12], err)
	}
	return float64(utime+stime) / clockTicks, nil
}

// loadAverage is the 1-minute load average (/proc/loadavg): the machine is
// shared, and a run's figures read differently on a busy one.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return -1
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return l
}

// memory is what /proc/PID/status says about a process's resident set.
type memory struct {
	RSS int64 // VmRSS, bytes
	HWM int64 // VmHWM, the peak RSS since start or the last clear_refs 5, bytes
	// RSS split: anonymous (heap, stacks) and file-backed (the binary's
	// text and data, mapped files), bytes.
	Anon, File int64
}

func procMemory(pid int) (memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	m, err := parseStatusMemory(raw)
	if err != nil {
		return memory{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return m, nil
}

// parseStatusMemory reads VmRSS, VmHWM, RssAnon and RssFile ("VmRSS:
// 12345 kB") from /proc/PID/status.
func parseStatusMemory(raw []byte) (memory, error) {
	var m memory
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		dst, wanted := fields[key]
		if !ok || !wanted {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("%s: %q is not \"N kB\"", key, strings.TrimSpace(value))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = kb << 10
		found++
	}
	if found != len(fields) {
		return memory{}, fmt.Errorf("VmRSS, VmHWM, RssAnon or RssFile missing (a kernel thread or a zombie?)")
	}
	return m, nil
}

// resetPeak makes VmHWM start again from the current RSS (proc(5),
// /proc/PID/clear_refs, value 5).
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// usage is one process's resources over a window of the benchmark.
// PeakRSS is VmRSS's peak (VmHWM): the binary's mapped pages count in it,
// though they are shared and reclaimable. PeakAnon is RssAnon's peak, the
// private memory the process costs the node: the figure memory targets
// are checked against.
type usage struct {
	CPUSeconds float64 `json:"cpuSeconds"`
	PeakRSS    int64   `json:"peakRSSBytes"`
	PeakAnon   int64   `json:"peakRSSAnonBytes"`
	EndRSS     int64   `json:"endRSSBytes"`
	EndAnon    int64   `json:"endRSSAnonBytes"`
}

// window measures a process between begin and end: CPU used, the peak
// RSS (reset at begin) and the peak RssAnon. The kernel keeps no peak of
// RssAnon, so a goroutine samples it every anonSampleInterval.
type window struct {
	pid      int
	cpuStart float64
	stop     chan struct{}
	sampled  chan int64 // the peak RssAnon, once stop is closed
}

// anonSampleInterval is how often a window reads RssAnon: short against
// the benchmark's start and delete phases, long enough to cost nothing.
const anonSampleInterval = 50 * time.Millisecond

func beginWindow(pid int) (*window, error) {
	if err := resetPeak(pid); err != nil {
		return nil, fmt.Errorf("reset peak RSS of pid %d: %w", pid, err)
	}
	cpu, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	w := &window{pid: pid, cpuStart: cpu, stop: make(chan struct{}), sampled: make(chan int64, 1)}
	go w.sampleAnon()
	return w, nil
}

// sampleAnon keeps the largest RssAnon read until stop is closed.
func (w *window) sampleAnon() {
	var peak int64
	tick := time.NewTicker(anonSampleInterval)
	defer tick.Stop()
	for {
		if m, err := procMemory(w.pid); err == nil {
			peak = max(peak, m.Anon)
		}
		select {
		case <-w.stop:
			w.sampled <- peak
			return
		case <-tick.C:
		}
	}
}

func (w *window) end() (usage, error) {
	close(w.stop)
	peakAnon := <-w.sampled
	cpu, err := procCPU(w.pid)
	if err != nil {
		return usage{}, err
	}
	m, err := procMemory(w.pid)
	if err != nil {
		return usage{}, err
	}
	return usage{CPUSeconds: cpu - w.cpuStart, PeakRSS: m.HWM, PeakAnon: max(peakAnon, m.Anon), EndRSS: m.RSS, EndAnon: m.Anon}, nil
}

// containerdPID reads the PID of the environment's containerd from the
// PID file hack/node-env keeps, and checks that it is alive.
func containerdPID(stateDir string) (int, error) {
	path := stateDir + "/pids/containerd.pid"
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("containerd PID: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("containerd PID in %s: %w", path, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return 0, fmt.Errorf("containerd PID %d from %s is not running", pid, path)
	}
	return pid, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
