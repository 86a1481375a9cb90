package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
)

// defaultCapacity is a volume's size when CreateVolume asks for none.
const defaultCapacity = 1 << 20

// volume is what the driver records of one volume. The directory holds
// the data; the sizes are bookkeeping, enforced nowhere, as in
// csi-driver-host-path's directory volumes.
type volume struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// NodeCapacity is the size the last NodeExpandVolume was asked for.
	NodeCapacity int64 `json:"nodeCapacity,omitempty"`
	// Block: a raw block volume, made with a block capability, as
	// csi-driver-host-path's: its data is a file of its capacity, put
	// on a loop device while it is staged (block.go).
	Block bool `json:"block,omitempty"`
	// Published maps the nodes the volume is published to (by
	// ControllerPublishVolume) to whether it is read-only there.
	Published map[string]bool `json:"published,omitempty"`
}

// driver serves the three CSI services. Its record of volumes is kept in
// STATEDIR/state.json, written after each change, so a restarted driver
// knows the volumes it made; each volume's directory is
// STATEDIR/volumes/ID.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	name, nodeID, stateDir string
	maxVolumes             int64
	// attachRequired: NodeStageVolume wants ControllerPublishVolume's
	// context, as the CSIDriver object's attachRequired says.
	attachRequired bool
	mounter        mount.Interface

	// mu serialises the calls: the sidecars and the kubelet call
	// concurrently, and a call reads and writes the record as one step.
	mu      sync.Mutex
	volumes map[string]*volume
}

func newDriver(cfg config, mounter mount.Interface) (*driver, error) {
	d := &driver{name: cfg.name, nodeID: cfg.nodeID, stateDir: cfg.stateDir, maxVolumes: cfg.maxVolumes,
		attachRequired: cfg.attachRequired, mounter: mounter, volumes: map[string]*volume{}}
	stateDir := cfg.stateDir
	if err := os.MkdirAll(filepath.Join(stateDir, "volumes"), 0o750); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(d.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &d.volumes); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *driver) statePath() string { return filepath.Join(d.stateDir, "state.json") }

// volumeDir is where volume id's data lives.
func (d *driver) volumeDir(id string) string { return filepath.Join(d.stateDir, "volumes", id) }

// save writes the record, through a temporary file so that a crash leaves
// the old one or the new one.
func (d *driver) save() error {
	b, err := json.MarshalIndent(d.volumes, "", "  ")
	if err != nil {
		return err
	}
	tmp := d.statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.statePath())
}

// volumeID derives a volume's ID from its name, so a CreateVolume retried
// after a lost answer finds the volume it made.
func volumeID(name string) string {
	h := sha256.Sum256([]byte(name))
	return "hostpath-" + hex.EncodeToString(h[:8])
}

// Identity.

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "0.1.0"}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller.

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: c}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkCapabilities refuses capabilities that are not all of one access
// type, mount (a directory) or block (a file on a loop device); it says
// which.
func checkCapabilities(caps []*csi.VolumeCapability) (block bool, err error) {
	if len(caps) == 0 {
		return false, status.Error(codes.InvalidArgument, "no volume capabilities")
	}
	for i, c := range caps {
		b := c.GetBlock() != nil
		if !b && c.GetMount() == nil {
			return false, status.Errorf(codes.InvalidArgument, "access type %T not supported: only mount and block", c.GetAccessType())
		}
		if i > 0 && b != block {
			return false, status.Error(codes.InvalidArgument, "both mount and block access types asked for")
		}
		block = b
	}
	return block, nil
}

// checkAccessType refuses a capability of the other access type than the
// volume's.
func checkAccessType(v volume, c *csi.VolumeCapability) error {
	block, err := checkCapabilities([]*csi.VolumeCapability{c})
	if err != nil {
		return err
	}
	if block != v.Block {
		return status.Errorf(codes.InvalidArgument, "volume %s: block access %v asked of a volume with block %v", v.ID, block, v.Block)
	}
	return nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "no name")
	}
	block, err := checkCapabilities(req.VolumeCapabilities)
	if err != nil {
		return nil, err
	}
	if req.VolumeContentSource != nil {
		return nil, status.Error(codes.InvalidArgument, "volume content sources are not supported")
	}
	size := req.CapacityRange.GetRequiredBytes()
	if size == 0 {
		size = defaultCapacity
	}
	if limit := req.CapacityRange.GetLimitBytes(); limit != 0 && size > limit {
		return nil, status.Errorf(codes.OutOfRange, "required %d bytes over the limit %d", size, limit)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	id := volumeID(req.Name)
	if v, ok := d.volumes[id]; ok {
		if v.Capacity < size || v.Block != block {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists with %d bytes (block %v), asked for %d (block %v)", req.Name, v.Capacity, v.Block, size, block)
		}
		return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: v.Capacity}}, nil
	}
	if block {
		if err := makeBackingFile(d.volumeDir(id), size); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	} else {
		if err := os.MkdirAll(d.volumeDir(id), 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		// The mode the umask took away: pods of any user write to the volume.
		if err := os.Chmod(d.volumeDir(id), 0o777); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	d.volumes[id] = &volume{ID: id, Name: req.Name, Capacity: size, Block: block}
	if err := d.save(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: id, CapacityBytes: size}}, nil
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume ID")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// An unknown ID is a volume already deleted: the call is idempotent.
	if v, ok := d.volumes[req.VolumeId]; ok && len(v.Published) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published to %v", req.VolumeId, v.Published)
	}
	// A block volume still on a loop device (never unstaged) is freed.
	if v, ok := d.volumes[req.VolumeId]; ok && v.Block {
		if err := detachLoop(d.volumeDir(v.ID)); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	if err := os.RemoveAll(d.volumeDir(req.VolumeId)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	delete(d.volumes, req.VolumeId)
	if err := d.save(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	d.mu.Lock()
	_, ok := d.volumes[req.VolumeId]
	d.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.VolumeId)
	}
	if _, err := checkCapabilities(req.VolumeCapabilities); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.VolumeCapabilities}}, nil
}

// publishContextKey is the key of the publish context that
// ControllerPublishVolume returns: the node the volume was published to,
// which NodeStageVolume checks, so that a volume staged without being
// attached fails, and a test sees the context carried from the
// VolumeAttachment's status to the node.
const publishContextKey = "hostpath.csi.actorlet.example.com/published-to"

func (d *driver) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if req.VolumeId == "" || req.NodeId == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and node ID are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[req.VolumeId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.VolumeId)
	}
	if err := checkAccessType(*v, req.VolumeCapability); err != nil {
		return nil, err
	}
	if ro, ok := v.Published[req.NodeId]; ok && ro != req.Readonly {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s is published to %s with readonly=%v", req.VolumeId, req.NodeId, ro)
	}
	if v.Published == nil {
		v.Published = map[string]bool{}
	}
	v.Published[req.NodeId] = req.Readonly
	if err := d.save(); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{publishContextKey: req.NodeId}}, nil
}

func (d *driver) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if req.VolumeId == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume ID")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// A volume gone, or not published there, is unpublished already.
	if v, ok := d.volumes[req.VolumeId]; ok {
		if req.NodeId == "" {
			v.Published = nil
		} else {
			delete(v.Published, req.NodeId)
		}
		if err := d.save(); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (d *driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	size := req.CapacityRange.GetRequiredBytes()
	if req.VolumeId == "" || size == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume ID and required bytes are required")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[req.VolumeId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.VolumeId)
	}
	// Shrinking is not expansion; a smaller size is already satisfied.
	if size > v.Capacity {
		if v.Block {
			// The backing file grows; the node's NodeExpandVolume
			// makes its loop device see it.
			if err := makeBackingFile(d.volumeDir(v.ID), size); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
		v.Capacity = size
		if err := d.save(); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.Capacity, NodeExpansionRequired: true}, nil
}
