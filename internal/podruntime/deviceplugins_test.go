package podruntime

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type fakeDevices struct {
	resps []*api.ContainerAllocateResponse
	err   error
	asked []string
}

func (f *fakeDevices) ContainerDevices(_ context.Context, _ *v1.Pod, c string) ([]*api.ContainerAllocateResponse, error) {
	f.asked = append(f.asked, c)
	return f.resps, f.err
}

// TestApplyDevices: the plugins' answers reach the CRI configuration,
// before the container's own, duplicates dropped, the kubelet's
// annotations kept.
func TestApplyDevices(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Envs:        []*runtimeapi.KeyValue{{Key: "OWN", Value: []byte("1")}},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data"}},
		Annotations: map[string]string{"io.kubernetes.container.hash": "abc"},
	}
	applyDevices(cfg, []*api.ContainerAllocateResponse{
		{Envs: map[string]string{"B": "b", "A": "a"}, Mounts: []*api.Mount{{ContainerPath: "/dev-a", HostPath: "/h/a", ReadOnly: true}},
			Devices:     []*api.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/x0", Permissions: "rw"}},
			Annotations: map[string]string{"io.kubernetes.container.hash": "plugin", "vendor": "1"}, CdiDevices: []*api.CDIDevice{{Name: "v.com/r=1"}}},
		{Envs: map[string]string{"A": "other"}, Mounts: []*api.Mount{{ContainerPath: "/dev-a", HostPath: "/h/other"}},
			CdiDevices: []*api.CDIDevice{{Name: "v.com/r=1"}, {Name: "v.com/r=2"}}},
	})
	var envs []string
	for _, e := range cfg.Envs {
		envs = append(envs, e.Key+"="+string(e.Value))
	}
	if got := strings.Join(envs, " "); got != "A=a B=b OWN=1" {
		t.Errorf("envs %s", got)
	}
	if len(cfg.Mounts) != 2 || !reflect.DeepEqual(cfg.Mounts[0], &runtimeapi.Mount{ContainerPath: "/dev-a", HostPath: "/h/a", Readonly: true}) {
		t.Errorf("mounts %v", cfg.Mounts)
	}
	if len(cfg.Devices) != 1 || cfg.Devices[0].HostPath != "/dev/x0" || cfg.Devices[0].Permissions != "rw" {
		t.Errorf("devices %v", cfg.Devices)
	}
	if len(cfg.CDIDevices) != 2 || cfg.CDIDevices[1].Name != "v.com/r=2" {
		t.Errorf("CDI %v", cfg.CDIDevices)
	}
	if cfg.Annotations["io.kubernetes.container.hash"] != "abc" || cfg.Annotations["vendor"] != "1" {
		t.Errorf("annotations %v", cfg.Annotations)
	}
}

// TestDeviceOptions: only a container asking for an extended resource
// asks the device-manager, and its failure fails the container.
func TestDeviceOptions(t *testing.T) {
	f := &fakeDevices{err: errors.New("requested number of devices unavailable")}
	pod := &v1.Pod{}
	plain := &v1.Container{Name: "plain", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}
	gpu := &v1.Container{Name: "gpu", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"example.com/gpu": resource.MustParse("1")}}}
	if r, err := deviceOptions(context.Background(), pod, plain, Options{DevicePlugins: f}); r != nil || err != nil || len(f.asked) != 0 {
		t.Errorf("plain: %v %v %v", r, err, f.asked)
	}
	if _, err := deviceOptions(context.Background(), pod, gpu, Options{}); err != nil {
		t.Errorf("no device-manager: %v", err)
	}
	_, err := deviceOptions(context.Background(), pod, gpu, Options{DevicePlugins: f})
	if err == nil || !strings.Contains(err.Error(), `container "gpu"`) || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("gpu: %v", err)
	}
}
