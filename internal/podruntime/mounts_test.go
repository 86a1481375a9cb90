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
		"image":  {Name: "image", Image: "busybox:1.36", ImageRef: "sha256:b", ReadOnly: true},
		// An image volume whose pull the pass has not done.
		"unpulled": {Name: "unpulled", Image: "busybox:1.36", ReadOnly: true},
	}
	busybox := &runtimeapi.ImageSpec{Image: "sha256:b", UserSpecifiedImage: "busybox:1.36"}
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
		{"an image volume: the pulled image, read-only", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/vol", Image: busybox, Readonly: true}}, ""},
		{"an image volume with its propagation", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", MountPropagation: mode(v1.MountPropagationHostToContainer)}}},
			[]*runtimeapi.Mount{{ContainerPath: "/vol", Image: busybox, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}}, ""},
		// "escape" would be refused by the host's subPath preparation:
		// an image's subPath is the runtime's to resolve inside the image.
		{"an image volume's subPath is inside the image", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", SubPath: "escape/bin"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/vol", Image: busybox, ImageSubPath: "escape/bin", Readonly: true}}, ""},
		{"an image volume's subPathExpr", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", SubPathExpr: "$(POD_NAME)/etc"}}},
			[]*runtimeapi.Mount{{ContainerPath: "/vol", Image: busybox, ImageSubPath: "web-1/etc", Readonly: true}}, ""},
		{"an absolute subPath into an image", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", SubPath: "/etc"}}},
			nil, "must not be an absolute path"},
		{"a subPath with .. into an image", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", SubPath: "../etc"}}},
			nil, "must not contain '..'"},
		{"bidirectional refused for an image volume too", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "image", MountPath: "/vol", MountPropagation: mode(v1.MountPropagationBidirectional)}}},
			nil, "Bidirectional mount propagation is available only to privileged containers"},
		{"an image volume not pulled", v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{{Name: "unpulled", MountPath: "/vol"}}},
			nil, `image volume "unpulled" of container "c": image "busybox:1.36" is not pulled`},
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
