package volume

import (
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
)

// TestBlockPaths checks the places upstream's csiBlockMapper and
// volumepathhandler use for a block volume.
func TestBlockPaths(t *testing.T) {
	p := blockPaths("/r", "uid-1", "pv-1")
	const plugin = "/r/plugins/kubernetes.io/csi/volumeDevices"
	for _, tc := range []struct{ name, got, want string }{
		{"staging", p.staging, plugin + "/staging/pv-1"},
		{"publish dir", p.publishDir, plugin + "/publish/pv-1"},
		{"publish", p.publish, plugin + "/publish/pv-1/uid-1"},
		{"volume dir", p.volumeDir, plugin + "/pv-1"},
		{"data", p.data, plugin + "/pv-1/data"},
		{"global map", p.globalMap, plugin + "/pv-1/dev"},
		{"global map of the pod", p.globalMapPod, plugin + "/pv-1/dev/uid-1"},
		{"pod's link", p.link, "/r/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestBlockRequests: a block volume is staged and published with a Block
// access type, no filesystem, mount options or mount group, its access
// mode mapped as a filesystem's; the publish names the staging path and
// the pod's publish file.
func TestBlockRequests(t *testing.T) {
	mode := v1.PersistentVolumeBlock
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{
		VolumeMode: &mode, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, MountOptions: []string{"noatime"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
			Driver: "d", VolumeHandle: "h", FSType: "ext4", VolumeAttributes: map[string]string{"k": "v"}}}}}
	v := csiFromPV(pv, false)
	if !v.block {
		t.Fatal("a Block PV is no block volume")
	}
	caps := csi.NodeCapabilities{SingleNodeMultiWriter: true}
	blockCap := &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
		AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}}
	paths := blockPaths("/r", "u", v.specName)

	stage := v.blockStageRequest(caps, paths.staging, map[string]string{"pc": "1"}, map[string]string{"s": "x"})
	wantStage := &csipb.NodeStageVolumeRequest{VolumeId: "h", PublishContext: map[string]string{"pc": "1"},
		StagingTargetPath: paths.staging, VolumeCapability: blockCap, Secrets: map[string]string{"s": "x"},
		VolumeContext: map[string]string{"k": "v"}}
	if stage.String() != wantStage.String() {
		t.Errorf("stage:\n%v\nwant\n%v", stage, wantStage)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	pub := v.blockPublishRequest(csiDriverPolicy{}, caps, pod, paths, nil, map[string]string{})
	wantPub := &csipb.NodePublishVolumeRequest{VolumeId: "h", StagingTargetPath: paths.staging, TargetPath: paths.publish,
		VolumeCapability: blockCap, Secrets: map[string]string{}, VolumeContext: map[string]string{"k": "v"}}
	if pub.String() != wantPub.String() {
		t.Errorf("publish:\n%v\nwant\n%v", pub, wantPub)
	}

	data := v.blockVolData("node-a")
	if data[volDataDriverName] != "d" || data[volDataVolHandle] != "h" || data[volDataSpecVolID] != "pv-1" {
		t.Errorf("vol_data.json %v", data)
	}
	if _, ok := data[volDataLifecycleMode]; ok {
		t.Errorf("vol_data.json %v names a lifecycle mode, which upstream's block volumes have not", data)
	}
}

// TestCheckVolumeMode: upstream's errors for a claim used otherwise than
// its volume mode says, by any container of the pod.
func TestCheckVolumeMode(t *testing.T) {
	mounts := v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "vol", MountPath: "/v"}}}
	devices := v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "vol", DevicePath: "/dev/v"}}}
	for _, tc := range []struct {
		name    string
		spec    v1.PodSpec
		mode    v1.PersistentVolumeMode
		wantErr string
	}{
		{"filesystem mounted", v1.PodSpec{Containers: []v1.Container{mounts}}, v1.PersistentVolumeFilesystem, ""},
		{"block mapped", v1.PodSpec{Containers: []v1.Container{devices}}, v1.PersistentVolumeBlock, ""},
		{"unused", v1.PodSpec{Containers: []v1.Container{{}}}, v1.PersistentVolumeBlock, ""},
		{"block mounted", v1.PodSpec{Containers: []v1.Container{mounts}}, v1.PersistentVolumeBlock,
			"volume vol has volumeMode Block, but is specified in volumeMounts"},
		{"filesystem mapped", v1.PodSpec{Containers: []v1.Container{devices}}, v1.PersistentVolumeFilesystem,
			"volume vol has volumeMode Filesystem, but is specified in volumeDevices"},
		{"block mounted by an init container", v1.PodSpec{InitContainers: []v1.Container{mounts}, Containers: []v1.Container{devices}},
			v1.PersistentVolumeBlock, "volume vol has volumeMode Block, but is specified in volumeMounts"},
		{"block mounted by an ephemeral container", v1.PodSpec{Containers: []v1.Container{devices},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{VolumeMounts: mounts.VolumeMounts}}}},
			v1.PersistentVolumeBlock, "volume vol has volumeMode Block, but is specified in volumeMounts"},
	} {
		err := checkVolumeMode(&v1.Pod{Spec: tc.spec}, "vol", tc.mode)
		if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestLastBlockUser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		others map[types.UID][]string
		want   bool
	}{
		{"no pod", nil, true},
		{"only itself", map[types.UID][]string{"a": {"pv"}}, true},
		{"another pod", map[types.UID][]string{"a": {"pv"}, "b": {"other", "pv"}}, false},
		{"another volume", map[types.UID][]string{"b": {"pv2"}}, true},
	} {
		if got := lastBlockUser("a", "pv", tc.others); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLoopDeviceOf reads a fake sysfs: the loop device whose backing file
// is the path, a deleted one's name included.
func TestLoopDeviceOf(t *testing.T) {
	dir := t.TempDir()
	defer func(old string) { sysBlock = old }(sysBlock)
	sysBlock = dir
	for dev, backing := range map[string]string{"loop0": "/other\n", "loop3": "/r/dev/uid (deleted)\n", "sda": "/r/dev/uid\n"} {
		if err := os.MkdirAll(filepath.Join(dir, dev, "loop"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dev, "loop", "backing_file"), []byte(backing), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"/r/dev/uid", "/dev/loop3"},
		{"/other", "/dev/loop0"},
		{"/none", ""},
	} {
		if got, err := loopDeviceOf(tc.path); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}
