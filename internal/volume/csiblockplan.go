package volume

import (
	"fmt"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
)

// This file holds the decisions of mapping a raw block CSI volume (a PV of
// volumeMode Block) into a pod, as upstream's csiBlockMapper and
// volumepathhandler make them: where each piece lives and what each call
// asks of the driver. csiblock.go does the I/O.

// PodVolumeDevicesDir is ROOT/pods/UID/volumeDevices, where a pod's block
// volumes are symlinks to their devices (upstream's pod device map path).
func PodVolumeDevicesDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "volumeDevices")
}

// csiBlockPaths are the places of one block volume for one pod, as
// upstream names them under ROOT/plugins/kubernetes.io/csi/volumeDevices
// (the volume's) and ROOT/pods/UID/volumeDevices (the pod's).
type csiBlockPaths struct {
	// staging is NodeStageVolume's target, a directory the kubelet makes.
	staging string
	// publishDir holds a publish target per pod; publish is this pod's,
	// a file the driver makes and puts the device on.
	publishDir, publish string
	// volumeDir holds data (vol_data.json, what teardown reads after a
	// restart) and dev (globalMap: a bind mount of the device per pod,
	// named by its UID, which the loop device holds open).
	volumeDir, data, globalMap, globalMapPod string
	// link is the pod's device map path: a symlink to the publish
	// target, which containers' volumeDevices name to the runtime.
	link string
}

func blockPaths(root string, uid types.UID, specName string) csiBlockPaths {
	plugin := filepath.Join(root, "plugins", CSIPluginName, "volumeDevices")
	p := csiBlockPaths{
		staging:    filepath.Join(plugin, "staging", specName),
		publishDir: filepath.Join(plugin, "publish", specName),
		volumeDir:  filepath.Join(plugin, escapeQualifiedName(specName)),
		link:       filepath.Join(PodVolumeDevicesDir(root, uid), PluginCSI, specName),
	}
	p.publish = filepath.Join(p.publishDir, string(uid))
	p.data = filepath.Join(p.volumeDir, "data")
	p.globalMap = filepath.Join(p.volumeDir, "dev")
	p.globalMapPod = filepath.Join(p.globalMap, string(uid))
	return p
}

// blockCapability is a block volume's capability: its access mode, no
// filesystem, no mount options, no mount group (upstream's fsType
// "block").
func (v csiVolume) blockCapability(caps csi.NodeCapabilities) *csipb.VolumeCapability {
	return &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.accessMode(caps)},
		AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
	}
}

// blockStageRequest is upstream's stageVolumeForBlock's NodeStageVolume.
func (v csiVolume) blockStageRequest(caps csi.NodeCapabilities, staging string, publishContext, secrets map[string]string) *csipb.NodeStageVolumeRequest {
	return &csipb.NodeStageVolumeRequest{
		VolumeId: v.handle, PublishContext: publishContext, StagingTargetPath: staging,
		VolumeCapability: v.blockCapability(caps), Secrets: secrets, VolumeContext: v.attributes,
	}
}

// blockPublishRequest is upstream's publishVolumeForBlock's
// NodePublishVolume: the staging path is given whether or not the driver
// stages, as upstream does.
func (v csiVolume) blockPublishRequest(p csiDriverPolicy, caps csi.NodeCapabilities, pod *v1.Pod, paths csiBlockPaths, publishContext, secrets map[string]string) *csipb.NodePublishVolumeRequest {
	req := v.publishRequest(p, caps, pod, paths.staging, paths.publish, publishContext, secrets, nil, nil)
	req.VolumeCapability = v.blockCapability(caps)
	return req
}

// blockVolData is the vol_data.json of a block volume, in its data
// directory: one per volume, not per pod, as upstream's.
func (v csiVolume) blockVolData(nodeName string) map[string]string {
	d := v.podVolData(nodeName)
	delete(d, volDataLifecycleMode)
	return d
}

// checkVolumeMode is upstream's check of a claim's volume mode against
// how the pod's containers use it: a volume in volumeMounts must be a
// filesystem, one in volumeDevices a block device.
func checkVolumeMode(pod *v1.Pod, volName string, mode v1.PersistentVolumeMode) error {
	mounts, devices := podVolumeUses(pod)
	if mounts[volName] && mode != v1.PersistentVolumeFilesystem {
		return fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", volName, mode)
	}
	if devices[volName] && mode != v1.PersistentVolumeBlock {
		return fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", volName, mode)
	}
	return nil
}

// podVolumeUses are the volumes the pod's containers (init, regular and
// ephemeral) mount and map, as upstream's GetPodVolumeNames.
func podVolumeUses(pod *v1.Pod) (mounts, devices map[string]bool) {
	mounts, devices = map[string]bool{}, map[string]bool{}
	add := func(ms []v1.VolumeMount, ds []v1.VolumeDevice) {
		for _, m := range ms {
			mounts[m.Name] = true
		}
		for _, d := range ds {
			devices[d.Name] = true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.Containers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		add(c.VolumeMounts, c.VolumeDevices)
	}
	return mounts, devices
}

// volumeModeOf is a PV's volume mode, Filesystem when unset.
func volumeModeOf(pv *v1.PersistentVolume) v1.PersistentVolumeMode {
	if pv.Spec.VolumeMode == nil {
		return v1.PersistentVolumeFilesystem
	}
	return *pv.Spec.VolumeMode
}

// lastBlockUser reports whether no pod other than uid still maps the
// block volume specName (others: each pod's device map names): then
// teardown may unstage it.
func lastBlockUser(uid types.UID, specName string, others map[types.UID][]string) bool {
	for other, names := range others {
		if other == uid {
			continue
		}
		for _, n := range names {
			if n == specName {
				return false
			}
		}
	}
	return true
}
