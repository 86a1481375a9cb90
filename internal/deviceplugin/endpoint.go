package deviceplugin

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/actorlet/actorlet/internal/unixgrpc"

	"google.golang.org/grpc"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// dialTimeout bounds the dial of a registering plugin, as upstream's.
const dialTimeout = 10 * time.Second

// Endpoint is the client of one registered plugin.
type Endpoint struct {
	Resource string
	Socket   string
	Options  *api.DevicePluginOptions
	conn     *grpc.ClientConn
	client   api.DevicePluginClient
}

func dial(ctx context.Context, resource, socket string) (*Endpoint, error) {
	// A socket that is not there fails at once rather than at the end of
	// the wait for a connection.
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("failed to dial device plugin: %v", err)
	}
	conn, err := unixgrpc.Dial(socket)
	if err != nil {
		return nil, fmt.Errorf("failed to dial device plugin: %v", err)
	}
	e := &Endpoint{Resource: resource, Socket: socket, conn: conn, client: api.NewDevicePluginClient(conn)}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	opts, err := e.client.GetDevicePluginOptions(ctx, &api.Empty{}, grpc.WaitForReady(true))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("failed to get device plugin options: %v", err)
	}
	e.Options = opts
	return e, nil
}

// Close closes the connection; a Watch in progress ends.
func (e *Endpoint) Close() { _ = e.conn.Close() }

// Watch runs the ListAndWatch stream until it ends (the plugin gone, or
// ctx done), giving update each list of devices the plugin sends.
func (e *Endpoint) Watch(ctx context.Context, update func([]*api.Device)) error {
	stream, err := e.client.ListAndWatch(ctx, &api.Empty{})
	if err != nil {
		return err
	}
	for {
		r, err := stream.Recv()
		if err != nil {
			return err
		}
		update(r.Devices)
	}
}

// Preferred asks the plugin which size devices of available it prefers,
// mustInclude among them (GetPreferredAllocation).
func (e *Endpoint) Preferred(ctx context.Context, available, mustInclude []string, size int) ([]string, error) {
	r, err := e.client.GetPreferredAllocation(ctx, &api.PreferredAllocationRequest{ContainerRequests: []*api.ContainerPreferredAllocationRequest{{
		AvailableDeviceIDs: available, MustIncludeDeviceIDs: mustInclude, AllocationSize: int32(size)}}})
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %v", err)
	}
	if len(r.ContainerResponses) == 0 {
		return nil, nil
	}
	return r.ContainerResponses[0].DeviceIDs, nil
}

// Allocate asks the plugin for one container's run options for devices.
func (e *Endpoint) Allocate(ctx context.Context, devices []string) (*api.ContainerAllocateResponse, error) {
	r, err := e.client.Allocate(ctx, &api.AllocateRequest{ContainerRequests: []*api.ContainerAllocateRequest{{DevicesIds: devices}}})
	if err != nil {
		return nil, err
	}
	if len(r.ContainerResponses) == 0 {
		return nil, fmt.Errorf("no containers return in allocation response %v", r)
	}
	return r.ContainerResponses[0], nil
}

// PreStart is PreStartContainer, for plugins whose options require it
// before each start of a container with their devices.
func (e *Endpoint) PreStart(ctx context.Context, devices []string) error {
	if _, err := e.client.PreStartContainer(ctx, &api.PreStartContainerRequest{DevicesIds: devices}); err != nil {
		return fmt.Errorf("device plugin PreStartContainer rpc failed with err: %v", err)
	}
	return nil
}
