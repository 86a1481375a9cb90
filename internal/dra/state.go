package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/atomicfile"
)

// CheckpointName is the checkpoint's file name under the root directory,
// upstream's.
const CheckpointName = "dra_manager_state"

// Upstream's checkpoint kind and version.
const (
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// ClaimInfoState is one prepared (or being prepared) claim, as upstream's
// state.ClaimInfoState: the JSON field names are the checkpoint's.
type ClaimInfoState struct {
	ClaimUID  types.UID
	ClaimName string
	Namespace string
	// PodUIDs are the pods that use the claim, as a set (upstream's
	// sets.Set[string] marshals as an object of empty objects).
	PodUIDs map[string]struct{}
	// DriverState holds every driver with a result in the allocation,
	// even one that provides no device.
	DriverState map[string]DriverState
}

// DriverState is what one driver prepared for a claim.
type DriverState struct {
	Devices            []Device
	SkipNodeOperations []resourceapi.SkipNodeOperation `json:"skipNodeOperations,omitempty"`
}

// Skips tells whether the allocation lets the node skip op for this
// driver.
func (s DriverState) Skips(op resourceapi.SkipNodeOperation) bool {
	return slices.Contains(s.SkipNodeOperations, resourceapi.SkipNodeOperationAll) ||
		slices.Contains(s.SkipNodeOperations, op)
}

// Device is one device a driver prepared, and the CDI device IDs that
// give it to a container.
type Device struct {
	PoolName     string
	DeviceName   string
	ShareID      *types.UID
	RequestNames []string
	CDIDeviceIDs []string
}

// checkpoint is upstream's file: Data is the JSON of checkpointData,
// Checksum its CRC-32 (IEEE).
type checkpoint struct {
	Data     string
	Checksum uint32
}

type checkpointData struct {
	metav1.TypeMeta
	ClaimInfoStateList []ClaimInfoState
}

// Encode returns the checkpoint of claims, in upstream's format.
func Encode(claims []ClaimInfoState) ([]byte, error) {
	data, err := json.Marshal(checkpointData{
		TypeMeta:           metav1.TypeMeta{Kind: checkpointKind, APIVersion: checkpointAPIVersion},
		ClaimInfoStateList: claims,
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpoint{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
}

// Decode reads a checkpoint written by Encode or by upstream's kubelet.
func Decode(blob []byte) ([]ClaimInfoState, error) {
	var cp checkpoint
	if err := json.Unmarshal(blob, &cp); err != nil {
		return nil, err
	}
	if sum := crc32.ChecksumIEEE([]byte(cp.Data)); sum != cp.Checksum {
		return nil, fmt.Errorf("checkpoint is corrupted: checksum %d, data's %d", cp.Checksum, sum)
	}
	var data checkpointData
	if err := json.Unmarshal([]byte(cp.Data), &data); err != nil {
		return nil, err
	}
	if data.Kind != checkpointKind || data.APIVersion != checkpointAPIVersion {
		return nil, fmt.Errorf("checkpoint is a %s of %s, want a %s of %s", data.Kind, data.APIVersion, checkpointKind, checkpointAPIVersion)
	}
	return data.ClaimInfoStateList, nil
}

// Load reads the checkpoint at path; a missing file is no claim, as
// upstream starts with an empty cache then.
func Load(path string) ([]ClaimInfoState, error) {
	blob, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	claims, err := Decode(blob)
	if err != nil {
		return nil, fmt.Errorf("DRA checkpoint %s: %w", path, err)
	}
	return claims, nil
}

// Save writes claims to the checkpoint at path, atomically.
func Save(path string, claims []ClaimInfoState) error {
	if claims == nil {
		claims = []ClaimInfoState{}
	}
	blob, err := Encode(claims)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, blob, 0o600)
}
