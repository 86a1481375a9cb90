package dependencies

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/tracing"
)

// handshakeTimeout bounds the first contact with the runtime, so that a node
// agent started before its runtime says so quickly instead of hanging.
const handshakeTimeout = 10 * time.Second

// maxMessageSize is upstream's limit for CRI messages (16 MiB): container
// lists on a busy node are larger than gRPC's 4 MiB default.
const maxMessageSize = 16 * 1024 * 1024

// socketPath returns the filesystem path of a unix:// endpoint.
func socketPath(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("parse endpoint: %w", err)
	}
	if u.Scheme != "unix" {
		return "", fmt.Errorf("unsupported endpoint scheme %q: only unix:// sockets are supported", u.Scheme)
	}
	path := u.Path
	if path == "" {
		path = u.Opaque
	}
	if path == "" {
		return "", errors.New("endpoint has no socket path")
	}
	return path, nil
}

// dialRuntime connects to a CRI endpoint and performs the Version handshake.
// The socket is dialled plainly first: its error ("connect: connection
// refused", "no such file or directory") says more than gRPC's Unavailable.
// Each call is a client span of tp's (CRIStatsHandler).
func dialRuntime(ctx context.Context, endpoint string, tp trace.TracerProvider) (*grpc.ClientConn, *runtimeapi.VersionResponse, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	var dialer net.Dialer
	probe, err := dialer.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, nil, unwrapDialError(err)
	}
	_ = probe.Close()

	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(runtimeConnectParams()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		grpc.WithChainUnaryInterceptor(metrics.CRIUnaryInterceptor),
		grpc.WithStatsHandler(tracing.CRIStatsHandler(tp)),
	)
	if err != nil {
		return nil, nil, err
	}
	version, err := runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("CRI Version handshake: %w", err)
	}
	return conn, version, nil
}

// runtimeConnectParams is how the connection comes back after the runtime
// restarted, as upstream's CRI client: gRPC retries the dial with a
// backoff that grows to 3 s. gRPC's default grows to 2 min: after a long
// outage the agent went on failing its calls, and the node reporting the
// runtime down, long after the runtime was back (docs/reliability.md,
// containerd-restart).
func runtimeConnectParams() grpc.ConnectParams {
	p := grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: 5 * time.Second}
	p.Backoff.BaseDelay, p.Backoff.MaxDelay = 100*time.Millisecond, 3*time.Second
	return p
}

// unwrapDialError reduces "dial unix /x: connect: connection refused" to its
// cause, since the caller already names the endpoint.
func unwrapDialError(err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		msg := opErr.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "connect") {
			msg = msg[i+2:]
		}
		return errors.New(msg)
	}
	return err
}
