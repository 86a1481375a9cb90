package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
)

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID, MaxVolumesPerNode: d.maxVolumes}, nil
}

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, c := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// known returns the volume's record, NotFound when there is none.
func (d *driver) known(id string) (volume, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[id]
	if !ok {
		return volume{}, status.Errorf(codes.NotFound, "volume %q not found", id)
	}
	return *v, nil
}

// bind bind-mounts source at target unless target is a mount point already
// (a retried call), creating target. CSI leaves the creation of the
// target to the plugin; the staging path the kubelet makes, but creating
// it again costs nothing.
func (d *driver) bind(source, target string, readOnly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	mounted, err := d.mounter.IsMountPoint(target)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if mounted {
		return nil
	}
	opts := []string{"bind"}
	if readOnly {
		opts = append(opts, "ro")
	}
	if err := d.mounter.Mount(source, target, "", opts); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

func (d *driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if req.VolumeId == "" || req.StagingTargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and staging target path are required")
	}
	v, err := d.known(req.VolumeId)
	if err != nil {
		return nil, err
	}
	if err := checkAccessType(v, req.VolumeCapability); err != nil {
		return nil, err
	}
	// The volume must have been published to this node: the context that
	// ControllerPublishVolume returned comes back here through the
	// VolumeAttachment, or the attach step was skipped.
	if got := req.PublishContext[publishContextKey]; d.attachRequired && got != d.nodeID {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s: publish context %v does not name node %s: not attached here", v.ID, req.PublishContext, d.nodeID)
	}
	if v.Block {
		// Staged is on a loop device; the staging path stays empty.
		if _, err := attachLoop(d.volumeDir(v.ID)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := d.bind(d.volumeDir(v.ID), req.StagingTargetPath, false); err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (d *driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if req.VolumeId == "" || req.StagingTargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and staging target path are required")
	}
	// An unknown volume was deleted, and its loop device with it.
	if v, err := d.known(req.VolumeId); err == nil && v.Block {
		if err := detachLoop(d.volumeDir(v.ID)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	if err := mount.CleanupMountPoint(req.StagingTargetPath, d.mounter, true); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if req.VolumeId == "" || req.TargetPath == "" || req.StagingTargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging target path and target path are required")
	}
	v, err := d.known(req.VolumeId)
	if err != nil {
		return nil, err
	}
	if err := checkAccessType(v, req.VolumeCapability); err != nil {
		return nil, err
	}
	if v.Block {
		return &csi.NodePublishVolumeResponse{}, d.publishBlock(v, req.TargetPath, req.Readonly)
	}
	staged, err := d.mounter.IsMountPoint(req.StagingTargetPath)
	if err != nil || !staged {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s (%v)", req.VolumeId, req.StagingTargetPath, err)
	}
	if err := d.bind(req.StagingTargetPath, req.TargetPath, req.Readonly); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.VolumeId == "" || req.TargetPath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	if isDevice(req.TargetPath) {
		return &csi.NodeUnpublishVolumeResponse{}, d.unpublishBlock(req.TargetPath)
	}
	if err := mount.CleanupMountPoint(req.TargetPath, d.mounter, true); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats reports the bytes used by the files under the volume
// path (du) against the volume's recorded capacity, the directory sharing
// its filesystem with everything else on the host, and the inodes of that
// filesystem (statfs).
func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if req.VolumeId == "" || req.VolumePath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and volume path are required")
	}
	v, err := d.known(req.VolumeId)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(req.VolumePath); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume path %s: %v", req.VolumePath, err)
	}
	if v.Block {
		// A device has a size and no files to count, as
		// csi-driver-host-path reports it.
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: v.Capacity}}}, nil
	}
	used, err := diskUsage(req.VolumePath)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	var fsStat unix.Statfs_t
	if err := unix.Statfs(req.VolumePath, &fsStat); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	capacity := max(v.Capacity, v.NodeCapacity)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: capacity, Used: used, Available: max(capacity-used, 0)},
		{Unit: csi.VolumeUsage_INODES, Total: int64(fsStat.Files), Available: int64(fsStat.Ffree), Used: int64(fsStat.Files - fsStat.Ffree)},
	}}, nil
}

// diskUsage is du's figure: the blocks allocated to everything under dir.
func diskUsage(dir string) (int64, error) {
	var used int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		}
		return nil
	})
	return used, err
}

func (d *driver) NodeExpandVolume(_ context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	size := req.CapacityRange.GetRequiredBytes()
	if req.VolumeId == "" || req.VolumePath == "" || size == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume ID, volume path and required bytes are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[req.VolumeId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.VolumeId)
	}
	if v.Block {
		// The loop device re-reads its grown backing file, as a
		// cloud disk's device shows its new size.
		if err := refreshLoop(d.volumeDir(v.ID)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	// A directory has no filesystem to grow: the size is recorded, and
	// NodeGetVolumeStats reports it.
	if size > v.NodeCapacity {
		v.NodeCapacity = size
		if err := d.save(); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.NodeCapacity}, nil
}
