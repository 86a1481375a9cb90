package podmanager

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/memorymanager"
)

// MemoryManager configures the memory manager the pod-manager owns, a
// hint provider of the topology manager after the CPU manager: admission
// gives a Guaranteed pod's containers their memory and huge pages on NUMA
// nodes (Static policy), a pod's memory goes back when nothing of it
// runs, and the state file follows every change.
type MemoryManager struct {
	Nodes  []memorymanager.Node
	Config memorymanager.Config
	// View is where the state is published for the pod runtime.
	View *memorymanager.View
}

// Open makes the memory manager from its configuration and the state
// file, as upstream's at start: a state file of another policy, or one
// that does not fit the node, is an error that stops the start.
func (c *MemoryManager) Open(rootDir string) (*memorymanager.Manager, error) {
	m, err := memorymanager.New(c.Nodes, c.Config)
	if err != nil {
		return nil, err
	}
	var st *memorymanager.State
	if rootDir != "" {
		if st, err = memorymanager.Load(rootDir); err != nil {
			return nil, err
		}
	}
	if err := m.Start(st, filepath.Join(rootDir, memorymanager.StateFile)); err != nil {
		return nil, err
	}
	return m, nil
}

// CmdSaveMemory: write the memory manager's state file and publish the
// state.
type CmdSaveMemory struct{ State memorymanager.State }

func (CmdSaveMemory) isCommand() {}

// releaseMemory gives back a pod's memory once nothing of it runs.
func (m *Machine) releaseMemory(uid string) {
	if m.mem == nil {
		return
	}
	before := m.mem.State()
	m.mem.RemovePod(uid)
	m.saveMemoryIfChanged(before)
}

// pruneMemory releases the memory of an earlier run's pods that no source
// gave back (once every source has sent its set).
func (m *Machine) pruneMemory() {
	if m.mem == nil {
		return
	}
	before := m.mem.State()
	for _, uid := range m.mem.Pods() {
		if p, ok := m.pods[types.UID(uid)]; ok && counts(p) {
			continue
		}
		if _, waiting := m.waiting[types.UID(uid)]; waiting {
			continue
		}
		m.mem.RemovePod(uid)
	}
	m.saveMemoryIfChanged(before)
}

func (m *Machine) saveMemoryIfChanged(before memorymanager.State) {
	if after := m.mem.State(); !after.Equal(before) {
		m.emit(CmdSaveMemory{State: after})
	}
}

// Memory returns the memory manager's state (nil: none).
func (m *Machine) Memory() *memorymanager.State {
	if m.mem == nil {
		return nil
	}
	s := m.mem.State()
	return &s
}

// saveMemory writes the state file at once, as the allocations'
// checkpoint, and publishes the state for the containers created from
// now on.
func (a *Actor) saveMemory(st memorymanager.State) {
	if a.p.RootDir != "" {
		if err := memorymanager.Save(a.p.RootDir, st); err != nil {
			a.log.Error().Err(err).Msg("writing the memory manager's state file failed")
		}
	}
	a.p.MemoryManager.View.Set(st)
}

// startMemory publishes the state the pod-manager starts with.
func (a *Actor) startMemory() {
	if a.p.MemoryManager == nil {
		return
	}
	if st := a.m.Memory(); st != nil {
		a.p.MemoryManager.View.Set(*st)
	}
}
