package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/mount-utils"
)

var mountCap = &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}

func create(name string, size int64, caps ...*csi.VolumeCapability) func(*driver) error {
	if caps == nil {
		caps = []*csi.VolumeCapability{mountCap}
	}
	return func(d *driver) error {
		_, err := d.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: caps,
			CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
		return err
	}
}

func publish(name, node string, ro bool) func(*driver) error {
	return func(d *driver) error {
		_, err := d.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
			VolumeId: volumeID(name), NodeId: node, Readonly: ro, VolumeCapability: mountCap})
		return err
	}
}

func unpublish(name, node string) func(*driver) error {
	return func(d *driver) error {
		_, err := d.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: volumeID(name), NodeId: node})
		return err
	}
}

func expand(name string, size int64) func(*driver) error {
	return func(d *driver) error {
		_, err := d.ControllerExpandVolume(context.Background(), &csi.ControllerExpandVolumeRequest{VolumeId: volumeID(name),
			CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
		return err
	}
}

func deleteVolume(name string) func(*driver) error {
	return func(d *driver) error {
		_, err := d.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: volumeID(name)})
		return err
	}
}

// TestControllerSteps runs the controller service through one volume's
// life, each step's outcome checked, and what it leaves on disk: the
// sidecars retry calls whose answer they lost, so every call is
// idempotent, and a conflicting one is refused with CSI's code.
func TestControllerSteps(t *testing.T) {
	dir := t.TempDir()
	d, err := newDriver(config{name: "test", nodeID: "n1", stateDir: dir, attachRequired: true}, mount.NewFakeMounter(nil))
	if err != nil {
		t.Fatal(err)
	}
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	for _, s := range []struct {
		name     string
		call     func(*driver) error
		code     codes.Code
		capacity int64 // of volume "a" after the step; 0: none
	}{
		{"create", create("a", 1<<20), codes.OK, 1 << 20},
		{"create again", create("a", 1<<20), codes.OK, 1 << 20},
		{"create smaller again", create("a", 1<<10), codes.OK, 1 << 20},
		{"create bigger again", create("a", 2<<20), codes.AlreadyExists, 1 << 20},
		{"create a block volume", create("blk", 1<<20, block), codes.OK, 1 << 20},
		{"create it again", create("blk", 1<<20, block), codes.OK, 1 << 20},
		{"create it again as a directory", create("blk", 1<<20), codes.AlreadyExists, 1 << 20},
		{"create with both access types", create("b", 1<<20, mountCap, block), codes.InvalidArgument, 1 << 20},
		{"create without capabilities", create("b", 1<<20, []*csi.VolumeCapability{}...), codes.InvalidArgument, 1 << 20},
		{"publish an unknown volume", publish("b", "n1", false), codes.NotFound, 1 << 20},
		{"publish", publish("a", "n1", false), codes.OK, 1 << 20},
		{"publish again", publish("a", "n1", false), codes.OK, 1 << 20},
		{"publish read-only to the same node", publish("a", "n1", true), codes.AlreadyExists, 1 << 20},
		{"publish read-only to another node", publish("a", "n2", true), codes.OK, 1 << 20},
		{"delete while published", deleteVolume("a"), codes.FailedPrecondition, 1 << 20},
		{"unpublish", unpublish("a", "n1"), codes.OK, 1 << 20},
		{"unpublish again", unpublish("a", "n1"), codes.OK, 1 << 20},
		{"unpublish from every node", unpublish("a", ""), codes.OK, 1 << 20},
		{"expand", expand("a", 4<<20), codes.OK, 4 << 20},
		{"expand to less", expand("a", 2<<20), codes.OK, 4 << 20},
		{"expand an unknown volume", expand("b", 2<<20), codes.NotFound, 4 << 20},
		{"delete", deleteVolume("a"), codes.OK, 0},
		{"delete again", deleteVolume("a"), codes.OK, 0},
	} {
		err := s.call(d)
		if got := status.Code(err); got != s.code {
			t.Fatalf("%s: %v, want code %v", s.name, err, s.code)
		}
		// A driver restarted after the step knows what this one knows.
		restarted, err := newDriver(config{stateDir: dir}, mount.NewFakeMounter(nil))
		if err != nil {
			t.Fatalf("%s: restart: %v", s.name, err)
		}
		_, statErr := os.Stat(d.volumeDir(volumeID("a")))
		if v := restarted.volumes[volumeID("a")]; s.capacity == 0 {
			if v != nil || !errors.Is(statErr, os.ErrNotExist) {
				t.Errorf("%s: volume %+v, directory %v, want neither", s.name, v, statErr)
			}
		} else if v == nil || v.Capacity != s.capacity || statErr != nil {
			t.Errorf("%s: volume %+v, directory %v, want %d bytes and the directory", s.name, v, statErr, s.capacity)
		}
	}
}

// TestNodeMounts stages and publishes a volume with real bind mounts in a
// temporary directory: what is written through a read-write target is in
// the volume's directory, a read-only target refuses writes, staging
// without ControllerPublishVolume's context is refused, and unpublish and
// unstage leave no mount behind, twice over.
func TestNodeMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	dir := t.TempDir()
	m := mount.New("")
	d, err := newDriver(config{name: "test", nodeID: "n1", stateDir: filepath.Join(dir, "state"), attachRequired: true}, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := create("v", 1<<20)(d); err != nil {
		t.Fatal(err)
	}
	id := volumeID("v")
	staging, rw, ro := filepath.Join(dir, "staging"), filepath.Join(dir, "rw"), filepath.Join(dir, "ro")
	t.Cleanup(func() {
		for _, p := range []string{ro, rw, staging} {
			_ = mount.CleanupMountPoint(p, m, true)
		}
	})

	stage := func(ctx map[string]string) error {
		_, err := d.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: id,
			StagingTargetPath: staging, VolumeCapability: mountCap, PublishContext: ctx})
		return err
	}
	if err := stage(nil); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("stage without a publish context: %v, want FailedPrecondition", err)
	}
	for range 2 {
		if err := stage(map[string]string{publishContextKey: "n1"}); err != nil {
			t.Fatalf("stage: %v", err)
		}
	}
	for _, p := range []struct {
		target string
		ro     bool
	}{{rw, false}, {ro, true}, {rw, false}} {
		if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
			TargetPath: p.target, Readonly: p.ro, VolumeCapability: mountCap}); err != nil {
			t.Fatalf("publish at %s: %v", p.target, err)
		}
	}
	if err := os.WriteFile(filepath.Join(rw, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d.volumeDir(id), "f")); err != nil || string(b) != "data" {
		t.Errorf("the volume's directory has %q, %v; want what was written through the target", b, err)
	}
	if err := os.WriteFile(filepath.Join(ro, "g"), nil, 0o644); err == nil {
		t.Errorf("a write through the read-only target succeeded")
	}
	stats, err := d.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: rw})
	if err != nil {
		t.Fatal(err)
	}
	if b := stats.Usage[0]; b.Total != 1<<20 || b.Used == 0 || b.Available != b.Total-b.Used {
		t.Errorf("bytes: %+v, want 1 MiB in all, some used", b)
	}

	for range 2 {
		for _, target := range []string{rw, ro} {
			if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
				t.Fatalf("unpublish %s: %v", target, err)
			}
		}
		if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
			t.Fatalf("unstage: %v", err)
		}
	}
	for _, p := range []string{rw, ro, staging} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after unpublish and unstage: %v, want it gone", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.volumeDir(id), "f")); err != nil {
		t.Errorf("the volume's data after unstage: %v", err)
	}
}

// TestLogWithoutSecrets: what the driver logs of a request carries no
// secret, whichever request carries them, and the rest of it is there.
func TestLogWithoutSecrets(t *testing.T) {
	secrets := map[string]string{"password": "hunter2"}
	for _, req := range []proto.Message{
		&csi.CreateVolumeRequest{Name: "vol-1", Secrets: secrets},
		&csi.ControllerPublishVolumeRequest{VolumeId: "vol-1", Secrets: secrets},
		&csi.NodeStageVolumeRequest{VolumeId: "vol-1", Secrets: secrets},
		&csi.NodePublishVolumeRequest{VolumeId: "vol-1", Secrets: secrets},
	} {
		logged := fmt.Sprint(withoutSecrets(req))
		if strings.Contains(logged, "hunter2") || !strings.Contains(logged, "vol-1") {
			t.Errorf("%T logged as %s: want vol-1 and no secret", req, logged)
		}
		if !strings.Contains(fmt.Sprint(req), "hunter2") {
			t.Errorf("%T: the request itself lost its secrets", req)
		}
	}
}

// TestNodeBlock stages and publishes a block volume with a real loop
// device: the volume's file is of its capacity, the target a device file
// whose writes reach the volume's file; unpublish removes the target and
// unstage frees the loop device, twice over.
func TestNodeBlock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	dir := t.TempDir()
	m := mount.New("")
	d, err := newDriver(config{name: "test", nodeID: "n1", stateDir: filepath.Join(dir, "state")}, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	if err := create("b", 1<<20, block)(d); err != nil {
		t.Fatal(err)
	}
	id := volumeID("b")
	file := d.volumeDir(id)
	if fi, err := os.Stat(file); err != nil || fi.Size() != 1<<20 || !fi.Mode().IsRegular() {
		t.Fatalf("the volume's file: %v, %v", fi, err)
	}
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	t.Cleanup(func() {
		_ = m.Unmount(target)
		_ = detachLoop(file)
	})
	if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: block}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("publish before the stage: %v, want FailedPrecondition", err)
	}
	if _, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		VolumeCapability: mountCap}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("stage as a filesystem: %v, want InvalidArgument", err)
	}
	for range 2 {
		if _, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: block}); err != nil {
			t.Fatalf("stage: %v", err)
		}
		if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
			TargetPath: target, VolumeCapability: block}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	if !isDevice(target) {
		t.Fatal("the target is no device")
	}
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("on-the-device"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	for range 2 {
		if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
			t.Fatalf("unpublish: %v", err)
		}
		if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
			t.Fatalf("unstage: %v", err)
		}
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target after unpublish: %v, want it gone", err)
	}
	if dev, err := loopDevice(file); err != nil || dev != "" {
		t.Errorf("loop device after unstage: %q, %v; want none", dev, err)
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.HasPrefix(string(b), "on-the-device") {
		t.Errorf("the volume's file begins %q, %v; want what was written to the device", b[:min(len(b), 16)], err)
	}
}
