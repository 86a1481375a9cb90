// Package tracing runs actorlet with tracing configured against an OTLP
// gRPC receiver the test starts on loopback (the collector's trace
// service), runs a static pod and removes it, and checks the spans that
// arrive: service.name "kubelet", the pod's sync spans and the CRI calls
// under them. Upstream kubelet v1.37.2 is the reference:
//
//	TRACING_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/tracing/
package tracing

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// TRACING_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "TRACING_KUBELET") }

// span is what the test looks at of one exported span.
type span struct {
	service, host string
	name          string
	traceID       string
	id, parent    string
	attrs         map[string]string
}

// receiver is an OTLP trace service that keeps every span exported to it.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []span
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{service: res["service.name"], host: res["host.name"], name: s.Name, traceID: fmt.Sprintf("%x", s.TraceId),
					id: fmt.Sprintf("%x", s.SpanId), parent: fmt.Sprintf("%x", s.ParentSpanId), attrs: attrs(s.Attributes)})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.GetValue().GetStringValue()
	}
	return m
}

// startReceiver serves a receiver on a loopback port until the test ends.
func startReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return r, l.Addr().String()
}

// TestSpans: with every span sampled, a static pod's life shows as
// upstream's kubelet shows it: syncPod spans of the pod with its
// attributes, the CRI calls as client spans named by their method, the
// sandbox's creation inside a syncPod, syncTerminatingPod once the pod is
// removed, and the read-only port's /pods requests; all of service
// "kubelet" on the node's host name.
func TestSpans(t *testing.T) {
	r, addr := startReceiver(t)
	opts := []agent.NodeOption{agent.WithConfig(fmt.Sprintf("tracing:\n  endpoint: %s\n  samplingRatePerMillion: 1000000\n", addr))}
	if kubelet.Upstream {
		// The harness's standalone node has actorlet's debug flags:
		// upstream's kubelet runs joined to the API server.
		opts = append(opts, agent.InCluster())
	}
	n := agent.NewNode(t, kubelet.Binary, kubelet.Options(opts...)...)
	n.Start()
	n.WriteManifest("traced.yaml", agent.Manifest("traced", agent.SleepSpec("c", n.Env.BusyboxImage, 1)))
	pod := n.Running("traced", 90*time.Second)
	n.RemoveManifest("traced.yaml")

	has := func(name string, pred func(span) bool) func() error {
		return func() error {
			for _, s := range r.all() {
				if s.name == name && (pred == nil || pred(s)) {
					return nil
				}
			}
			return fmt.Errorf("no %s span yet; spans: %v", name, names(r.all()))
		}
	}
	ofPod := func(s span) bool { return s.attrs["k8s.pod.uid"] == string(pod.UID) }
	n.Eventually("syncTerminatingPod span", 90*time.Second, has("syncTerminatingPod", ofPod))
	// Stopping flushes what the exporter still holds.
	n.Stop(syscall.SIGTERM)

	spans := r.all()
	t.Logf("span names (upstream=%v): %v", kubelet.Upstream, names(spans))
	for _, s := range spans {
		if s.service != "kubelet" || s.host != n.Name {
			t.Errorf("span %s of service %q on host %q, want kubelet on %q", s.name, s.service, s.host, n.Name)
		}
	}
	var syncs []span
	for _, s := range spans {
		if s.name == "syncPod" && ofPod(s) {
			syncs = append(syncs, s)
		}
	}
	if len(syncs) == 0 {
		t.Fatalf("no syncPod span of pod %s", pod.UID)
	}
	want := map[string]string{"k8s.pod.name": pod.Name, "k8s.namespace.name": pod.Namespace,
		"k8s.pod": pod.Namespace + "/" + pod.Name, "k8s.pod.update_type": "create"}
	first := syncs[0]
	for k, v := range want {
		if first.attrs[k] != v {
			t.Errorf("first syncPod: %s = %q, want %q (attributes %v)", k, first.attrs[k], v, first.attrs)
		}
	}
	// The sandbox is created by a sync pass: its CRI span is in a syncPod's
	// trace.
	inSync := func(s span) bool {
		for _, p := range syncs {
			if p.traceID == s.traceID {
				return true
			}
		}
		return false
	}
	for _, method := range []string{"runtime.v1.RuntimeService/RunPodSandbox", "runtime.v1.RuntimeService/CreateContainer",
		"runtime.v1.RuntimeService/StartContainer"} {
		if err := has(method, inSync)(); err != nil {
			t.Errorf("%s in a syncPod's trace: %v", method, err)
		}
	}
	if err := has("runtime.v1.RuntimeService/StopPodSandbox", nil)(); err != nil {
		t.Error(err)
	}
	// The harness asks the read-only port for /pods: each request is a
	// server span named by its route.
	if err := has("/pods/", func(s span) bool { return s.attrs["http.request.method"] == "GET" || s.attrs["http.method"] == "GET" })(); err != nil {
		t.Error(err)
	}
}

// names are the distinct span names, sorted.
func names(spans []span) []string {
	set := map[string]bool{}
	for _, s := range spans {
		set[s.name] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
