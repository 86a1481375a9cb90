package probe

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/actorlet/actorlet/internal/probe/action"
)

// probeGRPC calls the standard grpc.health.v1 Health/Check for service in
// plaintext, as upstream's gRPC prober (TLS is behind an alpha gate that is
// off by default, under which the API server drops the mode): SERVING is a
// success, anything else (no connection within timeout, no health
// service, another status) a failure with upstream's text. It never errors.
func probeGRPC(ctx context.Context, host, service string, port int, timeout time.Duration) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(action.UserAgent("probe")),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return action.Dialer().DialContext(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	// As upstream (which dials with WithBlock), the probe waits for the
	// connection so that its failure says it could not connect rather than
	// a generic Unavailable from the call.
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			conn.Close()
			return failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, ctx.Err()), nil
		}
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}),
		&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return failure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
			case codes.DeadlineExceeded:
				return failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return failure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return success, "service healthy", nil
}
