package dra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/unixgrpc"
)

// CallTimeout is upstream's bound on one call of a driver's DRAPlugin
// service.
const CallTimeout = 45 * time.Second

// Services are the DRAPlugin gRPC services actorlet speaks, most recent
// first, as upstream's: a driver is registered through the first it also
// lists in its supported versions.
var Services = []string{drapb.DRAPluginService, drapbv1beta1.DRAPluginService}

var errEmptyName = errors.New("DRA driver name is empty")

// ChooseService is the service a driver is spoken to through, from the
// versions it listed in GetInfo, or upstream's reason to refuse it.
func ChooseService(supported []string) (string, error) {
	if len(supported) == 0 {
		return "", errors.New("empty list of supported gRPC services (aka supported versions)")
	}
	for _, s := range supported {
		for _, ours := range Services {
			if s == ours {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("none of services supported by the plugin (%q) are supported by the kubelet (%q)", supported, Services)
}

// call dials the driver, runs f with a v1 client of it (over v1beta1
// when that is the driver's service) and closes the connection.
func call[T any](ctx context.Context, d Driver, f func(context.Context, drapb.DRAPluginClient) (T, error)) (T, error) {
	var zero T
	conn, err := unixgrpc.Dial(d.Endpoint, grpc.WithUnaryInterceptor(timed(d.Name)))
	if err != nil {
		return zero, fmt.Errorf("create gRPC connection to DRA driver %s plugin at endpoint %s: %w", d.Name, d.Endpoint, err)
	}
	defer conn.Close()
	var client drapb.DRAPluginClient
	switch d.Service {
	case drapb.DRAPluginService:
		client = drapb.NewDRAPluginClient(conn)
	case drapbv1beta1.DRAPluginService:
		client = drapbv1beta1.V1Beta1ClientWrapper{DRAPluginClient: drapbv1beta1.NewDRAPluginClient(conn)}
	default:
		return zero, fmt.Errorf("internal error: unsupported chosen service: %q", d.Service)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return f(ctx, client)
}

// timed observes each call of the driver in
// dra_grpc_operations_duration_seconds, by its gRPC method as sent (the
// v1beta1 service's for a driver spoken to through it) and status code,
// as upstream's interceptor.
func timed(driver string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		metrics.DRAGRPCOperationsDuration.WithLabelValues(driver, method, status.Code(err).String()).Observe(time.Since(start).Seconds())
		return err
	}
}

// Prepare calls the driver's NodePrepareResources for claims.
func Prepare(ctx context.Context, d Driver, claims []*drapb.Claim) (*drapb.NodePrepareResourcesResponse, error) {
	return call(ctx, d, func(ctx context.Context, c drapb.DRAPluginClient) (*drapb.NodePrepareResourcesResponse, error) {
		return c.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
	})
}

// Unprepare calls the driver's NodeUnprepareResources for claims.
func Unprepare(ctx context.Context, d Driver, claims []*drapb.Claim) (*drapb.NodeUnprepareResourcesResponse, error) {
	return call(ctx, d, func(ctx context.Context, c drapb.DRAPluginClient) (*drapb.NodeUnprepareResourcesResponse, error) {
		return c.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims})
	})
}

// WatchHealth runs the driver's NodeWatchResources stream through its
// HealthService until it ends or ctx is done, handing each report to
// report. A clean end (EOF) is nil.
func WatchHealth(ctx context.Context, d Driver, report func([]*drahealthv1.DeviceHealth)) error {
	conn, err := unixgrpc.Dial(d.Endpoint)
	if err != nil {
		return fmt.Errorf("create gRPC connection to DRA driver %s plugin at endpoint %s: %w", d.Name, d.Endpoint, err)
	}
	defer conn.Close()
	var client drahealthv1.DRAResourceHealthClient
	switch d.HealthService {
	case drahealthv1.DRAResourceHealthService:
		client = drahealthv1.NewDRAResourceHealthClient(conn)
	case drahealthv1alpha1.DRAResourceHealthService:
		client = drahealthv1.V1Alpha1ClientWrapper{Client: drahealthv1alpha1.NewDRAResourceHealthClient(conn)}
	default:
		return fmt.Errorf("internal error: unsupported chosen health service: %q", d.HealthService)
	}
	stream, err := client.NodeWatchResources(ctx, &drahealthv1.NodeWatchResourcesRequest{})
	if err != nil {
		return err
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		report(resp.GetDevices())
	}
}
