// Package tracing is the node agent's OpenTelemetry tracing, as upstream's
// kubelet (KubeletTracing, GA): a tracer provider built from the
// configuration's tracing by component-base's tracing.NewProvider (an OTLP
// gRPC exporter, parent-based sampling at samplingRatePerMillion), the
// CRI client's otelgrpc stats handler, the pod sync spans and the HTTP
// API's server spans. Without tracing in the configuration the provider is
// a no-op one: the instrumentation stays in place and records nothing.
package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
	"k8s.io/apimachinery/pkg/types"
	cbtracing "k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// ServiceName is the resource's service.name, upstream's
// server.ComponentKubelet: collectors and dashboards tell the node agent's
// spans by it.
const ServiceName = "kubelet"

// instrumentationScope is the tracer's name, upstream's for the kubelet's
// pod sync spans.
const instrumentationScope = "k8s.io/kubernetes/pkg/kubelet"

// flushTimeout bounds the export of the spans still buffered when the
// agent stops, so a collector away cannot hold up the shutdown.
const flushTimeout = 5 * time.Second

// Provider is a tracer provider that can be shut down; shutting it down
// exports the spans it still holds.
type Provider = cbtracing.TracerProvider

// NewProvider returns the provider for cfg, as upstream's
// newTracerProvider: none configured, a no-op one; otherwise an OTLP gRPC
// exporter to cfg's endpoint (localhost:4317 unset), with service.name
// "kubelet" and host.name hostName. Spans are sampled at
// samplingRatePerMillion unless their parent decides, so a rate of 0 (the
// default) exports nothing of the agent's own.
func NewProvider(ctx context.Context, cfg *tracingapi.TracingConfiguration, hostName string) (Provider, error) {
	if cfg == nil {
		return cbtracing.NewNoopTracerProvider(), nil
	}
	res := []resource.Option{resource.WithAttributes(
		semconv.ServiceNameKey.String(ServiceName),
		semconv.HostNameKey.String(hostName),
	)}
	return cbtracing.NewProvider(ctx, cfg, []otlptracegrpc.Option{}, res)
}

// Shutdown flushes p's spans within a bound of its own.
func Shutdown(p Provider) error {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	return p.Shutdown(ctx)
}

// Tracer is the tracer of the pod sync spans; a nil provider gives a
// no-op one.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(instrumentationScope)
}

// The instrumentation's OpenTelemetry metrics go nowhere: the agent's
// metrics are its Prometheus ones, and upstream discards these too.

// CRIStatsHandler instruments a CRI client connection as upstream's CRI
// client: a client span per call named by its full method
// (runtime.v1.RuntimeService/RunPodSandbox), with message events, the
// trace context propagated to the runtime.
func CRIStatsHandler(tp trace.TracerProvider) stats.Handler {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return otelgrpc.NewClientHandler(
		otelgrpc.WithMessageEvents(otelgrpc.ReceivedEvents, otelgrpc.SentEvents),
		otelgrpc.WithPropagators(cbtracing.Propagators()),
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	)
}

// APIClientWrapper instruments the API server's clients, as upstream's
// kubelet client configuration (tracing.WrapperFor).
func APIClientWrapper(tp trace.TracerProvider) func(http.RoundTripper) http.RoundTripper {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return cbtracing.WrapperFor(tp)
}

// Server wraps an HTTP API handler with a server span per request, named
// by route(r) as upstream's go-restful filter names its spans by the
// route's path; a request route names "" has none. public (the read-only
// port) starts a new trace rather than continuing the caller's, as
// upstream's WithPublicEndpoint.
func Server(h http.Handler, tp trace.TracerProvider, route func(*http.Request) string, public bool) http.Handler {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	opts := []otelhttp.Option{
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(cbtracing.Propagators()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return route(r) }),
		otelhttp.WithFilter(func(r *http.Request) bool { return route(r) != "" }),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
	if public {
		opts = append(opts, otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }))
	}
	return otelhttp.NewHandler(h, "kubelet", opts...)
}

// PodSpan starts one of the pod sync spans (syncPod, syncTerminatingPod,
// syncTerminatedPod) with upstream's attributes; updateType, when set, is
// syncPod's k8s.pod.update_type. end closes it, recording err.
func PodSpan(ctx context.Context, tr trace.Tracer, name string, uid types.UID, podName, namespace, updateType string) (context.Context, func(err error)) {
	attrs := []attribute.KeyValue{
		semconv.K8SPodUIDKey.String(string(uid)),
		attribute.String("k8s.pod", namespace+"/"+podName),
		semconv.K8SPodNameKey.String(podName),
	}
	if updateType != "" {
		attrs = append(attrs, attribute.String("k8s.pod.update_type", updateType))
	}
	attrs = append(attrs, semconv.K8SNamespaceNameKey.String(namespace))
	ctx, span := tr.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
