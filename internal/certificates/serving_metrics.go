package certificates

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlet/actorlet/internal/metrics"
)

// The serving certificate's metrics, upstream's names, types and buckets.
// As upstream, they are registered only on a node whose serving
// certificate comes from CSRs.
var (
	servingRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "server_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})
	servingRotation = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "certificate_manager_server_rotation_seconds",
		Help: "Histogram of the number of seconds the previous certificate lived before being rotated.",
		Buckets: []float64{
			60,        // 1 minute
			3600,      // 1 hour
			14400,     // 4 hours
			86400,     // 1 day
			604800,    // 1 week
			2592000,   // 1 month
			7776000,   // 3 months
			15552000,  // 6 months
			31104000,  // 1 year
			124416000, // 4 years
		},
	})
	servingTTL = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Subsystem: "kubelet", Name: "certificate_manager_server_ttl_seconds",
		Help: "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. " +
			"The value is in seconds until certificate expiry (negative if already expired). " +
			"If serving certificate is invalid or unused, the value will be +INF.",
	}, servingTTLSeconds)

	// servingMetricsOnce registers the metrics with the first manager.
	servingMetricsOnce sync.Once
	// servingStarted is the started manager the TTL is read from.
	servingStarted atomic.Pointer[ServingManager]
)

func registerServingMetrics() {
	servingMetricsOnce.Do(func() {
		metrics.Registry.MustRegister(servingRenewErrors, servingRotation, servingTTL)
	})
}

// servingTTLSeconds is the started manager's certificate's time to live,
// +Inf without one.
func servingTTLSeconds() float64 {
	if m := servingStarted.Load(); m != nil {
		if c := m.Current(); c != nil && c.Leaf != nil {
			return math.Trunc(time.Until(c.Leaf.NotAfter).Seconds())
		}
	}
	return math.Inf(1)
}
