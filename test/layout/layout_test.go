// Package layout checks the shape of the repository: imports point down the
// layers only, the root stays small, and no build output is tracked.
package layout

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/actorlet/actorlet"

// childSpawns are the imports of one actor package by another that the
// layering allows: a parent importing the child it spawns.
var childSpawns = map[[2]string]bool{
	{"actors/podmanager", "actors/podworker"}: true,
}

// podRuntime is the CRI edge for one pod, the top of internal/: it drives
// the other mechanics (cgroups, volumes, image pulls, logs), so no other
// package under internal/ imports it.
const podRuntime = "internal/podruntime"

// layer ranks a package of the module (its path below the module), top
// (highest) to bottom: cmd, actors/bootstrap, the actors, messages,
// supervision, config, internal. test/ and hack/ are outside the rule
// (ok false).
func layer(pkg string) (rank int, ok bool) {
	first, _, _ := strings.Cut(pkg, "/")
	switch {
	case first == "cmd":
		return 6, true
	case pkg == "actors/bootstrap":
		return 5, true
	case first == "actors":
		return 4, true
	case first == "messages":
		return 3, true
	case first == "supervision":
		return 2, true
	case first == "config":
		return 1, true
	case first == "internal":
		return 0, true
	}
	return -1, false
}

// root is the module's root directory (this package is test/layout).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", dir, err)
	}
	return dir
}

// TestImportsPointDown fails for each import (of a non-test file) from a
// package to one in a layer above it, from one actor package to another
// that it does not spawn as its child, or from a package under internal/ to
// the pod runtime.
func TestImportsPointDown(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root(t)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var edges int
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		from, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		fromRank, ok := layer(from)
		if !ok {
			if first, _, _ := strings.Cut(from, "/"); first != "test" && first != "hack" {
				t.Errorf("package %s is in no layer: place it under cmd, actors, messages, supervision, config or internal (or add its layer here)", from)
			}
			continue
		}
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			edges++
			toRank, ok := layer(to)
			switch {
			case !ok:
				// test/ and hack/ serve only the commands (the conformance
				// and bench drivers).
				if fromRank != 6 {
					t.Errorf("%s imports %s: only cmd/* may import test/ or hack/", from, to)
				}
			case toRank > fromRank:
				t.Errorf("%s imports %s, a layer above it (cmd > actors/bootstrap > actors/* > messages > supervision > config > internal/*)", from, to)
			case fromRank == 0 && to == podRuntime:
				t.Errorf("%s imports %s: the pod runtime drives the other mechanics under internal/, none of them reaches back into it (move what it needs to the package that owns it, as cgroup names live in internal/cgroups)", from, to)
			case fromRank == 4 && toRank == 4 && !childSpawns[[2]string{from, to}]:
				t.Errorf("%s imports %s: an actor imports another actor's package only to spawn it as its child (move what it needs down, to messages or internal/)", from, to)
			}
		}
	}
	if edges == 0 {
		t.Fatal("go list showed no import between the module's packages")
	}
}

// maxRootEntries is how many entries ls shows at the root at most.
const maxRootEntries = 18

// createdAtRoot are the ignored directories the commands create at the root
// (make build's bin, the runs' results): ls shows them too.
var createdAtRoot = []string{"bin", "results"}

// TestRoot checks that ls at the root shows at most maxRootEntries entries
// (tracked ones plus createdAtRoot), and that no tracked file is a build
// output: nothing under bin/, no *.test, no ELF binary.
func TestRoot(t *testing.T) {
	dir := root(t)
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files (not a git checkout?): %v", err)
	}
	entries := map[string]bool{}
	for _, e := range createdAtRoot {
		entries[e] = true
	}
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f == "" {
			continue
		}
		first, _, _ := strings.Cut(f, "/")
		if !strings.HasPrefix(first, ".") { // ls hides dot files
			entries[first] = true
		}
		if first == "bin" || strings.HasSuffix(f, ".test") {
			t.Errorf("%s is tracked: it is a build output", f)
			continue
		}
		if isELF(filepath.Join(dir, f)) {
			t.Errorf("%s is tracked: it is an ELF binary, a build output", f)
		}
	}
	if len(entries) > maxRootEntries {
		var names []string
		for e := range entries {
			names = append(names, e)
		}
		sort.Strings(names)
		t.Errorf("the root shows %d entries, want at most %d: %s", len(entries), maxRootEntries, strings.Join(names, " "))
	}
}

// isELF tells whether the file at p is an ELF binary (a symlink or a
// missing file, deleted but not yet committed, is not).
func isELF(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
