package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestOperationType(t *testing.T) {
	for _, tc := range []struct{ method, want string }{
		{"/runtime.v1.RuntimeService/Version", "version"},
		{"/runtime.v1.RuntimeService/RunPodSandbox", "run_podsandbox"},
		{"/runtime.v1.RuntimeService/StopPodSandbox", "stop_podsandbox"},
		{"/runtime.v1.RuntimeService/RemovePodSandbox", "remove_podsandbox"},
		{"/runtime.v1.RuntimeService/PodSandboxStatus", "podsandbox_status"},
		{"/runtime.v1.RuntimeService/ListPodSandbox", "list_podsandbox"},
		{"/runtime.v1.RuntimeService/CreateContainer", "create_container"},
		{"/runtime.v1.RuntimeService/StartContainer", "start_container"},
		{"/runtime.v1.RuntimeService/StopContainer", "stop_container"},
		{"/runtime.v1.RuntimeService/RemoveContainer", "remove_container"},
		{"/runtime.v1.RuntimeService/ListContainers", "list_containers"},
		{"/runtime.v1.RuntimeService/ContainerStatus", "container_status"},
		{"/runtime.v1.RuntimeService/UpdateContainerResources", "update_container"},
		{"/runtime.v1.RuntimeService/ExecSync", "exec_sync"},
		{"/runtime.v1.RuntimeService/ListContainerStats", "list_container_stats"},
		{"/runtime.v1.RuntimeService/ListPodSandboxStats", "list_podsandbox_stats"},
		{"/runtime.v1.RuntimeService/Status", "status"},
		{"/runtime.v1.RuntimeService/RuntimeConfig", "runtime_config"},
		{"/runtime.v1.ImageService/PullImage", "pull_image"},
		{"/runtime.v1.ImageService/ListImages", "list_images"},
		{"/runtime.v1.ImageService/ImageStatus", "image_status"},
		{"/runtime.v1.ImageService/RemoveImage", "remove_image"},
		{"/runtime.v1.ImageService/ImageFsInfo", "image_fs_info"},
		// A method upstream does not instrument: its name in snake case.
		{"/runtime.v1.RuntimeService/StreamPodSandboxes", "stream_pod_sandboxes"},
	} {
		if got := OperationType(tc.method); got != tc.want {
			t.Errorf("OperationType(%q) = %q, want %q", tc.method, got, tc.want)
		}
	}
}

func TestCRIUnaryInterceptor(t *testing.T) {
	failure := errors.New("rpc error: code = Unavailable")
	for _, tc := range []struct {
		name, method, op string
		err              error
		startedPod       bool
	}{
		{"a call that succeeds", "/runtime.v1.RuntimeService/ListContainers", "list_containers", nil, false},
		{"a call that fails", "/runtime.v1.ImageService/PullImage", "pull_image", failure, false},
		{"a sandbox started", "/runtime.v1.RuntimeService/RunPodSandbox", "run_podsandbox", nil, true},
		{"a sandbox that failed to start", "/runtime.v1.RuntimeService/RunPodSandbox", "run_podsandbox", failure, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() (total, errs, observed, started, startErrs float64) {
				return write(t, RuntimeOperations.WithLabelValues(tc.op)).GetCounter().GetValue(),
					write(t, RuntimeOperationsErrors.WithLabelValues(tc.op)).GetCounter().GetValue(),
					float64(write(t, RuntimeOperationsDuration.WithLabelValues(tc.op).(prometheus.Metric)).GetHistogram().GetSampleCount()),
					write(t, StartedPods).GetCounter().GetValue(),
					write(t, StartedPodsErrors).GetCounter().GetValue()
			}
			total0, errs0, observed0, started0, startErrs0 := read()
			invoked := false
			invoker := func(_ context.Context, method string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				invoked = method == tc.method
				return tc.err
			}
			if err := CRIUnaryInterceptor(context.Background(), tc.method, nil, nil, nil, invoker); err != tc.err {
				t.Fatalf("interceptor returned %v, want the invoker's %v", err, tc.err)
			}
			if !invoked {
				t.Fatal("the interceptor did not call the invoker with the method")
			}
			total, errs, observed, started, startErrs := read()
			wantErr, wantStarted, wantStartErr := 0.0, 0.0, 0.0
			if tc.err != nil {
				wantErr = 1
			}
			if tc.startedPod {
				wantStarted, wantStartErr = 1, wantErr
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"kubelet_runtime_operations_total", total - total0, 1},
				{"kubelet_runtime_operations_errors_total", errs - errs0, wantErr},
				{"kubelet_runtime_operations_duration_seconds count", observed - observed0, 1},
				{"kubelet_started_pods_total", started - started0, wantStarted},
				{"kubelet_started_pods_errors_total", startErrs - startErrs0, wantStartErr},
			} {
				if c.got != c.want {
					t.Errorf("%s{operation_type=%q} grew by %v, want %v", c.name, tc.op, c.got, c.want)
				}
			}
		})
	}
}

func TestRunPodSandboxByHandler(t *testing.T) {
	failure := errors.New("rpc error: code = Unknown desc = no runtime for \"kata\" is configured")
	for _, tc := range []struct {
		name, handler string
		req           any
		err           error
	}{
		{"default handler", "", &runtimeapi.RunPodSandboxRequest{}, nil},
		{"a class's handler", "runc", &runtimeapi.RunPodSandboxRequest{RuntimeHandler: "runc"}, nil},
		{"an unknown handler", "kata", &runtimeapi.RunPodSandboxRequest{RuntimeHandler: "kata"}, failure},
		{"no request", "", nil, failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func() (observed, errs float64) {
				return float64(write(t, RunPodSandboxDuration.WithLabelValues(tc.handler).(prometheus.Metric)).GetHistogram().GetSampleCount()),
					write(t, RunPodSandboxErrors.WithLabelValues(tc.handler)).GetCounter().GetValue()
			}
			observed0, errs0 := read()
			invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return tc.err }
			_ = CRIUnaryInterceptor(context.Background(), "/runtime.v1.RuntimeService/RunPodSandbox", tc.req, nil, nil, invoker)
			observed, errs := read()
			wantErr := 0.0
			if tc.err != nil {
				wantErr = 1
			}
			if observed-observed0 != 1 || errs-errs0 != wantErr {
				t.Errorf("runtime_handler=%q: duration count grew by %v (want 1), errors by %v (want %v)",
					tc.handler, observed-observed0, errs-errs0, wantErr)
			}
		})
	}
}
