package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// DeviceCount is one device plugin resource's devices: Capacity all of
// them, Allocatable the healthy ones (0 and 0: the resource went).
type DeviceCount struct{ Capacity, Allocatable int64 }

// DevicesChanged is every device plugin resource's count, whole, sent
// whenever one changes and when the device-manager starts.
// Sender: the device-manager. Receivers: the status-reporter (the Node's
// capacity and allocatable) and the pod-manager (admission: a pod asking
// for more devices than are free is rejected, as upstream's device
// manager rejects it).
type DevicesChanged struct {
	Resources map[v1.ResourceName]DeviceCount
	// Holders are the pods that hold devices of each resource, sorted
	// (after a restart: the checkpoint's). Admission does not count a
	// resource again for a pod that holds its devices, as upstream's
	// device manager reuses a container's devices: a restarted node keeps
	// its running pods before their plugins register again.
	Holders map[v1.ResourceName][]types.UID
}

func (m *DevicesChanged) Summary() string {
	return fmt.Sprintf("devices of %d resources", len(m.Resources))
}

// AllocateDevices asks for the devices of one container about to be
// created: its devices of each device plugin resource it asks for,
// allocated now (or at an earlier start, or before a restart: the
// checkpoint), and each plugin's PreStartContainer done where required.
// Sender: a pod's CRI edge (a request from the pod-worker's goroutine).
// Receiver: the device-manager, which answers ContainerDevices.
type AllocateDevices struct {
	Pod       *v1.Pod
	Container string
}

func (m *AllocateDevices) Summary() string {
	return fmt.Sprintf("allocate devices to %s/%s container %s", m.Pod.Namespace, m.Pod.Name, m.Container)
}

// ContainerDevices answers AllocateDevices: the plugins' answers to
// apply to the container's configuration, in the order of their
// resources' names, or why the container cannot have its devices.
type ContainerDevices struct {
	Responses []*api.ContainerAllocateResponse
	Err       error
}

func (m *ContainerDevices) Summary() string {
	if m.Err != nil {
		return "devices: " + m.Err.Error()
	}
	return fmt.Sprintf("devices of %d resources", len(m.Responses))
}

// ListDeviceAllocations asks for the devices allocated to containers and
// those allocatable (the podresources API).
// Sender: the podresources server (from outside the tree). Receiver: the
// device-manager, which answers DeviceAllocations.
type ListDeviceAllocations struct{}

func (m *ListDeviceAllocations) Summary() string { return "list device allocations" }

// DeviceIDs are one resource's devices, with the NUMA nodes of each.
type DeviceIDs struct {
	Resource string
	IDs      []string
	// NUMA are the NUMA nodes of the devices, by ID (none: no topology).
	NUMA map[string][]int64
}

// DeviceAllocations answers ListDeviceAllocations.
type DeviceAllocations struct {
	// Pods are the devices of each container (by name) of each pod.
	Pods map[types.UID]map[string][]DeviceIDs
	// Allocatable are the healthy devices of each resource.
	Allocatable []DeviceIDs
}

func (m *DeviceAllocations) Summary() string {
	return fmt.Sprintf("devices of %d pods", len(m.Pods))
}

// DevicePluginConnected, DevicesListed, DevicePluginStreamEnded,
// DeviceGraceOver, DevicePreferred, DevicesAllocated and
// DevicePodsListed are the device-manager's own: what its registration
// server, its plugins' streams, its timers and its calls to plugins and to
// the pod-manager report back. Sender and receiver: the device-manager
// (from its own goroutines).
type (
	DevicePluginConnected struct {
		Resource string
		// Endpoint is the plugin's client (*deviceplugin.Endpoint).
		Endpoint            any
		PreStart, Preferred bool
	}
	DevicesListed struct {
		Resource string
		Gen      int
		Devices  []*api.Device
	}
	DevicePluginStreamEnded struct {
		Resource string
		Gen      int
		Err      error
	}
	DeviceGraceOver struct {
		Resource string
		Gen      int
	}
	DevicePreferred struct {
		ID       int
		Resource string
		IDs      []string
		Err      error
	}
	DevicesAllocated struct {
		ID        int
		Responses map[string]*api.ContainerAllocateResponse
		Err       error
	}
	DevicePodsListed struct {
		// Active are the pods that may hold devices; nil: not known
		// (the pod sources not all read yet, or the pod-manager silent).
		Active map[types.UID]bool
	}
)

func (m *DevicePluginConnected) Summary() string { return "device plugin registered: " + m.Resource }
func (m *DevicesListed) Summary() string {
	return fmt.Sprintf("%s: %d devices", m.Resource, len(m.Devices))
}
func (m *DevicePluginStreamEnded) Summary() string {
	return fmt.Sprintf("%s: device plugin gone: %v", m.Resource, m.Err)
}
func (m *DeviceGraceOver) Summary() string { return m.Resource + ": grace over" }
func (m *DevicePreferred) Summary() string { return m.Resource + ": preferred allocation" }
func (m *DevicesAllocated) Summary() string {
	return fmt.Sprintf("allocated %d resources", len(m.Responses))
}
func (m *DevicePodsListed) Summary() string { return fmt.Sprintf("%d active pods", len(m.Active)) }

// DevicesResync makes the device-manager free the devices of pods gone
// and send DevicesChanged again (a restarted receiver lost it).
// Sender and receiver: the device-manager (a timer).
type DevicesResync struct{}

func (m *DevicesResync) Summary() string { return "devices resync" }
