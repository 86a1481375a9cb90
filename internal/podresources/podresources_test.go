package podresources

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
)

type source struct{}

func (source) Pods(context.Context) ([]*v1.Pod, error) {
	always := v1.ContainerRestartPolicyAlways
	p := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}, {Name: "side", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}}}}
	p.Name, p.Namespace, p.UID = "p", "ns", "uid"
	return []*v1.Pod{p}, nil
}

func (source) Devices(context.Context) (map[types.UID]map[string][]*api.ContainerDevices, []*api.ContainerDevices, error) {
	d := &api.ContainerDevices{ResourceName: "example.com/r", DeviceIds: []string{"d1"}}
	return map[types.UID]map[string][]*api.ContainerDevices{"uid": {"app": {d}}},
		[]*api.ContainerDevices{d, {ResourceName: "example.com/r", DeviceIds: []string{"d2"}}}, nil
}

type managers struct{}

func (managers) Container(_ *v1.Pod, c string) ([]int64, []*api.ContainerMemory) {
	if c == "app" {
		return []int64{1}, nil
	}
	return nil, nil
}
func (managers) Allocatable() ([]int64, []*api.ContainerMemory) { return []int64{0, 1}, nil }

func TestServer(t *testing.T) {
	dir, err := os.MkdirTemp("", "pr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "pod-resources", "kubelet.sock")
	s, err := Serve(path, source{}, managers{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("directory: %v %v", fi.Mode(), err)
	}
	conn, err := grpc.NewClient("passthrough:///"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := api.NewPodResourcesListerClient(conn)
	ctx := context.Background()
	list, err := c.List(ctx, &api.ListPodResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ctr := range list.PodResources[0].Containers {
		got = append(got, fmt.Sprintf("%s:%v:%v", ctr.Name, len(ctr.Devices), ctr.CpuIds))
	}
	// The sidecar and the app container, not the init container.
	if strings.Join(got, " ") != "side:0:[] app:1:[1]" {
		t.Errorf("List: %s", got)
	}
	if _, err := c.Get(ctx, &api.GetPodResourcesRequest{PodName: "x", PodNamespace: "ns"}); err == nil || !strings.Contains(err.Error(), "pod x in namespace ns not found") {
		t.Errorf("Get of a pod not there: %v", err)
	}
	alloc, err := c.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	if err != nil || len(alloc.Devices) != 2 || len(alloc.CpuIds) != 2 {
		t.Errorf("GetAllocatableResources: %v %v", alloc, err)
	}
	// Past upstream's burst, requests are refused.
	limited := false
	for i := 0; i < 50 && !limited; i++ {
		_, err := c.List(ctx, &api.ListPodResourcesRequest{})
		limited = status.Code(err) == codes.ResourceExhausted
	}
	if !limited {
		t.Error("no request refused by the rate limit")
	}
}
