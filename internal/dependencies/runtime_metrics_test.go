package dependencies

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/metrics"
)

// fakeRuntime answers Version; every other call fails as unimplemented.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

func (fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeApiVersion: "v1"}, nil
}

func counter(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRuntimeConnectionIsInstrumented checks that the CRI connection records
// every call in the kubelet's runtime operation metrics, the handshake
// included.
func TestRuntimeConnectionIsInstrumented(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(server, fakeRuntime{})
	go func() { _ = server.Serve(l) }()
	defer server.Stop()

	versions := counter(t, metrics.RuntimeOperations.WithLabelValues("version"))
	statuses := counter(t, metrics.RuntimeOperations.WithLabelValues("status"))
	statusErrors := counter(t, metrics.RuntimeOperationsErrors.WithLabelValues("status"))
	conn, _, err := dialRuntime(context.Background(), "unix://"+sock, nil)
	if err != nil {
		t.Fatalf("dial the fake runtime: %v", err)
	}
	defer conn.Close()
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).Status(context.Background(), &runtimeapi.StatusRequest{}); err == nil {
		t.Fatal("Status of the fake runtime succeeded; want unimplemented")
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{`kubelet_runtime_operations_total{operation_type="version"}`, counter(t, metrics.RuntimeOperations.WithLabelValues("version")) - versions, 1},
		{`kubelet_runtime_operations_total{operation_type="status"}`, counter(t, metrics.RuntimeOperations.WithLabelValues("status")) - statuses, 1},
		{`kubelet_runtime_operations_errors_total{operation_type="status"}`, counter(t, metrics.RuntimeOperationsErrors.WithLabelValues("status")) - statusErrors, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s grew by %v, want %v", c.name, c.got, c.want)
		}
	}
}
