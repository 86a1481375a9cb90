package memorymanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/utils/dump"

	"github.com/actorlet/actorlet/internal/atomicfile"
)

// StateFile is the state file's name under the root directory, as
// upstream's.
const StateFile = "memory_manager_state"

// checksum is upstream's checkpointmanager checksum.Checksum.
type checksum uint64

// checkpointV1 is upstream's MemoryManagerCheckpointV1: the fields every
// version of the file carries at its top level, for kubelets that read
// only those.
type checkpointV1 struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	Checksum     checksum                   `json:"checksum"`
}

// podEntry is upstream's PodEntry, of the pod-level assignments
// (PodLevelResourceManagers) a v2 or v3 file may carry; they are read for
// the checksum and not used, as upstream without that gate.
type podEntry struct {
	MemoryBlocks []Block `json:"memoryBlocks,omitempty"`
}

// checkpointV2 is upstream's MemoryManagerCheckpointV2.
type checkpointV2 struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	PodEntries   map[string]podEntry        `json:"podEntries,omitempty"`
	Checksum     checksum                   `json:"checksum"`
}

// checkpointData is upstream's MemoryManagerCheckpointData, the v3
// payload.
type checkpointData struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	PodEntries   map[string]podEntry        `json:"podEntries,omitempty"`
}

// checkpoint is upstream's v3 MemoryManagerCheckpoint: the v1 fields, and
// the authoritative Data with its own checksum.
type checkpoint struct {
	checkpointV1
	Data         string   `json:"data"`
	DataChecksum checksum `json:"dataChecksum"`
}

// legacyChecksum is the checksum of the top-level fields as upstream
// computes it: the fnv32a of their spew dump under upstream's type names,
// the struct's own name being MemoryManagerCheckpoint whatever its version.
func legacyChecksum(v any) checksum {
	s := dump.ForHash(v)
	s = strings.Replace(s, "memorymanager.checkpointV1", "state.MemoryManagerCheckpoint", 1)
	s = strings.Replace(s, "memorymanager.checkpointV2", "state.MemoryManagerCheckpoint", 1)
	s = strings.ReplaceAll(s, "memorymanager.checksum", "checksum.Checksum")
	s = strings.ReplaceAll(s, "map[string]memorymanager.podEntry", "state.PodMemoryAssignments")
	s = strings.ReplaceAll(s, "memorymanager.podEntry", "state.PodEntry")
	s = strings.ReplaceAll(s, "memorymanager.", "state.")
	return fnvOf(s)
}

// dataChecksum is upstream's checksum.New of a string.
func dataChecksum(data string) checksum { return fnvOf(dump.ForHash(data)) }

func fnvOf(s string) checksum {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return checksum(h.Sum32())
}

// Marshal returns the state file's content, in upstream's v3 format.
func (s State) Marshal() ([]byte, error) {
	d := checkpointData{PolicyName: s.Policy, MachineState: s.Machine, Entries: s.Entries}
	if d.MachineState == nil {
		d.MachineState = NUMANodeMap{}
	}
	if d.Entries == nil {
		d.Entries = ContainerMemoryAssignments{}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("failed to serialize memory manager checkpoint data: %w", err)
	}
	cp := checkpoint{checkpointV1: checkpointV1{PolicyName: d.PolicyName, MachineState: d.MachineState, Entries: d.Entries},
		Data: string(data), DataChecksum: dataChecksum(string(data))}
	cp.Checksum = legacyChecksum(&cp.checkpointV1)
	return json.Marshal(cp)
}

// errCorrupt is upstream's CorruptCheckpointError's message.
var errCorrupt = errors.New("checkpoint is corrupted")

// Unmarshal reads a state file of upstream's v3, v2 or v1 format,
// verifying its checksum, as upstream restores its state (a v3 file is
// never read as an older one).
func Unmarshal(b []byte) (*State, error) {
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("could not load v3 checkpoint: failed to deserialize memory manager checkpoint: %w", err)
	}
	if cp.Data != "" || cp.DataChecksum != 0 {
		var d checkpointData
		if err := json.Unmarshal([]byte(cp.Data), &d); err != nil {
			return nil, fmt.Errorf("could not load v3 checkpoint: failed to deserialize memory manager checkpoint data: %w", err)
		}
		if dataChecksum(cp.Data) != cp.DataChecksum {
			return nil, fmt.Errorf("could not load v3 checkpoint: %w", errCorrupt)
		}
		return stateOf(d.PolicyName, d.MachineState, d.Entries), nil
	}
	var v2 checkpointV2
	if err := json.Unmarshal(b, &v2); err == nil {
		sum := v2.Checksum
		v2.Checksum = 0
		if legacyChecksum(&v2) == sum {
			return stateOf(v2.PolicyName, v2.MachineState, v2.Entries), nil
		}
	}
	var v1 checkpointV1
	if err := json.Unmarshal(b, &v1); err != nil {
		return nil, err
	}
	sum := v1.Checksum
	v1.Checksum = 0
	if sum != 0 && legacyChecksum(&v1) != sum {
		return nil, errCorrupt
	}
	return stateOf(v1.PolicyName, v1.MachineState, v1.Entries), nil
}

func stateOf(policy string, machine NUMANodeMap, entries ContainerMemoryAssignments) *State {
	if machine == nil {
		machine = NUMANodeMap{}
	}
	if entries == nil {
		entries = ContainerMemoryAssignments{}
	}
	return &State{Policy: policy, Machine: machine, Entries: entries}
}

// Load reads ROOT/memory_manager_state; no file: nil. An error names the
// file and asks, as upstream, for the node to be drained and the file
// removed.
func Load(rootDir string) (*State, error) {
	path := filepath.Join(rootDir, StateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := Unmarshal(b)
	if err != nil {
		return nil, restoreError(err, path)
	}
	return st, nil
}

func restoreError(err error, path string) error {
	return fmt.Errorf("could not restore state from checkpoint: %w, please drain this node and delete the memory manager checkpoint file %q before restarting Kubelet", err, path)
}

// Save writes ROOT/memory_manager_state atomically.
func Save(rootDir string, s State) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(rootDir, StateFile), b, 0o644)
}
