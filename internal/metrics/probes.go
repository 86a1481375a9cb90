package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The prober's metrics, upstream's (pkg/kubelet/prober): served apart from
// the others, at /metrics/probes, on a registry of their own, as upstream
// serves them.

// Values of prober_probe_total's result label, upstream's.
const (
	ProbeResultSuccessful = "successful"
	ProbeResultFailed     = "failed"
	ProbeResultUnknown    = "unknown"
)

var (
	// ProbeRegistry holds the probe metrics, with the process' start
	// time as upstream's /metrics/probes shows it.
	ProbeRegistry = prometheus.NewRegistry()

	// ProberProbeTotal counts the probes run, by probe type (Liveness,
	// Readiness, Startup), result and container.
	ProberProbeTotal = proberFamily.counterVec("probe_total", "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.", "probe_type", "result", "container", "pod", "namespace", "pod_uid")

	// ProberProbeDuration is how long a probe that did not fail took, as
	// upstream's (a failed probe's time is not observed).
	ProberProbeDuration = proberFamily.histogramVec("probe_duration_seconds", "Duration in seconds for a probe response.", prometheus.DefBuckets, "probe_type", "container", "pod", "namespace")
)

// processStart is when the process started, near enough: when this
// package was initialised.
var processStart = float64(time.Now().UnixNano()) / 1e9

func init() {
	ProbeRegistry.MustRegister(ProberProbeTotal, ProberProbeDuration,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "process_start_time_seconds",
			Help: "Start time of the process since unix epoch in seconds.",
		}, func() float64 { return processStart }))
}

// ProbesHandler serves ProbeRegistry in the Prometheus text format:
// /metrics/probes.
func ProbesHandler() http.Handler {
	return promhttp.HandlerFor(ProbeRegistry, promhttp.HandlerOpts{Registry: ProbeRegistry, ErrorHandling: promhttp.ContinueOnError})
}
