// Package fakeplugin is a kubelet plugin for tests, as a CSI driver's
// node-driver-registrar and node service are: a registration server
// (pluginregistration/v1) on one Unix socket and a CSI Identity and Node
// server on another. It records what the kubelet tells it, and serves
// volumes as bind mounts of directories it owns. Production
// code does not import it.
package fakeplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Plugin is what the plugin says of itself and of the node.
type Plugin struct {
	// Type, Name, Endpoint and Versions answer GetInfo; Endpoint is the
	// CSI socket that Serve makes when CSI is set.
	Type, Name, Endpoint string
	Versions             []string
	// NodeID, MaxVolumes and Topology answer NodeGetInfo.
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string
	// HangGetInfo makes GetInfo wait for the caller to give up.
	HangGetInfo bool
	// BackingDir holds the volumes' data, one directory per volume ID,
	// made at its first stage or publish: the staging and target paths
	// are real bind mounts of it, so containers see its files.
	BackingDir string
	// StageUnstage and VolumeMountGroup are the Node service's
	// capabilities that NodeGetCapabilities reports.
	StageUnstage, VolumeMountGroup bool
	// GetVolumeStats adds GET_VOLUME_STATS to the capabilities:
	// NodeGetVolumeStats answers VolumeUsage, or, when that is nil, the
	// statfs figures of the volume path, as a real driver's.
	GetVolumeStats bool
	VolumeUsage    []*csipb.VolumeUsage
	// HangVolumeStats makes NodeGetVolumeStats wait for the caller to
	// give up.
	HangVolumeStats bool
	// ExpandVolume adds EXPAND_VOLUME to the capabilities: NodeExpandVolume
	// records the call and succeeds, unless FailExpand said otherwise.
	ExpandVolume bool

	mu         sync.Mutex
	statuses   []*registerapi.RegistrationStatus
	calls      []Call
	statsCalls []Call
	// hang holds, per volume ID whose NodePublishVolume hangs, a channel
	// that ReleasePublish closes.
	hang map[string]chan struct{}
	// expandFailures are the NodeExpandVolume calls left to fail, and
	// with what.
	expandFailures int
	expandErr      error
}

// Call is one CSI Node call the plugin served.
type Call struct {
	// Method is the RPC: "NodeStageVolume", "NodePublishVolume",
	// "NodeUnpublishVolume", "NodeUnstageVolume", "NodeExpandVolume".
	Method   string
	VolumeID string
	// Path is the staging path of a stage or unstage, the target path of
	// a publish or unpublish, the volume path of an expand; StagingPath
	// is a publish's or an expand's staging path.
	Path, StagingPath string
	ReadOnly          bool
	VolumeContext     map[string]string
	PublishContext    map[string]string
	Secrets           map[string]string
	Capability        *csipb.VolumeCapability
	// RequiredBytes is a NodeExpandVolume's capacity_range.required_bytes.
	RequiredBytes int64
}

// Calls are the CSI Node calls served so far (not NodeGetInfo nor
// NodeGetCapabilities), in order.
func (p *Plugin) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// Count is how many of calls are of method for volumeID ("": any).
func Count(calls []Call, method, volumeID string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method && (volumeID == "" || c.VolumeID == volumeID) {
			n++
		}
	}
	return n
}

// StatsCalls are the NodeGetVolumeStats calls served so far, in order:
// VolumeID, and the volume path as Path.
func (p *Plugin) StatsCalls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.statsCalls...)
}

// HangPublish makes NodePublishVolume of volumeID wait for the caller to
// give up, as a hung driver does, until ReleasePublish.
func (p *Plugin) HangPublish(volumeID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hang == nil {
		p.hang = map[string]chan struct{}{}
	}
	if p.hang[volumeID] == nil {
		p.hang[volumeID] = make(chan struct{})
	}
}

// FailExpand makes the next n NodeExpandVolume calls fail with err (a
// gRPC status error, as a driver's), recorded all the same.
func (p *Plugin) FailExpand(n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expandFailures, p.expandErr = n, err
}

// ReleasePublish ends HangPublish of volumeID: the calls waiting go on and
// publish, as do the next ones.
func (p *Plugin) ReleasePublish(volumeID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.hang[volumeID]; c != nil {
		close(c)
		delete(p.hang, volumeID)
	}
}

// record keeps the call and returns, for a publish of a hung volume, the
// channel its release closes; nil otherwise.
func (p *Plugin) record(c Call) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, c)
	if c.Method != "NodePublishVolume" {
		return nil
	}
	return p.hang[c.VolumeID]
}

// Statuses are the registration statuses the kubelet notified so far.
func (p *Plugin) Statuses() []*registerapi.RegistrationStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*registerapi.RegistrationStatus(nil), p.statuses...)
}

// Serve serves the registration server on regSocket and, when csiSocket
// is not empty, the CSI server there (as the plugin's Endpoint), until
// Stop or the end of the test. Each socket file is removed when it stops,
// as a plugin removes its socket when it goes.
func (p *Plugin) Serve(t testing.TB, regSocket, csiSocket string) (stop func()) {
	t.Helper()
	var servers []*grpc.Server
	if csiSocket != "" {
		p.Endpoint = csiSocket
		s := grpc.NewServer()
		csipb.RegisterIdentityServer(s, identity{p: p})
		csipb.RegisterNodeServer(s, node{p: p})
		servers = append(servers, listen(t, s, csiSocket))
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, registration{p: p})
	servers = append(servers, listen(t, s, regSocket))
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, s := range servers {
				s.Stop()
			}
			_ = os.Remove(regSocket)
			if csiSocket != "" {
				_ = os.Remove(csiSocket)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func listen(t testing.TB, s *grpc.Server, path string) *grpc.Server {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	return s
}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	p *Plugin
}

func (r registration) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	if r.p.HangGetInfo {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &registerapi.PluginInfo{Type: r.p.Type, Name: r.p.Name, Endpoint: r.p.Endpoint, SupportedVersions: r.p.Versions}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.statuses = append(r.p.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

type identity struct {
	csipb.UnimplementedIdentityServer
	p *Plugin
}

func (i identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: i.p.Name, VendorVersion: "0.0.1"}, nil
}

func (identity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

func (identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

type node struct {
	csipb.UnimplementedNodeServer
	p *Plugin
}

func (n node) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	var caps []*csipb.NodeServiceCapability
	add := func(t csipb.NodeServiceCapability_RPC_Type) {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}})
	}
	if n.p.StageUnstage {
		add(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	if n.p.VolumeMountGroup {
		add(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP)
	}
	if n.p.GetVolumeStats {
		add(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS)
	}
	if n.p.ExpandVolume {
		add(csipb.NodeServiceCapability_RPC_EXPAND_VOLUME)
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeGetVolumeStats answers VolumeUsage, or measures the volume path.
func (n node) NodeGetVolumeStats(ctx context.Context, r *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	n.p.mu.Lock()
	n.p.statsCalls = append(n.p.statsCalls, Call{Method: "NodeGetVolumeStats", VolumeID: r.VolumeId, Path: r.VolumePath, StagingPath: r.StagingTargetPath})
	n.p.mu.Unlock()
	if !n.p.GetVolumeStats {
		return nil, status.Error(codes.Unimplemented, "no GET_VOLUME_STATS")
	}
	if n.p.HangVolumeStats {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if n.p.VolumeUsage != nil {
		return &csipb.NodeGetVolumeStatsResponse{Usage: n.p.VolumeUsage}, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.VolumePath, &st); err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	bs := int64(st.Bsize)
	return &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Total: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs, Used: int64(st.Blocks-st.Bfree) * bs},
		{Unit: csipb.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: int64(st.Files - st.Ffree)},
	}}, nil
}

// NodeExpandVolume records the call (Path is the volume path) and
// answers the size asked for, or fails as FailExpand said.
func (n node) NodeExpandVolume(_ context.Context, r *csipb.NodeExpandVolumeRequest) (*csipb.NodeExpandVolumeResponse, error) {
	n.p.record(Call{Method: "NodeExpandVolume", VolumeID: r.VolumeId, Path: r.VolumePath, StagingPath: r.StagingTargetPath,
		Secrets: r.Secrets, Capability: r.VolumeCapability, RequiredBytes: r.CapacityRange.GetRequiredBytes()})
	n.p.mu.Lock()
	defer n.p.mu.Unlock()
	if !n.p.ExpandVolume {
		return nil, status.Error(codes.Unimplemented, "no EXPAND_VOLUME")
	}
	if n.p.expandFailures > 0 {
		n.p.expandFailures--
		return nil, n.p.expandErr
	}
	return &csipb.NodeExpandVolumeResponse{CapacityBytes: r.CapacityRange.GetRequiredBytes()}, nil
}

// NodeStageVolume bind-mounts the volume's backing directory at the
// staging path, once (a second call finds it mounted: idempotent).
func (n node) NodeStageVolume(_ context.Context, r *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	n.p.record(Call{Method: "NodeStageVolume", VolumeID: r.VolumeId, Path: r.StagingTargetPath,
		VolumeContext: r.VolumeContext, PublishContext: r.PublishContext, Secrets: r.Secrets, Capability: r.VolumeCapability})
	src, err := n.p.backing(r.VolumeId)
	if err != nil {
		return nil, err
	}
	if err := bindOnce(src, r.StagingTargetPath, false); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeStageVolumeResponse{}, nil
}

// NodePublishVolume bind-mounts the staging path (or, for a driver that
// does not stage, the backing directory) at the target path, which it
// makes, read-only when asked.
func (n node) NodePublishVolume(ctx context.Context, r *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	hang := n.p.record(Call{Method: "NodePublishVolume", VolumeID: r.VolumeId, Path: r.TargetPath, StagingPath: r.StagingTargetPath,
		ReadOnly: r.Readonly, VolumeContext: r.VolumeContext, PublishContext: r.PublishContext, Secrets: r.Secrets, Capability: r.VolumeCapability})
	if hang != nil {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-hang:
		}
	}
	src := r.StagingTargetPath
	if src == "" {
		var err error
		if src, err = n.p.backing(r.VolumeId); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(r.TargetPath, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := bindOnce(src, r.TargetPath, r.Readonly); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts the target path and removes it, as the
// CSI spec asks of a driver.
func (n node) NodeUnpublishVolume(_ context.Context, r *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	n.p.record(Call{Method: "NodeUnpublishVolume", VolumeID: r.VolumeId, Path: r.TargetPath})
	if err := unmountAll(r.TargetPath); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(r.TargetPath); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path.
func (n node) NodeUnstageVolume(_ context.Context, r *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	n.p.record(Call{Method: "NodeUnstageVolume", VolumeID: r.VolumeId, Path: r.StagingTargetPath})
	if err := unmountAll(r.StagingTargetPath); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// backing is the volume's directory under BackingDir, made if need be.
func (p *Plugin) backing(volumeID string) (string, error) {
	if p.BackingDir == "" || volumeID == "" || strings.ContainsAny(volumeID, "/\x00") || volumeID == "." || volumeID == ".." {
		return "", status.Errorf(codes.InvalidArgument, "volume %q has no backing directory", volumeID)
	}
	dir := filepath.Join(p.BackingDir, volumeID)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", status.Error(codes.Internal, err.Error())
	}
	return dir, nil
}

// bindOnce bind-mounts src at dst unless dst is a mount point already.
func bindOnce(src, dst string, readOnly bool) error {
	if mounted(dst) {
		return nil
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	if readOnly {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(dst, 0)
			return fmt.Errorf("remount %s read-only: %w", dst, err)
		}
	}
	return nil
}

// mounted reports whether path is a mount point, as its mount ID differs
// from its parent's.
func mounted(path string) bool {
	id := func(p string) (uint64, bool) {
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err != nil {
			return 0, false
		}
		return stx.Mnt_id, true
	}
	a, ok1 := id(path)
	b, ok2 := id(filepath.Dir(path))
	return ok1 && ok2 && a != b
}

func unmountAll(path string) error {
	for range 8 {
		if !mounted(path) {
			return nil
		}
		if err := unix.Unmount(path, 0); err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("%s is still mounted", path)
}

func (n node) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	res := &csipb.NodeGetInfoResponse{NodeId: n.p.NodeID, MaxVolumesPerNode: n.p.MaxVolumes}
	if len(n.p.Topology) > 0 {
		res.AccessibleTopology = &csipb.Topology{Segments: n.p.Topology}
	}
	return res, nil
}
