package metrics

import (
	"context"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The families upstream's kubelet serves through component-base beside its
// own kubelet_*: the build and feature-gate information, client-go's
// rest_client_* and the kubelet server's kubelet_http_*, under upstream's
// names, labels and buckets.

var (
	// BuildInfo is upstream's kubernetes_build_info: 1, labelled with the
	// build. Its version is the kubelet's actorlet follows, with actorlet's
	// own as build metadata, as the Node reports it.
	BuildInfo = upstreamFamily.gaugeVec("kubernetes_build_info", "[BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
		"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform")

	// FeatureEnabled is upstream's kubernetes_feature_enabled: 1 for each
	// feature gate that is on, 0 for each that is off, by stage.
	FeatureEnabled = upstreamFamily.gaugeVec("kubernetes_feature_enabled", "[BETA] This metric records the data about the stage and enablement of a k8s feature.", "name", "stage")
)

// SetBuildInfo makes kubernetes_build_info report gitVersion (vX.Y.Z...).
func SetBuildInfo(gitVersion string) {
	major, minor := "", ""
	parts := strings.SplitN(strings.TrimPrefix(gitVersion, "v"), ".", 3)
	if len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	BuildInfo.WithLabelValues(major, minor, gitVersion, "", "", "", runtime.Version(), runtime.Compiler, runtime.GOOS+"/"+runtime.GOARCH).Set(1)
}

// SetFeatureEnabled records one feature gate. stage is upstream's spelling:
// ALPHA, BETA, DEPRECATED, or "" for a GA gate.
func SetFeatureEnabled(name, stage string, enabled bool) {
	v := 0.0
	if enabled {
		v = 1
	}
	FeatureEnabled.WithLabelValues(name, stage).Set(v)
}

// client-go's rest_client_* (component-base/metrics/prometheus/restclient).
var (
	restLatencyBuckets = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0}
	restSizeBuckets    = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}

	restRequestLatency  = upstreamFamily.histogramVec("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.", restLatencyBuckets, "verb", "host")
	restResolverLatency = upstreamFamily.histogramVec("rest_client_dns_resolution_duration_seconds", "DNS resolver latency in seconds. Broken down by host.",
		[]float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0}, "host")
	restRequestSize        = upstreamFamily.histogramVec("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.", restSizeBuckets, "verb", "host")
	restResponseSize       = upstreamFamily.histogramVec("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.", restSizeBuckets, "verb", "host")
	restRateLimiterLatency = upstreamFamily.histogramVec("rest_client_rate_limiter_duration_seconds", "Client side rate limiter latency in seconds. Broken down by verb, and host.", restLatencyBuckets, "verb", "host")
	restRequests           = upstreamFamily.counterVec("rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.", "code", "method", "host")
	restRetries            = upstreamFamily.counterVec("rest_client_request_retries_total", "Number of request retries, partitioned by status code, verb, and host.", "code", "verb", "host")
	restExecCertRotation   = upstreamFamily.histogram("rest_client_exec_plugin_certificate_rotation_age", "Histogram of the number of seconds the last auth exec plugin client certificate lived before being rotated. If auth exec plugin client certificates are unused, histogram will contain no data.",
		[]float64{600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000})
	restExecCalls               = upstreamFamily.counterVec("rest_client_exec_plugin_call_total", "Number of calls to an exec plugin, partitioned by the type of event encountered (no_error, plugin_execution_error, plugin_not_found_error, client_internal_error) and an optional exit code. The exit code will be set to 0 if and only if the plugin call was successful.", "code", "call_status")
	restExecPolicyCalls         = upstreamFamily.counterVec("rest_client_exec_plugin_policy_call_total", "Number of comparisons of an exec plugin to the plugin policy and allowlist (if any), partitioned by whether or not the policy permits the plugin", "allowed", "denied")
	restTransportCacheEntries   = upstreamFamily.gauge("rest_client_transport_cache_entries", "Number of transport entries in the internal cache.")
	restTransportCreateCalls    = upstreamFamily.counterVec("rest_client_transport_create_calls_total", "Number of calls to get a new transport, partitioned by the result of the operation hit: obtained from the cache, miss: created and added to the cache, miss-gc: recreated and added back to the cache after being garbage collected, uncacheable: created and not cached", "result")
	restTransportCAReloads      = upstreamFamily.counterVec("rest_client_transport_ca_reload_total", "Number of times a CA reload is attempted, partitioned by the result and reason for the reload attempt", "result", "reason")
	restTransportCertRotationGC = upstreamFamily.counter("rest_client_transport_cert_rotation_gc_calls_total", "Number of times a cert rotation goroutine cancel func is called via GC cleanup of the associated transport")
	restTransportCacheGC        = upstreamFamily.counterVec("rest_client_transport_cache_gc_calls_total", "Number of times a GC cleanup attempts to delete a transport cache entry, partitioned by the result: deleted, skipped", "result")

	// restExecCertExpiry is when the exec plugin's certificate expires;
	// nil (+Inf TTL) when no exec plugin manages one, as here.
	restExecCertExpiry atomic.Pointer[time.Time]
	restExecCertTTL    = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rest_client_exec_plugin_ttl_seconds",
		Help: upstreamFamily.help("Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the auth exec plugin. The value is in seconds until certificate expiry (negative if already expired). If auth exec plugins are unused or manage no TLS certificates, the value will be +INF.")},
		func() float64 {
			if e := restExecCertExpiry.Load(); e != nil {
				return time.Until(*e).Seconds()
			}
			return math.Inf(1)
		})
)

// The adapters through which client-go reports to the rest_client_*.
type (
	latencyAdapter  struct{ m *prometheus.HistogramVec }
	resolverAdapter struct{ m *prometheus.HistogramVec }
	sizeAdapter     struct{ m *prometheus.HistogramVec }
	resultAdapter   struct{ m *prometheus.CounterVec }
	expiryAdapter   struct{}
	rotationAdapter struct{ m prometheus.Histogram }
	callsAdapter    struct{ m *prometheus.CounterVec }
	labelAdapter    struct{ m *prometheus.CounterVec }
	gaugeAdapter    struct{ m prometheus.Gauge }
	counterAdapter  struct{ m prometheus.Counter }
)

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	a.m.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}
func (a resolverAdapter) Observe(_ context.Context, host string, d time.Duration) {
	a.m.WithLabelValues(host).Observe(d.Seconds())
}
func (a sizeAdapter) Observe(_ context.Context, verb, host string, size float64) {
	a.m.WithLabelValues(verb, host).Observe(size)
}
func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}
func (a resultAdapter) IncrementRetry(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}
func (expiryAdapter) Set(expiry *time.Time)          { restExecCertExpiry.Store(expiry) }
func (a rotationAdapter) Observe(d time.Duration)    { a.m.Observe(d.Seconds()) }
func (a callsAdapter) Increment(code int, s string)  { a.m.WithLabelValues(strconv.Itoa(code), s).Inc() }
func (a labelAdapter) Increment(label string)        { a.m.WithLabelValues(label).Inc() }
func (a labelAdapter) IncrementCAReload(r, s string) { a.m.WithLabelValues(r, s).Inc() }
func (a gaugeAdapter) Observe(v int)                 { a.m.Set(float64(v)) }
func (a counterAdapter) Increment()                  { a.m.Inc() }

// caReloadAdapter is labelAdapter under client-go's two-label interface.
type caReloadAdapter struct{ labelAdapter }

func (a caReloadAdapter) Increment(result, reason string) { a.IncrementCAReload(result, reason) }

func init() {
	Registry.MustRegister(BuildInfo, FeatureEnabled,
		restRequestLatency, restResolverLatency, restRequestSize, restResponseSize, restRateLimiterLatency,
		restRequests, restRetries, restExecCertTTL, restExecCertRotation, restExecCalls,
		restTransportCacheEntries, restTransportCreateCalls, restTransportCAReloads, restTransportCertRotationGC, restTransportCacheGC)
	// client-go takes the first registration only; nothing else in the
	// binary registers (component-base's adapters would, into a registry
	// /metrics does not serve).
	clientmetrics.Register(clientmetrics.RegisterOpts{
		ClientCertExpiry:             expiryAdapter{},
		ClientCertRotationAge:        rotationAdapter{restExecCertRotation},
		RequestLatency:               latencyAdapter{restRequestLatency},
		ResolverLatency:              resolverAdapter{restResolverLatency},
		RequestSize:                  sizeAdapter{restRequestSize},
		ResponseSize:                 sizeAdapter{restResponseSize},
		RateLimiterLatency:           latencyAdapter{restRateLimiterLatency},
		RequestResult:                resultAdapter{restRequests},
		RequestRetry:                 resultAdapter{restRetries},
		ExecPluginCalls:              callsAdapter{restExecCalls},
		ExecPluginPolicyCalls:        labelAdapter{restExecPolicyCalls},
		TransportCacheEntries:        gaugeAdapter{restTransportCacheEntries},
		TransportCreateCalls:         labelAdapter{restTransportCreateCalls},
		TransportCAReloads:           caReloadAdapter{labelAdapter{restTransportCAReloads}},
		TransportCertRotationGCCalls: counterAdapter{restTransportCertRotationGC},
		TransportCacheGCCalls:        labelAdapter{restTransportCacheGC},
	})
}

// The kubelet server's kubelet_http_* (pkg/kubelet/server/metrics).
var (
	HTTPRequests         = kubeletFamily.counterVec("http_requests_total", "Number of the http requests received since the server started", "method", "path", "server_type", "long_running")
	HTTPRequestsDuration = kubeletFamily.histogramVec("http_requests_duration_seconds", "Duration in seconds to serve http requests", prometheus.DefBuckets, "method", "path", "server_type", "long_running")
	HTTPInflightRequests = kubeletFamily.gaugeVec("http_inflight_requests", "Number of the inflight http requests", "method", "path", "server_type", "long_running")
)

func init() {
	Registry.MustRegister(HTTPRequests, HTTPRequestsDuration, HTTPInflightRequests)
}

// Values of kubelet_http_*'s server_type label.
const (
	ServerReadOnly  = "readonly"
	ServerReadWrite = "readwrite"
)

// httpPaths are the path label's values, upstream's metric buckets: the
// first path segment of each handler it installs (two under /metrics).
// Any other path is "other", so that a client cannot grow the label set.
var httpPaths = map[string]bool{
	"healthz": true, "pods": true, "stats": true, "metrics": true, "metrics/cadvisor": true,
	"metrics/probes": true, "metrics/resource": true, "run": true, "exec": true, "attach": true,
	"portForward": true, "containerLogs": true, "configz": true, "runningpods": true,
	"pprof": true, "logs": true, "debug": true, "checkpoint": true, "flagz": true, "statusz": true,
}

var httpMethods = map[string]bool{"OPTIONS": true, "GET": true, "HEAD": true, "POST": true,
	"PUT": true, "DELETE": true, "TRACE": true, "CONNECT": true}

// longRunningPaths are upstream's long-running requests.
var longRunningPaths = map[string]bool{"exec": true, "attach": true, "portforward": true, "debug": true}

// HTTPPath is the path label of a request's URL path, as upstream buckets it.
func HTTPPath(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	root := parts[0]
	if root == "metrics" && len(parts) > 1 {
		root += "/" + parts[1]
	}
	if httpPaths[root] {
		return root
	}
	return "other"
}

// InstrumentHTTP counts and times the requests h serves in kubelet_http_*,
// as upstream's kubelet server does for serverType's listener.
func InstrumentHTTP(serverType string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		if !httpMethods[method] {
			method = "other"
		}
		path := HTTPPath(r.URL.Path)
		labels := []string{method, path, serverType, strconv.FormatBool(longRunningPaths[path])}
		HTTPRequests.WithLabelValues(labels...).Inc()
		inflight := HTTPInflightRequests.WithLabelValues(labels...)
		inflight.Inc()
		defer inflight.Dec()
		start := time.Now()
		defer func() { HTTPRequestsDuration.WithLabelValues(labels...).Observe(time.Since(start).Seconds()) }()
		h.ServeHTTP(w, r)
	})
}
