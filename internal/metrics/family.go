package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// family is where a group of metrics stands: the namespace and subsystem
// that prometheus puts before each of their names. Its methods build the
// group's metrics, so that each definition says only its name, help,
// buckets and labels.
type family struct {
	namespace, subsystem string
	// upstream marks a family of upstream's metrics, whose help starts
	// with the stability level component-base gives it: [ALPHA] unless
	// the help spells another ("[BETA] ...", "[STABLE] ...").
	upstream bool
}

var (
	// kubeletFamily is upstream's kubelet_* metrics.
	kubeletFamily = family{subsystem: kubeletSubsystem, upstream: true}
	// gcFamily is actorlet's own actorlet_gc_* metrics.
	gcFamily = family{namespace: "actorlet", subsystem: "gc"}
	// proberFamily is upstream's prober_* metrics.
	proberFamily = family{subsystem: "prober", upstream: true}
	// upstreamFamily is upstream's metrics outside kubelet_* (rest_client_*,
	// storage_operation_*, kubernetes_*): each names its whole name.
	upstreamFamily = family{upstream: true}
)

// help is h as the family exposes it.
func (f family) help(h string) string {
	if f.upstream && !strings.HasPrefix(h, "[") {
		return "[ALPHA] " + h
	}
	return h
}

func (f family) counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help)})
}

func (f family) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help)}, labels)
}

func (f family) gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help)})
}

func (f family) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help)}, labels)
}

func (f family) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help), Buckets: buckets})
}

func (f family) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: f.namespace, Subsystem: f.subsystem, Name: name, Help: f.help(help), Buckets: buckets}, labels)
}
