package configsource

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/messages"
)

func TestDedupe(t *testing.T) {
	m := func(path, ns, name string) manifestPod {
		return manifestPod{path: path, pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
	a, b, c := m("a.yaml", "default", "web"), m("b.yaml", "default", "web"), m("c.yaml", "default", "web")
	other := m("d.yaml", "kube-system", "web") // the same name in another namespace
	paths := func(ms []manifestPod) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.path)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		pods       []manifestPod
		declaredBy map[string]string
		kept       []string
		dups       []string // path<first
		next       map[string]string
	}{
		{"no pods", nil, nil, nil, nil, map[string]string{}},
		{"distinct full names", []manifestPod{a, other}, nil, []string{"a.yaml", "d.yaml"}, nil,
			map[string]string{"default/web": "a.yaml", "kube-system/web": "d.yaml"}},
		{"the first in order is kept", []manifestPod{a, b, c}, nil, []string{"a.yaml"}, []string{"b.yaml<a.yaml", "c.yaml<a.yaml"},
			map[string]string{"default/web": "a.yaml"}},
		{"the one kept before stays kept", []manifestPod{a, b, c}, map[string]string{"default/web": "b.yaml"},
			[]string{"b.yaml"}, []string{"a.yaml<b.yaml", "c.yaml<b.yaml"}, map[string]string{"default/web": "b.yaml"}},
		{"the one kept before is gone: the first is kept", []manifestPod{a, c}, map[string]string{"default/web": "b.yaml"},
			[]string{"a.yaml"}, []string{"c.yaml<a.yaml"}, map[string]string{"default/web": "a.yaml"}},
		{"a name no file declares any more is forgotten", []manifestPod{other}, map[string]string{"default/web": "b.yaml"},
			[]string{"d.yaml"}, nil, map[string]string{"kube-system/web": "d.yaml"}},
	} {
		kept, dups, next := dedupe(tc.pods, tc.declaredBy)
		var gotDups []string
		for _, d := range dups {
			gotDups = append(gotDups, d.path+"<"+d.first)
		}
		if !reflect.DeepEqual(paths(kept), tc.kept) || !reflect.DeepEqual(gotDups, tc.dups) || !reflect.DeepEqual(next, tc.next) {
			t.Errorf("%s: kept %v, duplicates %v, next %v; want %v, %v, %v", tc.name, paths(kept), gotDups, next, tc.kept, tc.dups, tc.next)
		}
	}
}

// TestFileSourceDuplicatePodName: two manifests declaring the same pod give
// one pod; the other file is logged and gets a FailedValidation event,
// both naming the two files. A file added later never replaces the pod
// kept.
func TestFileSourceDuplicatePodName(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "b.yaml", podYAML("web", "nginx:1"))
	events := record.NewFakeRecorder(10)
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: 50 * time.Millisecond, Events: events})
	u := h.expect(messages.SourceFile, "web-node-1")
	kept := u.Pods[0].UID
	// Sorted first, but added later: b.yaml's pod stays.
	write(t, dir, "a.yaml", podYAML("web", "nginx:2"))
	h.none() // several rescans; the set is unchanged
	logs := h.logs.String()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if n := strings.Count(logs, "left out"); n != 1 || !strings.Contains(logs, a) || !strings.Contains(logs, b) || !strings.Contains(logs, "duplicate pod name") {
		t.Fatalf("want the duplicate logged once naming both files; got %d:\n%s", n, logs)
	}
	select {
	case e := <-events.Events:
		if !strings.HasPrefix(e, "Warning FailedValidation Error validating pod web-node-1_default(") ||
			!strings.Contains(e, "from file "+a+` due to duplicate pod name "web-node-1", ignoring: `+b+" declares it already") {
			t.Errorf("event %q", e)
		}
	case <-time.After(waitFor):
		t.Fatal("no event for the duplicate")
	}
	select {
	case e := <-events.Events:
		t.Errorf("a second event: %q", e)
	default:
	}
	// The kept file goes: the other one's pod runs.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	u = h.expect(messages.SourceFile, "web-node-1")
	if u.Pods[0].UID == kept || u.Pods[0].Spec.Containers[0].Image != "nginx:2" {
		t.Errorf("after b.yaml went, pod %s with image %s, want a.yaml's", u.Pods[0].UID, u.Pods[0].Spec.Containers[0].Image)
	}
}
