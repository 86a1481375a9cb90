package podruntime

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/nodecapacity"
)

// DevicePlugins gives a container about to be created the device plugins'
// answers for the devices it asks for (the device-manager): an error
// fails the container's creation, as upstream's GetResources.
type DevicePlugins interface {
	ContainerDevices(ctx context.Context, pod *v1.Pod, container string) ([]*api.ContainerAllocateResponse, error)
}

// asksForExtended: the container's limits name an extended resource,
// which only then a device plugin may serve.
func asksForExtended(c *v1.Container) bool {
	for name := range c.Resources.Limits {
		if nodecapacity.IsExtended(name) {
			return true
		}
	}
	return false
}

// deviceOptions reads the device plugins' answers for c, none when it
// asks for no extended resource or no device-manager runs.
func deviceOptions(ctx context.Context, pod *v1.Pod, c *v1.Container, opts Options) ([]*api.ContainerAllocateResponse, error) {
	if opts.DevicePlugins == nil || !asksForExtended(c) {
		return nil, nil
	}
	resps, err := opts.DevicePlugins.ContainerDevices(ctx, pod, c.Name)
	if err != nil {
		return nil, fmt.Errorf("failed to allocate devices of container %q: %w", c.Name, err)
	}
	return resps, nil
}

// applyDevices puts the plugins' answers into cfg as upstream's
// deviceRunContainerOptions and generateContainerConfig: the devices'
// environment, mounts and device nodes before the container's own (an
// entry of a later answer for a key or path already given is dropped, as
// upstream's), CDI device names, and annotations under the kubelet's own.
func applyDevices(cfg *runtimeapi.ContainerConfig, resps []*api.ContainerAllocateResponse) {
	if len(resps) == 0 {
		return
	}
	envs, mounts, devices := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var (
		envList   []*runtimeapi.KeyValue
		mountList []*runtimeapi.Mount
		devList   []*runtimeapi.Device
		cdi       []*runtimeapi.CDIDevice
		cdiSeen   = map[string]bool{}
		annots    = map[string]string{}
	)
	for _, r := range resps {
		for _, k := range slices.Sorted(maps.Keys(r.Envs)) {
			if !envs[k] {
				envs[k] = true
				envList = append(envList, &runtimeapi.KeyValue{Key: k, Value: []byte(r.Envs[k])})
			}
		}
		for _, m := range r.Mounts {
			if !mounts[m.ContainerPath] {
				mounts[m.ContainerPath] = true
				mountList = append(mountList, &runtimeapi.Mount{ContainerPath: m.ContainerPath, HostPath: m.HostPath, Readonly: m.ReadOnly})
			}
		}
		for _, d := range r.Devices {
			if !devices[d.ContainerPath] {
				devices[d.ContainerPath] = true
				devList = append(devList, &runtimeapi.Device{ContainerPath: d.ContainerPath, HostPath: d.HostPath, Permissions: d.Permissions})
			}
		}
		for _, d := range r.CdiDevices {
			if !cdiSeen[d.Name] {
				cdiSeen[d.Name] = true
				cdi = append(cdi, &runtimeapi.CDIDevice{Name: d.Name})
			}
		}
		for k, v := range r.Annotations {
			if _, dup := annots[k]; !dup {
				annots[k] = v
			}
		}
	}
	cfg.Envs = append(envList, cfg.Envs...)
	cfg.Mounts = append(mountList, cfg.Mounts...)
	cfg.Devices = append(devList, cfg.Devices...)
	cfg.CDIDevices = append(cdi, cfg.CDIDevices...)
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	for k, v := range annots {
		// The kubelet's own annotations win, as upstream's.
		if _, own := cfg.Annotations[k]; !own {
			cfg.Annotations[k] = v
		}
	}
}
