package metrics

var (
	// GracefulShutdownStartTime and GracefulShutdownEndTime are
	// upstream's kubelet_graceful_shutdown_{start,end}_time_seconds: when
	// the last node shutdown began and when its pods were terminated.
	GracefulShutdownStartTime = kubeletFamily.gauge("graceful_shutdown_start_time_seconds", "Last graceful shutdown start time since unix epoch in seconds")
	GracefulShutdownEndTime   = kubeletFamily.gauge("graceful_shutdown_end_time_seconds", "Last graceful shutdown end time since unix epoch in seconds")
)

func init() {
	Registry.MustRegister(GracefulShutdownStartTime, GracefulShutdownEndTime)
}
