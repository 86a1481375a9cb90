package cpumanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/utils/cpuset"
	"k8s.io/utils/dump"

	"github.com/actorlet/actorlet/internal/atomicfile"
)

// StateFile is the state file's name under the root directory, as
// upstream's.
const StateFile = "cpu_manager_state"

// checksum is upstream's checkpointmanager checksum.Checksum.
type checksum uint64

// checkpointV2 is upstream's CPUManagerCheckpointV2: the fields every
// version of the file carries at its top level, for kubelets that read
// only those.
type checkpointV2 struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      checksum                     `json:"checksum"`
}

// checkpointData is upstream's CPUManagerCheckpointData, the v4 payload
// (pod-level entries and resize baselines are not made here).
type checkpointData struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
}

// checkpoint is upstream's v4 CPUManagerCheckpoint: the v2 fields, and
// the authoritative Data with its own checksum.
type checkpoint struct {
	checkpointV2
	Data         string   `json:"data"`
	DataChecksum checksum `json:"dataChecksum"`
}

// v2Checksum is the v2 fields' checksum as upstream computes it: the
// fnv32a of their spew dump, under upstream's type names (its older
// kubelets expect "CPUManagerCheckpoint").
func v2Checksum(cp checkpointV2) checksum {
	return fnvOf(v2Dump(cp))
}

func v2Dump(cp checkpointV2) string {
	cp.Checksum = 0
	s := dump.ForHash(&cp)
	s = strings.Replace(s, "cpumanager.checkpointV2", "state.CPUManagerCheckpoint", 1)
	return strings.ReplaceAll(s, "cpumanager.checksum", "checksum.Checksum")
}

// olderChecksums are the checksums earlier kubelets wrote for the same
// top-level fields: under the type names CPUManagerCheckpointV2 and
// CPUManagerCheckpointV3, the latter with its (empty or absent) pod
// entries, all of which upstream still accepts.
func olderChecksums(cp checkpointV2) []checksum {
	base := v2Dump(cp)
	var out []checksum
	for _, name := range []string{"CPUManagerCheckpoint", "CPUManagerCheckpointV2", "CPUManagerCheckpointV3"} {
		named := strings.Replace(base, "state.CPUManagerCheckpoint", "state."+name, 1)
		out = append(out, fnvOf(named))
		for _, pods := range []string{"<nil>", "map[]"} {
			out = append(out, fnvOf(strings.Replace(named, " Checksum:", " PodEntries:(state.PodCPUAssignments)"+pods+" Checksum:", 1)))
		}
	}
	return out
}

// dataChecksum is upstream's checksum.New of a string.
func dataChecksum(data string) checksum { return fnvOf(dump.ForHash(data)) }

func fnvOf(s string) checksum {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return checksum(h.Sum32())
}

// Marshal returns the state file's content, in upstream's v4 format.
func (s State) Marshal() ([]byte, error) {
	d := checkpointData{PolicyName: s.Policy, DefaultCPUSet: s.Default.String(), Entries: map[string]map[string]string{}}
	for pod, cs := range s.Entries {
		d.Entries[pod] = make(map[string]string, len(cs))
		for c, set := range cs {
			d.Entries[pod][c] = set.String()
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	cp := checkpoint{checkpointV2: checkpointV2{PolicyName: d.PolicyName, DefaultCPUSet: d.DefaultCPUSet, Entries: d.Entries},
		Data: string(data), DataChecksum: dataChecksum(string(data))}
	cp.Checksum = v2Checksum(cp.checkpointV2)
	return json.Marshal(cp)
}

// Unmarshal reads a state file of upstream's v4 or v2 format, verifying
// its checksum, as upstream restores its state.
func Unmarshal(b []byte) (*State, error) {
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("could not restore state from checkpoint: %w", err)
	}
	d := checkpointData{PolicyName: cp.PolicyName, DefaultCPUSet: cp.DefaultCPUSet, Entries: cp.Entries}
	switch {
	case cp.Data != "" || cp.DataChecksum != 0:
		if got := dataChecksum(cp.Data); got != cp.DataChecksum {
			return nil, fmt.Errorf("could not restore state from checkpoint: could not load v4 checkpoint: checkpoint is corrupted")
		}
		d = checkpointData{}
		if err := json.Unmarshal([]byte(cp.Data), &d); err != nil {
			return nil, fmt.Errorf("could not restore state from checkpoint: failed to deserialize cpu manager checkpoint data: %w", err)
		}
	case cp.Checksum != 0 && !slices.Contains(olderChecksums(cp.checkpointV2), cp.Checksum):
		return nil, fmt.Errorf("could not restore state from checkpoint: checkpoint is corrupted")
	}
	st := &State{Policy: d.PolicyName, Entries: map[string]map[string]cpuset.CPUSet{}}
	var err error
	if st.Default, err = cpuset.Parse(d.DefaultCPUSet); err != nil {
		return nil, fmt.Errorf("could not restore state from checkpoint: could not parse default CPU set %q: %w", d.DefaultCPUSet, err)
	}
	for pod, cs := range d.Entries {
		st.Entries[pod] = make(map[string]cpuset.CPUSet, len(cs))
		for c, s := range cs {
			set, err := cpuset.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("could not restore state from checkpoint: could not parse cpuset %q for container %q in pod %q: %w", s, c, pod, err)
			}
			st.Entries[pod][c] = set
		}
	}
	return st, nil
}

// Load reads ROOT/cpu_manager_state; no file: nil. An error names the
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
		return nil, fmt.Errorf("%w, please drain this node and delete the CPU manager checkpoint file %q before restarting Kubelet", err, path)
	}
	return st, nil
}

// Save writes ROOT/cpu_manager_state atomically.
func Save(rootDir string, s State) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(rootDir, StateFile), b, 0o644)
}

// equalEntries reports whether two states assign the same CPUs.
func equalEntries(a, b map[string]map[string]cpuset.CPUSet) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]cpuset.CPUSet) bool {
		return maps.EqualFunc(x, y, func(p, q cpuset.CPUSet) bool { return same(p, q) })
	})
}

// Equal reports whether two states are the same.
func (s State) Equal(o State) bool {
	return s.Policy == o.Policy && same(s.Default, o.Default) && equalEntries(s.Entries, o.Entries)
}
