// Package metrics holds actorlet's Prometheus metrics: the kubelet metrics
// under upstream's names (kubelet_*), the actor metrics by actor kind, and
// the gc metrics. Every metric is registered on Registry, which the
// kubelet-API actor serves at /metrics.
package metrics

import (
	"context"
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
	// Every Go runtime metric, as upstream's component-base registers them.
	Registry.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves Registry in the Prometheus text format, with the series
// of the collectors each request makes with perRequest: figures measured
// for that request (the volume stats), whose calls end with it. A
// collector's failure leaves the other series served, as upstream's.
func Handler(perRequest ...func(ctx context.Context) prometheus.Collector) http.Handler {
	if len(perRequest) == 0 {
		return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		for _, c := range perRequest {
			reg.MustRegister(c(r.Context()))
		}
		promhttp.HandlerFor(prometheus.Gatherers{Registry, reg},
			promhttp.HandlerOpts{Registry: Registry, ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}
