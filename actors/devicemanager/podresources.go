package devicemanager

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/actorlet/actorlet/messages"
)

// podSource answers the podresources API from the pod-manager's pods and
// the device-manager's allocations, asked from the API's goroutines.
type podSource struct {
	system        *actor.ActorSystem
	devices, pods *actor.PID
}

func (s *podSource) ask(pid *actor.PID, msg messages.Message) (any, error) {
	if pid == nil {
		return nil, fmt.Errorf("%T: no receiver", msg)
	}
	return s.system.Root.RequestFuture(pid, msg, callTimeout).Result()
}

func (s *podSource) Pods(context.Context) ([]*v1.Pod, error) {
	res, err := s.ask(s.pods, &messages.ListPods{})
	if err != nil {
		return nil, err
	}
	list, ok := res.(*messages.PodList)
	if !ok {
		return nil, fmt.Errorf("pods: unexpected answer %T", res)
	}
	active := activePods(list)
	var out []*v1.Pod
	for i := range list.Pods {
		if active[list.Pods[i].UID] {
			out = append(out, &list.Pods[i])
		}
	}
	return out, nil
}

func (s *podSource) Devices(context.Context) (map[types.UID]map[string][]*api.ContainerDevices, []*api.ContainerDevices, error) {
	res, err := s.ask(s.devices, &messages.ListDeviceAllocations{})
	if err != nil {
		return nil, nil, err
	}
	a, ok := res.(*messages.DeviceAllocations)
	if !ok {
		return nil, nil, fmt.Errorf("devices: unexpected answer %T", res)
	}
	pods := map[types.UID]map[string][]*api.ContainerDevices{}
	for uid, containers := range a.Pods {
		pods[uid] = map[string][]*api.ContainerDevices{}
		for name, list := range containers {
			for _, d := range list {
				pods[uid][name] = append(pods[uid][name], containerDevices(d)...)
			}
		}
	}
	var allocatable []*api.ContainerDevices
	for _, d := range a.Allocatable {
		allocatable = append(allocatable, containerDevices(d)...)
	}
	return pods, allocatable, nil
}

// containerDevices reports one resource's devices as upstream's
// containerDevicesFromResourceDeviceInstances: an entry per device and
// NUMA node (one without topology for a device with none).
func containerDevices(d messages.DeviceIDs) []*api.ContainerDevices {
	var out []*api.ContainerDevices
	for _, id := range d.IDs {
		nodes := d.NUMA[id]
		if len(nodes) == 0 {
			out = append(out, &api.ContainerDevices{ResourceName: d.Resource, DeviceIds: []string{id}})
		}
		for _, n := range nodes {
			out = append(out, &api.ContainerDevices{ResourceName: d.Resource, DeviceIds: []string{id},
				Topology: &api.TopologyInfo{Nodes: []*api.NUMANode{{ID: n}}}})
		}
	}
	return out
}
