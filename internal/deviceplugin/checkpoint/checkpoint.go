// Package checkpoint reads and writes the device manager's checkpoint,
// <root-dir>/device-plugins/kubelet_internal_checkpoint, in upstream's
// format (pkg/kubelet/cm/devicemanager/checkpoint): JSON of the
// allocations and the registered devices, with a checksum over the data.
// A node switched between actorlet and the upstream kubelet keeps its
// pods' devices. The checksum hashes the Go value as spew prints it, type
// names included, so the package and type names here are upstream's.
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"

	"k8s.io/utils/dump"

	"github.com/actorlet/actorlet/internal/atomicfile"
)

// FileName is upstream's kubeletDeviceManagerCheckpoint, in the device
// plugins' directory.
const FileName = "kubelet_internal_checkpoint"

// DevicesPerNUMA are the device IDs allocated, by the NUMA node their
// plugin reports (NoTopology for a device without one).
type DevicesPerNUMA map[int64][]string

// NoTopology is upstream's nodeWithoutTopology.
const NoTopology = -1

// PodDevicesEntry is one container's devices of one resource, with the
// plugin's Allocate answer for it (a marshalled ContainerAllocateResponse).
type PodDevicesEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     DevicesPerNUMA
	AllocResp     []byte
}

type checkpointData struct {
	PodDeviceEntries  []PodDevicesEntry
	RegisteredDevices map[string][]string
}

// Data is the file's content.
type Data struct {
	Data     checkpointData
	Checksum uint64
}

// ErrCorrupt is a checkpoint whose checksum does not match its data.
var ErrCorrupt = errors.New("checkpoint is corrupted")

func checksum(d checkpointData) uint64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(d))
	return uint64(h.Sum32())
}

// Marshal is the file's content for entries and the registered devices
// (by resource).
func Marshal(entries []PodDevicesEntry, registered map[string][]string) ([]byte, error) {
	d := Data{Data: checkpointData{PodDeviceEntries: entries, RegisteredDevices: registered}}
	d.Checksum = checksum(d.Data)
	return json.Marshal(d)
}

// Unmarshal reads a checkpoint file's content, verifying its checksum.
func Unmarshal(blob []byte) ([]PodDevicesEntry, map[string][]string, error) {
	var d Data
	if err := json.Unmarshal(blob, &d); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if got := checksum(d.Data); got != d.Checksum {
		return nil, nil, fmt.Errorf("%w: checksum %d, computed %d", ErrCorrupt, d.Checksum, got)
	}
	return d.Data.PodDeviceEntries, d.Data.RegisteredDevices, nil
}

// Read reads the checkpoint in dir; a missing file is no entries.
func Read(dir string) ([]PodDevicesEntry, map[string][]string, error) {
	path := filepath.Join(dir, FileName)
	blob, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	entries, registered, err := Unmarshal(blob)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return entries, registered, nil
}

// Write replaces the checkpoint in dir atomically, mode 0600 as
// upstream's file store leaves it.
func Write(dir string, entries []PodDevicesEntry, registered map[string][]string) error {
	blob, err := Marshal(entries, registered)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, FileName), blob, 0o600)
}
