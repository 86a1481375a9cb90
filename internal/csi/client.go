package csi

import (
	"context"
	"errors"
	"fmt"

	"github.com/actorlet/actorlet/internal/unixgrpc"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// NodeInfo is what a driver's NodeGetInfo tells of this node.
type NodeInfo struct {
	// NodeID is the driver's name for this node; never empty.
	NodeID string
	// MaxVolumes is the most volumes of the driver the node can hold; 0
	// when the driver sets no limit.
	MaxVolumes int64
	// Topology are the segments of the node's accessible topology: its
	// keys go into the CSINode, key and value onto the Node's labels.
	Topology map[string]string
}

// NodeGetInfo calls the CSI Node service of the driver at endpoint (a Unix
// socket) once, as upstream's nodeGetInfoV1; ctx bounds the dial and the
// call, so a hung driver costs its caller no more than that.
func NodeGetInfo(ctx context.Context, endpoint string) (NodeInfo, error) {
	conn, err := unixgrpc.Dial(endpoint)
	if err != nil {
		return NodeInfo{}, err
	}
	defer conn.Close()
	res, err := csipb.NewNodeClient(conn).NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return NodeInfo{}, fmt.Errorf("CSI NodeGetInfo at %s: %w", endpoint, err)
	}
	return NodeInfo{NodeID: res.GetNodeId(), MaxVolumes: res.GetMaxVolumesPerNode(),
		Topology: res.GetAccessibleTopology().GetSegments()}, nil
}

// Node capabilities that change how the kubelet mounts a driver's volumes.
type NodeCapabilities struct {
	// StageUnstage: the driver stages a volume once per node
	// (NodeStageVolume at the global mount path) before publishing it
	// into pods.
	StageUnstage bool
	// VolumeMountGroup: the driver applies a pod's fsGroup itself, given
	// as volume_mount_group, so the kubelet does not walk the volume.
	VolumeMountGroup bool
	// SingleNodeMultiWriter: the driver tells ReadWriteOnce from
	// ReadWriteOncePod (SINGLE_NODE_MULTI_WRITER, SINGLE_NODE_SINGLE_WRITER).
	SingleNodeMultiWriter bool
	// GetVolumeStats: the driver answers NodeGetVolumeStats, so its
	// volumes' figures come from it (upstream's NodeSupportsVolumeStats).
	GetVolumeStats bool
	// ExpandVolume: the driver grows a volume's filesystem on the node
	// (NodeExpandVolume) after its controller grew the volume, as
	// upstream's NodeSupportsNodeExpand.
	ExpandVolume bool
}

// NodeGetCapabilities asks the driver at endpoint for its Node service's
// capabilities, as upstream's NodeSupportsStageUnstage and friends do
// (each of them one call; here one call answers them all).
func NodeGetCapabilities(ctx context.Context, endpoint string) (NodeCapabilities, error) {
	conn, err := unixgrpc.Dial(endpoint)
	if err != nil {
		return NodeCapabilities{}, err
	}
	defer conn.Close()
	res, err := csipb.NewNodeClient(conn).NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return NodeCapabilities{}, fmt.Errorf("CSI NodeGetCapabilities at %s: %w", endpoint, err)
	}
	var caps NodeCapabilities
	for _, c := range res.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			caps.StageUnstage = true
		case csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			caps.VolumeMountGroup = true
		case csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			caps.SingleNodeMultiWriter = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			caps.GetVolumeStats = true
		case csipb.NodeServiceCapability_RPC_EXPAND_VOLUME:
			caps.ExpandVolume = true
		}
	}
	return caps, nil
}

// NodeStageVolume, NodePublishVolume, NodeUnpublishVolume and
// NodeUnstageVolume make one call each to the driver at endpoint; the
// caller bounds them with ctx (upstream's csiTimeout), so a hung driver
// stalls only the operation that called it.
func NodeStageVolume(ctx context.Context, endpoint string, req *csipb.NodeStageVolumeRequest) error {
	return call(ctx, endpoint, "NodeStageVolume", func(c csipb.NodeClient) error {
		_, err := c.NodeStageVolume(ctx, req)
		return err
	})
}

// NodePublishVolume: see NodeStageVolume.
func NodePublishVolume(ctx context.Context, endpoint string, req *csipb.NodePublishVolumeRequest) error {
	return call(ctx, endpoint, "NodePublishVolume", func(c csipb.NodeClient) error {
		_, err := c.NodePublishVolume(ctx, req)
		return err
	})
}

// NodeUnpublishVolume: see NodeStageVolume.
func NodeUnpublishVolume(ctx context.Context, endpoint, volumeID, targetPath string) error {
	return call(ctx, endpoint, "NodeUnpublishVolume", func(c csipb.NodeClient) error {
		_, err := c.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: volumeID, TargetPath: targetPath})
		return err
	})
}

// NodeUnstageVolume: see NodeStageVolume.
func NodeUnstageVolume(ctx context.Context, endpoint, volumeID, stagingPath string) error {
	return call(ctx, endpoint, "NodeUnstageVolume", func(c csipb.NodeClient) error {
		_, err := c.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: volumeID, StagingTargetPath: stagingPath})
		return err
	})
}

// NodeExpandVolume: see NodeStageVolume.
func NodeExpandVolume(ctx context.Context, endpoint string, req *csipb.NodeExpandVolumeRequest) error {
	return call(ctx, endpoint, "NodeExpandVolume", func(c csipb.NodeClient) error {
		_, err := c.NodeExpandVolume(ctx, req)
		return err
	})
}

func call(ctx context.Context, endpoint, rpc string, fn func(csipb.NodeClient) error) error {
	conn, err := unixgrpc.Dial(endpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := fn(csipb.NewNodeClient(conn)); err != nil {
		return fmt.Errorf("%s at %s: %w", rpc, endpoint, err)
	}
	return nil
}

// VolumeStats are a volume's figures as its driver tells them; a unit the
// driver does not report stays zero, as upstream's.
type VolumeStats struct {
	Used, Capacity, Available      uint64
	InodesUsed, Inodes, InodesFree uint64
}

// NodeGetVolumeStats asks the driver at endpoint for the usage of the
// volume volumeID published at volumePath, as upstream's
// csiDriverClient.NodeGetVolumeStats: BYTES usage gives the bytes, INODES
// usage the inodes. Upstream sends no staging path and does not read the
// volume condition here (that is NodeGetVolumeHealth's, behind the
// CSIVolumeHealth alpha gate, off by default), nor does this.
func NodeGetVolumeStats(ctx context.Context, endpoint, volumeID, volumePath string) (VolumeStats, error) {
	if volumeID == "" {
		return VolumeStats{}, errors.New("missing volume id")
	}
	if volumePath == "" {
		return VolumeStats{}, errors.New("missing target path")
	}
	var res *csipb.NodeGetVolumeStatsResponse
	err := call(ctx, endpoint, "NodeGetVolumeStats", func(c csipb.NodeClient) error {
		var err error
		res, err = c.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: volumeID, VolumePath: volumePath})
		return err
	})
	if err != nil {
		return VolumeStats{}, err
	}
	usages := res.GetUsage()
	if usages == nil {
		return VolumeStats{}, fmt.Errorf("NodeGetVolumeStats at %s: failed to get usage from response. usage is nil", endpoint)
	}
	var s VolumeStats
	for _, u := range usages {
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			s.Available, s.Capacity, s.Used = nonNegative(u.GetAvailable()), nonNegative(u.GetTotal()), nonNegative(u.GetUsed())
		case csipb.VolumeUsage_INODES:
			s.InodesFree, s.Inodes, s.InodesUsed = nonNegative(u.GetAvailable()), nonNegative(u.GetTotal()), nonNegative(u.GetUsed())
		}
	}
	return s, nil
}

// nonNegative is n as a count: a driver's negative figure (the spec's
// fields are signed) is none rather than upstream's wrapped-around
// uint64.
func nonNegative(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}
