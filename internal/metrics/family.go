package metrics

import "github.com/prometheus/client_golang/prometheus"

// family is where a group of metrics stands: the namespace and subsystem
// that prometheus puts before each of their names. Its methods build the
// group's metrics, so that each definition says only its name, help,
// buckets and labels.
type family struct {
	namespace, subsystem string
}

var (
	// kubeletFamily is upstream's kubelet_* metrics.
	kubeletFamily = family{subsystem: kubeletSubsystem}
	// gcFamily is actorlet's own actorlet_gc_* metrics.
	gcFamily = family{namespace: "actorlet", subsystem: "gc"}
	// proberFamily is upstream's prober_* metrics.
	proberFamily = family{subsystem: "prober"}
)

func (f family) counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help})
}

func (f family) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help}, labels)
}

func (f family) gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help})
}

func (f family) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help}, labels)
}

func (f family) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help, Buckets: buckets})
}

func (f family) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: help, Buckets: buckets}, labels)
}
