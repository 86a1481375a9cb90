package tracing

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracingapi "k8s.io/component-base/tracing/api/v1"
)

func TestPodSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := Tracer(tp)

	_, end := PodSpan(context.Background(), tr, "syncPod", "u1", "web", "default", "create")
	end(nil)
	_, end = PodSpan(context.Background(), tr, "syncTerminatingPod", "u1", "web", "default", "")
	end(errors.New("boom"))

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	tests := []struct {
		name   string
		attrs  map[attribute.Key]string
		status codes.Code
	}{
		{"syncPod", map[attribute.Key]string{"k8s.pod.uid": "u1", "k8s.pod": "default/web", "k8s.pod.name": "web",
			"k8s.namespace.name": "default", "k8s.pod.update_type": "create"}, codes.Unset},
		{"syncTerminatingPod", map[attribute.Key]string{"k8s.pod.uid": "u1", "k8s.pod": "default/web", "k8s.pod.name": "web",
			"k8s.namespace.name": "default"}, codes.Error},
	}
	for i, tc := range tests {
		s := spans[i]
		if s.Name() != tc.name {
			t.Errorf("span %d = %q, want %q", i, s.Name(), tc.name)
		}
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.String()
		}
		if len(got) != len(tc.attrs) {
			t.Errorf("%s: attributes %v, want %v", tc.name, got, tc.attrs)
		}
		for k, v := range tc.attrs {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got[k], v)
			}
		}
		if s.Status().Code != tc.status {
			t.Errorf("%s: status %v, want %v", tc.name, s.Status().Code, tc.status)
		}
	}
}

// TestNewProvider: no tracing configured is a provider that samples
// nothing; a configured one is built without reaching its endpoint, and
// samples at its rate unless a parent decided.
func TestNewProvider(t *testing.T) {
	endpoint := "127.0.0.1:1"
	rate := func(n int32) *int32 { return &n }
	tests := []struct {
		name    string
		cfg     *tracingapi.TracingConfiguration
		sampled bool
	}{
		{"unset", nil, false},
		{"rate unset", &tracingapi.TracingConfiguration{Endpoint: &endpoint}, false},
		{"rate 0", &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: rate(0)}, false},
		{"every span", &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: rate(1000000)}, true},
	}
	for _, tc := range tests {
		tp, err := NewProvider(context.Background(), tc.cfg, "node-a")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, span := Tracer(tp).Start(context.Background(), "x")
		if got := span.SpanContext().IsSampled(); got != tc.sampled {
			t.Errorf("%s: sampled = %v, want %v", tc.name, got, tc.sampled)
		}
		span.End()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing listens: the flush gives up at once
		_ = tp.Shutdown(ctx)
	}
}
