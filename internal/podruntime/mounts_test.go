package podruntime

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/testutil"
	"github.com/actorlet/actorlet/internal/volume"
)

// fakeSubpaths records the subPaths asked for and returns where they would
// be bind mounted.
type fakeSubpaths struct{ asked []string }

func (f *fakeSubpaths) PrepareSubpath(uid types.UID, vol, volPath, container string, index int, subPath string) (string, error) {
	if strings.HasPrefix(subPath, "escape") {
		return "", fmt.Errorf("subpath %q not within volume path %q", subPath, volPath)
	}
	f.asked = append(f.asked, subPath)
	return fmt.Sprintf("/root/pods/%s/volume-subpaths/%s/%s/%d", uid, vol, container, index), nil
}

func TestContainerMounts(t *testing.T) {
	vols := map[string]volume.Mounted{
		"data":   {Name: "data", Path: "/root/pods/u/volumes/kubernetes.io~empty-dir/data", SELinuxRelabel: true},
		"config": {Name: "config", Path: "/root/pods/u/volumes/kubernetes.io~configmap/config", ReadOnly: true},
	}
	mode := func(m v1.MountPropagationMode) *v1.MountPropagationMode { return &m }
	privileged := &v1.SecurityContext{Privileged: func() *bool { b := true; return &b }()}
	env := map[string]string{"POD_NAME": "web-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name    string
		c       v1.Container
		want    []*runtimeapi.Mount
		wantErr string
	}{
		{"no mounts", v1.Container{Name: "c"}, nil, ""},
		{"a volume, read-write, private", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vols["data"].Path, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}}, ""},
		{"the mount's readOnly", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}}},
			[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vols["data"].Path, Readonly: true}}, ""},
		{"an API data volume is always read-only", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "config", MountPath: "/etc/config"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/etc/config", HostPath: vols["config"].Path, Readonly: true}}, ""},
		{"host to container", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", MountPropagation: mode(v1.MountPropagationHostToContainer)}}},
			[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vols["data"].Path, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}}, ""},
		{"bidirectional for a privileged container", v1.Container{Name: "c", SecurityContext: privileged, VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", MountPropagation: mode(v1.MountPropagationBidirectional)}}},
			[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vols["data"].Path, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}}, ""},
		{"bidirectional refused otherwise", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", MountPropagation: mode(v1.MountPropagationBidirectional)}}},
			nil, "Bidirectional mount propagation is available only to privileged containers"},
		{"an unknown volume", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}},
			nil, `cannot find volume "nope" to mount into container "c"`},
		{"a subPath is bind mounted on its own", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/x"}, {Name: "data", MountPath: "/data/logs", SubPath: "logs"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/x", HostPath: vols["data"].Path}, {ContainerPath: "/data/logs", HostPath: "/root/pods/u/volume-subpaths/data/c/1"}}, ""},
		{"subPathExpr from the environment", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(POD_NAME)"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/logs", HostPath: "/root/pods/u/volume-subpaths/data/c/0"}}, ""},
		{"an absolute subPath", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "/etc"}}},
			nil, "must not be an absolute path"},
		{"a subPath with ..", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "a/../../etc"}}},
			nil, "must not contain '..'"},
		{"a subPath the volume refuses", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "escape"}}},
			nil, "not within volume path"},
		{"recursive read-only is not supported", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/x", ReadOnly: true,
			RecursiveReadOnly: func() *v1.RecursiveReadOnlyMode { m := v1.RecursiveReadOnlyEnabled; return &m }()}}},
			nil, "recursive read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.UID = "u"
			got, err := containerMounts(pod, &tc.c, vols, nil, lookup, Options{Subpaths: &fakeSubpaths{}})
			if testutil.WantErr(t, err, tc.wantErr) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("mounts:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}
