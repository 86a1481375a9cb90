package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// Evictions is upstream's kubelet_evictions: pods evicted, by the
	// signal whose threshold was met.
	Evictions = kubeletFamily.counterVec("evictions", "Cumulative number of pod evictions by eviction signal", "eviction_signal")

	// EvictionStatsAge is upstream's kubelet_eviction_stats_age_seconds:
	// how old the statistics of a met threshold were when they evicted.
	EvictionStatsAge = kubeletFamily.histogramVec("eviction_stats_age_seconds", "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal", prometheus.DefBuckets, "eviction_signal")

	// Preemptions is upstream's kubelet_preemptions: pods stopped to admit
	// a critical pod, by the first resource it lacked.
	Preemptions = kubeletFamily.counterVec("preemptions", "Cumulative number of pod preemptions by preemption resource", "preemption_signal")
)

func init() {
	Registry.MustRegister(Evictions, EvictionStatsAge, Preemptions)
}
