// Package metrics holds actorlet's Prometheus metrics: the kubelet metrics
// under upstream's names (kubelet_*), the actor metrics by actor kind, and
// the gc metrics. Every metric is registered on Registry, which the
// kubelet-API actor serves at /metrics.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds every actorlet metric. It is a registry of its own, not
// prometheus' global one, so that nothing a library registers globally
// leaks into /metrics and tests can read exactly what actorlet reports.
var Registry = prometheus.NewRegistry()

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves Registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
}
