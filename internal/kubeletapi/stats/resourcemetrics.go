package stats

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The resource metrics under upstream's names, labels and help texts, the
// latter prefixed with their stability level as component-base does.
// scrape_error, deprecated since 1.29, is hidden in 1.37 and left out.
var (
	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	nodeSwapUsageDesc = prometheus.NewDesc("node_swap_usage_bytes",
		"[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", containerLabels, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", containerLabels, nil)
	containerSwapUsageDesc = prometheus.NewDesc("container_swap_usage_bytes",
		"[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems", containerLabels, nil)
	containerSwapLimitDesc = prometheus.NewDesc("container_swap_limit_bytes",
		"[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems", containerLabels, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", podLabels, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", podLabels, nil)
	podSwapUsageDesc = prometheus.NewDesc("pod_swap_usage_bytes",
		"[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems", podLabels, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", containerLabels, nil)

	containerLabels = []string{"container", "pod", "namespace"}
	podLabels       = []string{"pod", "namespace"}
)

// ResourceMetricsHandler serves /metrics/resource: the CPU and memory
// summary as Prometheus metrics, each sample stamped with its figure's
// time, as upstream's resource metrics collector. A failed summary gives
// resource_scrape_error 1 and no other series, with status 200.
func (p *Provider) ResourceMetricsHandler() http.Handler {
	return perRequest(func(ctx context.Context) prometheus.Collector { return resourceCollector{ctx: ctx, p: p} })
}

// perRequest serves the collector that collector makes for each request
// in a registry of its own, so that the collector's CRI calls end with
// the request. A collector's errors leave its other series served with
// status 200, as upstream's (ContinueOnError).
func perRequest(collector func(ctx context.Context) prometheus.Collector) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector(r.Context()))
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

type resourceCollector struct {
	ctx context.Context
	p   *Provider
}

func (c resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc,
		containerStartTimeDesc, containerCPUUsageDesc, containerMemoryUsageDesc, containerSwapUsageDesc, containerSwapLimitDesc,
		podCPUUsageDesc, podMemoryUsageDesc, podSwapUsageDesc, resourceScrapeErrorDesc,
	} {
		ch <- d
	}
}

func (c resourceCollector) Collect(ch chan<- prometheus.Metric) {
	var scrapeError float64
	defer func() {
		ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, scrapeError)
	}()
	s, err := c.p.Summary(c.ctx, true)
	if err != nil {
		scrapeError = 1
		c.p.Log.Error().Err(err).Msg("summary for /metrics/resource failed")
		return
	}
	collectNode(ch, s.Node)
	for _, pod := range s.Pods {
		for _, ctr := range pod.Containers {
			collectContainer(ch, pod.PodRef, ctr)
		}
		collectPod(ch, pod)
	}
}

func collectNode(ch chan<- prometheus.Metric, n statsapi.NodeStats) {
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- sample(n.CPU.Time.Time, nodeCPUUsageDesc, prometheus.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- sample(n.Memory.Time.Time, nodeMemoryUsageDesc, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		ch <- sample(n.Swap.Time.Time, nodeSwapUsageDesc, prometheus.GaugeValue, float64(*n.Swap.SwapUsageBytes))
	}
}

func collectContainer(ch chan<- prometheus.Metric, ref statsapi.PodReference, c statsapi.ContainerStats) {
	labels := []string{c.Name, ref.Name, ref.Namespace}
	if c.StartTime.Unix() > 0 {
		// Without a timestamp, as upstream.
		ch <- prometheus.MustNewConstMetric(containerStartTimeDesc, prometheus.GaugeValue,
			float64(c.StartTime.UnixNano())/float64(time.Second), labels...)
	}
	if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
		ch <- sample(c.CPU.Time.Time, containerCPUUsageDesc, prometheus.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), labels...)
	}
	if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
		ch <- sample(c.Memory.Time.Time, containerMemoryUsageDesc, prometheus.GaugeValue, float64(*c.Memory.WorkingSetBytes), labels...)
	}
	if c.Swap != nil {
		var used float64
		if c.Swap.SwapUsageBytes != nil {
			used = float64(*c.Swap.SwapUsageBytes)
			ch <- sample(c.Swap.Time.Time, containerSwapUsageDesc, prometheus.GaugeValue, used, labels...)
		}
		if c.Swap.SwapAvailableBytes != nil {
			ch <- sample(c.Swap.Time.Time, containerSwapLimitDesc, prometheus.GaugeValue, float64(*c.Swap.SwapAvailableBytes)+used, labels...)
		}
	}
}

func collectPod(ch chan<- prometheus.Metric, pod statsapi.PodStats) {
	labels := []string{pod.PodRef.Name, pod.PodRef.Namespace}
	if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
		ch <- sample(pod.CPU.Time.Time, podCPUUsageDesc, prometheus.CounterValue, seconds(*pod.CPU.UsageCoreNanoSeconds), labels...)
	}
	if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
		ch <- sample(pod.Memory.Time.Time, podMemoryUsageDesc, prometheus.GaugeValue, float64(*pod.Memory.WorkingSetBytes), labels...)
	}
	if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
		ch <- sample(pod.Swap.Time.Time, podSwapUsageDesc, prometheus.GaugeValue, float64(*pod.Swap.SwapUsageBytes), labels...)
	}
}

// sample is a constant metric stamped with the time of its figure.
func sample(at time.Time, desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	return prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(desc, t, v, labels...))
}

func seconds(nanos uint64) float64 { return float64(nanos) / float64(time.Second) }
