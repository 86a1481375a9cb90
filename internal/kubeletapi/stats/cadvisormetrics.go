package stats

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cAdvisor's metric names and help texts (github.com/google/cadvisor
// metrics/prometheus.go and prometheus_machine.go), for the figures
// actorlet measures.
var (
	containerScrapeErrorDesc = prometheus.NewDesc("container_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	machineScrapeErrorDesc = prometheus.NewDesc("machine_scrape_error",
		"1 if there was an error while getting machine metrics, 0 otherwise.", nil, nil)

	machineCPUCoresDesc         = machineDesc("machine_cpu_cores", "Number of logical CPU cores.")
	machineCPUPhysicalCoresDesc = machineDesc("machine_cpu_physical_cores", "Number of physical CPU cores.")
	machineCPUSocketsDesc       = machineDesc("machine_cpu_sockets", "Number of CPU sockets.")
	machineMemoryDesc           = machineDesc("machine_memory_bytes", "Amount of memory installed on the machine.")
	machineSwapDesc             = machineDesc("machine_swap_bytes", "Amount of swap memory available on the machine.")

	creationTimeDesc      = containerDesc("container_creation_time_seconds", "Container creation time since unix epoch in seconds.")
	startTimeDesc         = containerDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.")
	specCPUPeriodDesc     = containerDesc("container_spec_cpu_period", "CPU period of the container.")
	specCPUQuotaDesc      = containerDesc("container_spec_cpu_quota", "CPU quota of the container.")
	specCPUSharesDesc     = containerDesc("container_spec_cpu_shares", "CPU share of the container.")
	specMemoryLimitDesc   = containerDesc("container_spec_memory_limit_bytes", "Memory limit for the container.")
	specMemorySwapDesc    = containerDesc("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.")
	specMemoryReserveDesc = containerDesc("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.")

	lastSeenDesc         = containerDesc("container_last_seen", "Last time a container was seen by the exporter")
	cpuUserDesc          = containerDesc("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.")
	cpuSystemDesc        = containerDesc("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.")
	cpuUsageDesc         = containerDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "cpu")
	cfsPeriodsDesc       = containerDesc("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.")
	cfsThrottledDesc     = containerDesc("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.")
	cfsThrottledTimeDesc = containerDesc("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.")
	memoryCacheDesc      = containerDesc("container_memory_cache", "Number of bytes of page cache memory.")
	memoryRSSDesc        = containerDesc("container_memory_rss", "Size of RSS in bytes.")
	memoryMappedDesc     = containerDesc("container_memory_mapped_file", "Size of memory mapped files in bytes.")
	memorySwapDesc       = containerDesc("container_memory_swap", "Container swap usage in bytes.")
	memoryFailcntDesc    = containerDesc("container_memory_failcnt", "Number of memory usage hits limits")
	memoryUsageDesc      = containerDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed")
	memoryWorkingSetDesc = containerDesc("container_memory_working_set_bytes", "Current working set in bytes.")
	memoryFailuresDesc   = containerDesc("container_memory_failures_total", "Cumulative count of memory allocation failures.", "failure_type", "scope")
	fsInodesFreeDesc     = containerDesc("container_fs_inodes_free", "Number of available Inodes", "device")
	fsInodesTotalDesc    = containerDesc("container_fs_inodes_total", "Number of Inodes", "device")
	fsLimitDesc          = containerDesc("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", "device")
	fsUsageDesc          = containerDesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", "device")
	netRxBytesDesc       = containerDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", "interface")
	netRxPacketsDesc     = containerDesc("container_network_receive_packets_total", "Cumulative count of packets received", "interface")
	netRxDroppedDesc     = containerDesc("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", "interface")
	netRxErrorsDesc      = containerDesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", "interface")
	netTxBytesDesc       = containerDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", "interface")
	netTxPacketsDesc     = containerDesc("container_network_transmit_packets_total", "Cumulative count of packets transmitted", "interface")
	netTxDroppedDesc     = containerDesc("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", "interface")
	netTxErrorsDesc      = containerDesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", "interface")
	processesDesc        = containerDesc("container_processes", "Number of processes running inside the container.")
	threadsDesc          = containerDesc("container_threads", "Number of threads running inside the container")
	threadsMaxDesc       = containerDesc("container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero")
)

func containerDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, cadvisorLabels...), extra...), nil)
}

func machineDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, machineLabels, nil)
}

// specMemoryValue is a memory limit as cAdvisor writes it: 0 for none.
func specMemoryValue(v uint64) float64 {
	if v > maxMemory {
		return 0
	}
	return float64(v)
}

// collectCadvisorSeries sends one series' metrics as cAdvisor's collector:
// the spec (times and limits) without timestamps, the figures stamped with
// when they were read. A figure is taken from the cgroup when it was
// readable, as cAdvisor reads it, else from the runtime's statistics;
// figures neither has are left out.
func collectCadvisorSeries(ch chan<- prometheus.Metric, s cadvisorSeries, d cgroupDetail, now time.Time) {
	labels := s.labels()
	spec := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	at := func(t time.Time, desc *prometheus.Desc, vt prometheus.ValueType, v float64, extra ...string) {
		ch <- prometheus.NewMetricWithTimestamp(t, prometheus.MustNewConstMetric(desc, vt, v, append(append([]string{}, labels...), extra...)...))
	}
	gauge := func(desc *prometheus.Desc, v uint64, extra ...string) {
		at(now, desc, prometheus.GaugeValue, float64(v), extra...)
	}
	counter := func(desc *prometheus.Desc, v uint64, extra ...string) {
		at(now, desc, prometheus.CounterValue, float64(v), extra...)
	}

	// The spec: creation is the runtime's for a container, the cgroup's
	// for a bare cgroup; the start is the cgroup's, as cAdvisor's
	// containerd handler takes it.
	created, started := s.created, s.created
	if d.hasStartTime {
		started = d.startTime
		if created.IsZero() {
			created = d.startTime
		}
	}
	if !created.IsZero() {
		spec(creationTimeDesc, float64(created.Unix()))
		spec(startTimeDesc, float64(started.Unix()))
	}
	if d.hasCPUSpec {
		spec(specCPUPeriodDesc, float64(d.period))
		if d.quota != 0 {
			spec(specCPUQuotaDesc, float64(d.quota))
		}
		spec(specCPUSharesDesc, float64(d.shares))
	}
	if d.hasMemorySpec {
		spec(specMemoryLimitDesc, specMemoryValue(d.memoryLimit))
		spec(specMemorySwapDesc, specMemoryValue(d.swapLimit))
		spec(specMemoryReserveDesc, specMemoryValue(d.memoryReservation))
	}

	at(now, lastSeenDesc, prometheus.GaugeValue, float64(now.Unix()))

	// CPU.
	if d.hasCPUSplit {
		at(now, cpuUserDesc, prometheus.CounterValue, seconds(d.cpuUser))
		at(now, cpuSystemDesc, prometheus.CounterValue, seconds(d.cpuSystem))
	}
	if d.hasCPU {
		if d.cpuTotal > 0 {
			at(now, cpuUsageDesc, prometheus.CounterValue, seconds(d.cpuTotal), "total")
		}
	} else if cpu := s.stats.GetCpu(); cpu.GetUsageCoreNanoSeconds().GetValue() > 0 {
		at(criTime(cpu.GetTimestamp(), now), cpuUsageDesc, prometheus.CounterValue, seconds(cpu.GetUsageCoreNanoSeconds().GetValue()), "total")
	}
	if d.hasThrottling && d.quota != 0 {
		counter(cfsPeriodsDesc, d.periods)
		counter(cfsThrottledDesc, d.throttledPeriods)
		at(now, cfsThrottledTimeDesc, prometheus.CounterValue, seconds(d.throttledNanos))
	}

	// Memory.
	if d.hasMemory {
		gauge(memoryCacheDesc, d.cache)
		gauge(memoryRSSDesc, d.memory.rss)
		gauge(memoryMappedDesc, d.mappedFile)
		if d.hasSwap {
			gauge(memorySwapDesc, d.swap)
		}
		if d.hasFailcnt {
			counter(memoryFailcntDesc, d.failcnt)
		}
		gauge(memoryUsageDesc, d.memory.usage)
		gauge(memoryWorkingSetDesc, d.memory.workingSet)
		counter(memoryFailuresDesc, d.pgfault, "pgfault", "container")
		counter(memoryFailuresDesc, d.pgmajfault, "pgmajfault", "container")
		counter(memoryFailuresDesc, d.hierarchyPgfault, "pgfault", "hierarchy")
		counter(memoryFailuresDesc, d.hierarchyPgmajfault, "pgmajfault", "hierarchy")
	} else if m := s.stats.GetMemory(); m != nil {
		t := criTime(m.GetTimestamp(), now)
		for _, f := range []struct {
			desc *prometheus.Desc
			v    *uint64
		}{{memoryRSSDesc, criValue(m.GetRssBytes())}, {memoryUsageDesc, criValue(m.GetUsageBytes())}, {memoryWorkingSetDesc, criValue(m.GetWorkingSetBytes())}} {
			if f.v != nil {
				at(t, f.desc, prometheus.GaugeValue, float64(*f.v))
			}
		}
	}

	// Filesystems.
	for _, fs := range s.fs {
		if fs.hasInodes {
			gauge(fsInodesFreeDesc, fs.inodeFree, fs.device)
			gauge(fsInodesTotalDesc, fs.inodes, fs.device)
		}
		if fs.limit > 0 {
			gauge(fsLimitDesc, fs.limit, fs.device)
		}
		gauge(fsUsageDesc, fs.usage, fs.device)
	}

	// Network.
	for _, n := range s.net {
		counter(netRxBytesDesc, n.rxBytes, n.name)
		counter(netRxPacketsDesc, n.rxPackets, n.name)
		counter(netRxDroppedDesc, n.rxDropped, n.name)
		counter(netRxErrorsDesc, n.rxErrors, n.name)
		counter(netTxBytesDesc, n.txBytes, n.name)
		counter(netTxPacketsDesc, n.txPackets, n.name)
		counter(netTxDroppedDesc, n.txDropped, n.name)
		counter(netTxErrorsDesc, n.txErrors, n.name)
	}

	// Processes.
	if d.hasProcesses {
		gauge(processesDesc, d.processes)
		gauge(threadsDesc, d.threads)
		gauge(threadsMaxDesc, d.threadsMax)
	}
}
