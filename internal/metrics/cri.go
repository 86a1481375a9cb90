package metrics

import (
	"context"
	"strings"
	"time"
	"unicode"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criOperations maps CRI methods to upstream's operation_type values
// (pkg/kubelet/kuberuntime/instrumented_services.go), which are not always
// the method name in snake case: RunPodSandbox is run_podsandbox,
// UpdateContainerResources is update_container.
var criOperations = map[string]string{
	// RuntimeService
	"Version":                   "version",
	"Status":                    "status",
	"RunPodSandbox":             "run_podsandbox",
	"StopPodSandbox":            "stop_podsandbox",
	"RemovePodSandbox":          "remove_podsandbox",
	"PodSandboxStatus":          "podsandbox_status",
	"ListPodSandbox":            "list_podsandbox",
	"CreateContainer":           "create_container",
	"StartContainer":            "start_container",
	"StopContainer":             "stop_container",
	"RemoveContainer":           "remove_container",
	"ListContainers":            "list_containers",
	"ContainerStatus":           "container_status",
	"UpdateContainerResources":  "update_container",
	"ReopenContainerLog":        "reopen_container_log",
	"ExecSync":                  "exec_sync",
	"Exec":                      "exec",
	"Attach":                    "attach",
	"PortForward":               "port_forward",
	"ContainerStats":            "container_stats",
	"ListContainerStats":        "list_container_stats",
	"PodSandboxStats":           "podsandbox_stats",
	"ListPodSandboxStats":       "list_podsandbox_stats",
	"UpdateRuntimeConfig":       "update_runtime_config",
	"UpdatePodSandboxResources": "update_podsandbox_resources",
	"CheckpointContainer":       "checkpoint_container",
	"CheckpointPod":             "checkpoint_pod",
	"RestorePod":                "restore_pod",
	"GetContainerEvents":        "get_container_events",
	"ListMetricDescriptors":     "list_metric_descriptors",
	"ListPodSandboxMetrics":     "list_podsandbox_metrics",
	"RuntimeConfig":             "runtime_config",
	// ImageService
	"ListImages":  "list_images",
	"ImageStatus": "image_status",
	"PullImage":   "pull_image",
	"RemoveImage": "remove_image",
	"ImageFsInfo": "image_fs_info",
}

// runPodSandboxMethod is the call that creates a pod's sandbox: upstream
// counts it as a started pod.
const runPodSandboxMethod = "RunPodSandbox"

// OperationType returns the operation_type label of a gRPC method of the
// CRI, "/runtime.v1.RuntimeService/RunPodSandbox" → "run_podsandbox". A
// method upstream does not instrument (one added to the CRI later) gets its
// name in snake case, so that the label set stays bounded by the API.
func OperationType(fullMethod string) string {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	if op, ok := criOperations[method]; ok {
		return op
	}
	return snakeCase(method)
}

func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CRIUnaryInterceptor records every unary call on a CRI connection in
// kubelet_runtime_operations_total, _errors_total and _duration_seconds,
// and sandbox creations in kubelet_started_pods_total and
// kubelet_started_pods_errors_total. It measures at the gRPC edge, so every
// caller (pod-workers, PLEG, GC, status-reporter, the HTTP API) is counted
// without instrumenting each. Install it with grpc.WithChainUnaryInterceptor
// on both the runtime and the image service connections.
func CRIUnaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	op := OperationType(method)
	sandbox := strings.HasSuffix(method, "/"+runPodSandboxMethod)
	if sandbox {
		StartedPods.Inc()
	}
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	took := time.Since(start).Seconds()
	RuntimeOperations.WithLabelValues(op).Inc()
	RuntimeOperationsDuration.WithLabelValues(op).Observe(took)
	if err != nil {
		RuntimeOperationsErrors.WithLabelValues(op).Inc()
	}
	if sandbox {
		// By the handler of the pod's RuntimeClass, as upstream's
		// instrumented runtime service.
		handler := ""
		if r, ok := req.(*runtimeapi.RunPodSandboxRequest); ok {
			handler = r.GetRuntimeHandler()
		}
		RunPodSandboxDuration.WithLabelValues(handler).Observe(took)
		if err != nil {
			RunPodSandboxErrors.WithLabelValues(handler).Inc()
			StartedPodsErrors.Inc()
		}
	}
	return err
}

var _ grpc.UnaryClientInterceptor = CRIUnaryInterceptor
