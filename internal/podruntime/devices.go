package podruntime

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/volume"
)

// containerDevices are the CRI devices of a container's volumeDevices, as
// upstream's makeBlockVolumes: each raw block volume's link on the host
// (the runtime resolves it to the device) at the devicePath asked,
// "mrw", or "r" for a read-only volume.
func containerDevices(c *v1.Container, vols map[string]volume.Mounted) ([]*runtimeapi.Device, error) {
	var out []*runtimeapi.Device
	for _, d := range c.VolumeDevices {
		if !filepath.IsAbs(d.DevicePath) {
			return nil, fmt.Errorf("error DevicePath `%s` must be an absolute path", d.DevicePath)
		}
		vol, ok := vols[d.Name]
		if !ok || vol.Device == "" {
			return nil, fmt.Errorf("cannot find volume %q to pass into container %q", d.Name, c.Name)
		}
		perm := "mrw"
		if vol.ReadOnly {
			perm = "r"
		}
		out = append(out, &runtimeapi.Device{ContainerPath: d.DevicePath, HostPath: vol.Device, Permissions: perm})
	}
	return out, nil
}
