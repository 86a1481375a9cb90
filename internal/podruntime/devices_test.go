package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/volume"
)

// TestContainerDevices: a container's volumeDevices become CRI devices as
// upstream's makeBlockVolumes makes them, with its errors.
func TestContainerDevices(t *testing.T) {
	vols := map[string]volume.Mounted{
		"disk": {Name: "disk", Device: "/r/pods/u/volumeDevices/kubernetes.io~csi/pv-1"},
		"ro":   {Name: "ro", Device: "/r/pods/u/volumeDevices/kubernetes.io~csi/pv-2", ReadOnly: true},
		"fs":   {Name: "fs", Path: "/r/pods/u/volumes/kubernetes.io~csi/pv-3/mount"},
	}
	for _, tc := range []struct {
		name    string
		devices []v1.VolumeDevice
		want    []*runtimeapi.Device
		wantErr string
	}{
		{name: "none"},
		{name: "read-write and read-only", devices: []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}, {Name: "ro", DevicePath: "/dev/xvdb"}},
			want: []*runtimeapi.Device{
				{ContainerPath: "/dev/xvda", HostPath: vols["disk"].Device, Permissions: "mrw"},
				{ContainerPath: "/dev/xvdb", HostPath: vols["ro"].Device, Permissions: "r"}}},
		{name: "relative path", devices: []v1.VolumeDevice{{Name: "disk", DevicePath: "dev/xvda"}},
			wantErr: "error DevicePath `dev/xvda` must be an absolute path"},
		{name: "no such volume", devices: []v1.VolumeDevice{{Name: "nope", DevicePath: "/dev/x"}},
			wantErr: `cannot find volume "nope" to pass into container "c"`},
		{name: "a filesystem volume", devices: []v1.VolumeDevice{{Name: "fs", DevicePath: "/dev/x"}},
			wantErr: `cannot find volume "fs" to pass into container "c"`},
	} {
		got, err := containerDevices(&v1.Container{Name: "c", VolumeDevices: tc.devices}, vols)
		if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i].String() != tc.want[i].String() {
				t.Errorf("%s: device %d %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}
