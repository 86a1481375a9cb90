package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/actorlet/actorlet/internal/events"

// constants are this package's string constants by name, as its source
// declares them.
func constants(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, v := range fileConstants(t, "events.go") {
		out[name] = v
	}
	return out
}

func fileConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[n.Name] = v
				}
			}
		}
	}
	return out
}

// uses are the constants of this package that actorlet's code refers to,
// with one file of each: references in a const declaration (an alias of
// a reason) do not count, only those in code or in a table of values.
func uses(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]string{}
	for _, top := range []string{"actors", "internal", "messages", "supervision", "config", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasPrefix(d.Name(), "fake") || path == filepath.Join(root, "internal", "events") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			local := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
					local = "events"
					if imp.Name != nil {
						local = imp.Name.Name
					}
				}
			}
			if local == "" {
				return nil
			}
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
					continue
				}
				ast.Inspect(d, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
							out[sel.Sel.Name] = path
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestEveryUpstreamEventEmittedOrExplained fails when a reason upstream's
// kubelet emits is neither used by an emitter of actorlet nor said not to
// be emitted, and when the table says an event is not emitted while an
// emitter uses it.
func TestEveryUpstreamEventEmittedOrExplained(t *testing.T) {
	consts, used := constants(t), uses(t)
	seen := map[string]bool{}
	for _, e := range Upstream {
		if seen[e.Name] {
			t.Errorf("%s: twice in the table", e.Name)
		}
		seen[e.Name] = true
		if v, ok := consts[e.Name]; !ok || v != e.Reason {
			t.Errorf("%s: no constant of that name holds %q", e.Name, e.Reason)
		}
		if e.Object == "" || (e.Type != "Normal" && e.Type != "Warning") || e.Message == "" || e.Emitter == "" {
			t.Errorf("%s: incomplete row %+v", e.Name, e)
		}
		file, isUsed := used[e.Name]
		switch {
		case e.NotEmitted == "" && !isUsed:
			t.Errorf("%s (%s, %s): upstream's %s emits it; actorlet neither does nor says why not", e.Name, e.Reason, e.Object, e.Emitter)
		case e.NotEmitted != "" && isUsed:
			t.Errorf("%s (%s): the table says %q, but %s uses it", e.Name, e.Reason, e.NotEmitted, file)
		}
	}
	for name := range consts {
		if !seen[name] && name != "NodeStatusMessage" {
			t.Errorf("constant %s is not in the table", name)
		}
	}
}

// TestTableHoldsUpstreamReasons compares the table with upstream's list
// of reasons, pkg/kubelet/events/event.go, when the module is in the
// cache: a reason upstream adds must get a row.
func TestTableHoldsUpstreamReasons(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("go env GOMODCACHE:", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@v1.37.2", "pkg", "kubelet", "events", "event.go")
	if _, err := os.Stat(path); err != nil {
		t.Skip("upstream's source is not in the module cache:", err)
	}
	rows := map[string]string{}
	for _, e := range Upstream {
		rows[e.Name] = e.Reason
	}
	upstream := fileConstants(t, path)
	names := make([]string, 0, len(upstream))
	for n := range upstream {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if rows[n] != upstream[n] {
			t.Errorf("upstream's %s = %q: the table has %q", n, upstream[n], rows[n])
		}
	}
}
