package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

const unit = 65536

// newTestManager is a manager of slots ranges from unit on, under root,
// whose searches start at the first slot.
func newTestManager(t *testing.T, root string, slots int) *Manager {
	t.Helper()
	m, err := NewManager(root, IDRange{First: unit, Length: uint32(slots) * unit}, unit, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.start = func(int) int { return 0 }
	return m
}

// writePodFile makes the pod's directory with content in its userns file:
// none for "", an empty file for "empty".
func writePodFile(t *testing.T, root string, uid types.UID, content string) {
	t.Helper()
	dir := filepath.Join(root, "pods", string(uid))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if content == "empty" {
		content = ""
	} else if content == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileOf(first uint32) string {
	data, _ := NewFile(first, unit).Marshal()
	return string(data)
}

func TestManagerAllocatesRecordsAndReleases(t *testing.T) {
	root := t.TempDir()
	m := newTestManager(t, root, 3)
	a, err := m.PodRange("a")
	if err != nil || a != (IDRange{unit, unit}) {
		t.Fatalf("PodRange(a) = %v, %v", a, err)
	}
	// The range is on disk, in upstream's shape, before it is handed out.
	data, err := os.ReadFile(filepath.Join(root, "pods", "a", FileName))
	if err != nil || string(data) != fileOf(unit) {
		t.Fatalf("a's file: %s, %v", data, err)
	}
	b, err := m.PodRange("b")
	if err != nil || b != (IDRange{2 * unit, unit}) {
		t.Fatalf("PodRange(b) = %v, %v", b, err)
	}
	if again, _ := m.PodRange("a"); again != a {
		t.Errorf("a's range changed: %v, then %v", a, again)
	}

	// A restart reads every pod's range back, and allocates around them.
	m2 := newTestManager(t, root, 3)
	if m2.Allocated() != 2 {
		t.Fatalf("%d ranges read back, want 2", m2.Allocated())
	}
	if got, _ := m2.PodRange("b"); got != b {
		t.Errorf("b's range after a restart: %v, want %v", got, b)
	}
	c, err := m2.PodRange("c")
	if err != nil || c != (IDRange{3 * unit, unit}) {
		t.Fatalf("PodRange(c) = %v, %v", c, err)
	}
	if _, err := m2.PodRange("d"); err == nil || err.Error() != "create user namespace: could not find an empty slot to allocate a user namespace" {
		t.Fatalf("PodRange(d) on a full range: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", "d", FileName)); !os.IsNotExist(err) {
		t.Errorf("a refused pod has a file: %v", err)
	}

	// Released: the file goes and the slot is free again.
	m2.Release("a")
	if _, err := os.Stat(filepath.Join(root, "pods", "a", FileName)); !os.IsNotExist(err) {
		t.Errorf("a's file after its release: %v", err)
	}
	if got, err := m2.PodRange("d"); err != nil || got != a {
		t.Errorf("PodRange(d) after a's release = %v, %v; want %v", got, err, a)
	}
	m2.Release("nobody")

	// A pod directory removed without a release frees its range once the
	// node's range is full.
	if err := os.RemoveAll(filepath.Join(root, "pods", "b")); err != nil {
		t.Fatal(err)
	}
	if got, err := m2.PodRange("e"); err != nil || got != b {
		t.Errorf("PodRange(e) with b's directory gone = %v, %v; want %v", got, err, b)
	}
}

func TestManagerReadsPodFilesAtStart(t *testing.T) {
	tests := []struct {
		name  string
		files map[types.UID]string
		want  string // NewManager's error
		pods  int
	}{
		{name: "no pods directory"},
		{name: "pods without user namespaces", files: map[types.UID]string{"a": "", "b": ""}},
		{name: "an empty file is none", files: map[types.UID]string{"a": "empty"}},
		{name: "every pod's range", files: map[types.UID]string{"a": fileOf(unit), "b": fileOf(3 * unit), "c": ""}, pods: 2},
		{name: "not JSON", files: map[types.UID]string{"a": "{"},
			want: `record pod mappings for existing pod "a": invalid user namespace mappings file: unexpected end of JSON input`},
		{name: "two pods on one range", files: map[types.UID]string{"a": fileOf(unit), "b": fileOf(unit)},
			want: `record pod mappings for existing pod "b": range picked for pod "b" already taken`},
		{name: "outside the node's range", files: map[types.UID]string{"a": fileOf(10 * unit)},
			want: `record pod mappings for existing pod "a": id 655360 is out of range`},
		{name: "another idsPerPod", files: map[types.UID]string{"a": `{"uidMappings":[{"hostId":131072,"containerId":0,"length":131072}],"gidMappings":[{"hostId":131072,"containerId":0,"length":131072}]}`},
			want: `record pod mappings for existing pod "a": wrong user namespace length 131072`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for uid, content := range tc.files {
				writePodFile(t, root, uid, content)
			}
			m, err := NewManager(root, IDRange{First: unit, Length: 4 * unit}, unit, 0)
			if errString(err) != tc.want {
				t.Fatalf("NewManager: %v, want %q", err, tc.want)
			}
			if err == nil && m.Allocated() != tc.pods {
				t.Errorf("%d ranges read, want %d", m.Allocated(), tc.pods)
			}
		})
	}
}

func TestManagerBadFileOfARunningPod(t *testing.T) {
	// A file that appears after the start (written by another kubelet on
	// the same root) is read when the pod asks, and refused if invalid.
	root := t.TempDir()
	m := newTestManager(t, root, 2)
	writePodFile(t, root, "a", `{"uidMappings":[]}`)
	_, err := m.PodRange("a")
	if want := "user namespace: invalid user namespace configuration: no more than one mapping allowed."; errString(err) != want {
		t.Errorf("PodRange = %v, want %q", err, want)
	}
	writePodFile(t, root, "b", fileOf(2*unit))
	if got, err := m.PodRange("b"); err != nil || got != (IDRange{2 * unit, unit}) {
		t.Errorf("PodRange(b) from its file = %v, %v", got, err)
	}
	// A pod directory that cannot take the file refuses the pod.
	if err := os.MkdirAll(filepath.Join(root, "pods", "c", FileName, "x"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := m.PodRange("c"); err == nil || !strings.HasPrefix(err.Error(), "user namespace: ") {
		t.Errorf("PodRange(c) with a directory for a file: %v", err)
	}
	if m.Allocated() != 1 {
		t.Errorf("%d ranges allocated, want b's alone", m.Allocated())
	}
}
