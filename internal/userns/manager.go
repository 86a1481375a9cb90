package userns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/atomicfile"
	"github.com/actorlet/actorlet/internal/volume"
)

// Manager is the node's Allocator with its record on disk: each pod's
// range is in its directory's userns file, written before the range is
// handed out and read back by NewManager. Pods sync in parallel off any
// mailbox and the volume-manager frees ranges as it removes pod
// directories, so the Manager is safe for concurrent use.
type Manager struct {
	root string
	mu   sync.Mutex
	a    *Allocator
	// start draws the slot an allocation's search starts at.
	start func(n int) int
}

// NewManager makes the allocator of the kubelet's range r for slots of
// idsPerPod IDs and maxPods pods, and records the range of every pod whose
// directory under rootDir has a userns file, as upstream's
// MakeUserNsManager: a file it cannot take (unreadable, invalid, outside
// the range, or overlapping another pod's) fails the start, rather than
// leaving a running pod's IDs free for another pod.
func NewManager(rootDir string, r IDRange, idsPerPod uint32, maxPods int) (*Manager, error) {
	a, err := NewAllocator(r.First, r.Length, idsPerPod, maxPods)
	if err != nil {
		return nil, err
	}
	m := &Manager{root: rootDir, a: a, start: rand.IntN}
	entries, err := os.ReadDir(filepath.Join(rootDir, "pods"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read pods from disk: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		if err := m.recordFromFile(uid); err != nil && !errors.Is(err, errNoFile) {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	return m, nil
}

func (m *Manager) file(uid types.UID) string {
	return filepath.Join(volume.PodDir(m.root, uid), FileName)
}

// recordFromFile records the pod's range from its file, if it has one; it
// reports errNoFile when it has none.
func (m *Manager) recordFromFile(uid types.UID) error {
	content, err := os.ReadFile(m.file(uid))
	switch {
	case os.IsNotExist(err):
		return errNoFile
	case err != nil:
		return err
	case len(content) == 0:
		// Upstream takes an empty file for none.
		return errNoFile
	}
	first, length, err := ParseFile(content)
	if err != nil {
		return err
	}
	return m.a.Record(uid, first, length)
}

var errNoFile = errors.New("no user namespace file")

// PodRange is the pod's range, as upstream's
// GetOrCreateUserNamespaceMappings: the one it holds, else the one its file
// records, else a new one, written to its file before it is handed out, so
// that no sandbox runs with a range a restart would not know.
func (m *Manager) PodRange(uid types.UID) (IDRange, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if first, ok := m.a.Lookup(uid); ok {
		return IDRange{First: first, Length: m.a.IDsPerPod()}, nil
	}
	err := m.recordFromFile(uid)
	switch {
	case err == nil:
		first, _ := m.a.Lookup(uid)
		return IDRange{First: first, Length: m.a.IDsPerPod()}, nil
	case !errors.Is(err, errNoFile):
		return IDRange{}, fmt.Errorf("user namespace: %w", err)
	}
	first, err := m.a.Allocate(uid, m.start(m.a.Slots()))
	if err != nil && m.releaseGone() > 0 {
		first, err = m.a.Allocate(uid, m.start(m.a.Slots()))
	}
	if err != nil {
		return IDRange{}, fmt.Errorf("create user namespace: %w", err)
	}
	r := IDRange{First: first, Length: m.a.IDsPerPod()}
	if err := m.write(uid, r); err != nil {
		m.a.Release(uid)
		return IDRange{}, fmt.Errorf("create user namespace: %w", err)
	}
	return r, nil
}

func (m *Manager) write(uid types.UID, r IDRange) error {
	data, err := NewFile(r.First, r.Length).Marshal()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(volume.PodDir(m.root, uid), 0o750); err != nil {
		return err
	}
	return atomicfile.Write(m.file(uid), data, 0o644)
}

// releaseGone frees the ranges of pods whose directory is gone without a
// Release (removed by hand), as upstream's
// CleanupOrphanedPodUsernsAllocations does for allocations of pods not on
// disk; it returns how many it freed. It runs only when the range is
// full: the volume-manager's Release is the rule.
func (m *Manager) releaseGone() int {
	n := 0
	for _, uid := range m.a.Pods() {
		if _, err := os.Stat(volume.PodDir(m.root, uid)); os.IsNotExist(err) {
			m.a.Release(uid)
			n++
		}
	}
	return n
}

// Release frees the pod's range and removes its file, as upstream's Release
// when the pod's directory goes: the pod runs no more.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.a.Release(uid) {
		_ = os.Remove(m.file(uid))
	}
}

// Allocated is how many pods hold a range.
func (m *Manager) Allocated() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.a.byPod)
}
