package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/testutil"
)

// criLog writes a container log in the CRI format: each line a full one
// on stdout, except those ending in "\\P", written as a fragment the next
// continues, and those starting with "E:", written on stderr.
func criLog(t *testing.T, lines ...string) string {
	t.Helper()
	var b strings.Builder
	for i, l := range lines {
		stream, tag := "stdout", "F"
		if s, ok := strings.CutPrefix(l, "E:"); ok {
			l, stream = s, "stderr"
		}
		if s, ok := strings.CutSuffix(l, `\P`); ok {
			l, tag = s, "P"
		}
		fmt.Fprintf(&b, "2026-01-02T03:04:05.%09dZ %s %s %s\n", i, stream, tag, l)
	}
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "msg")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d", i)
	}
	return out
}

func TestReadTerminationMessage(t *testing.T) {
	big := strings.Repeat("a", 100) + strings.Repeat("b", maxTerminationMessageLength)
	tests := []struct {
		name      string
		file      *string // the host file mounted at /dev/termination-log; nil: none mounted
		missing   bool    // the mounted file is gone (the pod's directory was removed)
		dir       bool    // the mounted path is a directory: unreadable
		path      string
		fallback  bool
		want      string
		wantLogs  bool
		wantError bool
	}{
		{name: "no path", path: "", fallback: false},
		{name: "no path, fallback", path: "", fallback: true, wantLogs: true},
		{name: "nothing mounted there", path: "/other", file: ptrTo("x"), fallback: true, wantLogs: true},
		{name: "file", path: "/dev/termination-log", file: ptrTo("DONE"), want: "DONE"},
		{name: "file, fallback: the file wins", path: "/dev/termination-log", file: ptrTo("OK"), fallback: true, want: "OK"},
		{name: "empty file", path: "/dev/termination-log", file: ptrTo(""), want: ""},
		{name: "empty file, fallback", path: "/dev/termination-log", file: ptrTo(""), fallback: true, wantLogs: true},
		{name: "relative path made absolute", path: "dev//termination-log", file: ptrTo("rel"), want: "rel"},
		{name: "the end of a long file", path: "/dev/termination-log", file: &big, want: strings.Repeat("b", maxTerminationMessageLength)},
		{name: "file gone", path: "/dev/termination-log", file: ptrTo("x"), missing: true, want: ""},
		{name: "file gone, fallback", path: "/dev/termination-log", file: ptrTo("x"), missing: true, fallback: true, wantLogs: true},
		{name: "unreadable", path: "/dev/termination-log", dir: true, fallback: true, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mounts []*runtimeapi.Mount
			mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/data", HostPath: "/nonexistent"})
			switch {
			case tt.dir:
				mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/dev/termination-log", HostPath: t.TempDir()})
			case tt.file != nil:
				p := writeFile(t, *tt.file)
				if tt.missing {
					os.Remove(p)
				}
				mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/dev/termination-log", HostPath: p})
			}
			got, logs := readTerminationMessage(mounts, tt.path, tt.fallback)
			if tt.wantError {
				if !strings.HasPrefix(got, "Error on reading termination log ") || logs {
					t.Errorf("got %q, logs %v; want the read error and no logs", got, logs)
				}
				return
			}
			if got != tt.want || logs != tt.wantLogs {
				t.Errorf("got %q, logs %v; want %q, logs %v", got, logs, tt.want, tt.wantLogs)
			}
		})
	}
}

func TestExitMessage(t *testing.T) {
	const path = "/dev/termination-log"
	many := numbered(100)
	long := make([]string, 30)
	for i := range long {
		long[i] = fmt.Sprintf("%02d%s", i, strings.Repeat("x", 98))
	}
	tests := []struct {
		name     string
		state    runtimeapi.ContainerState
		exit     int32
		reason   string
		message  string // the runtime's
		policy   v1.TerminationMessagePolicy
		path     string
		file     *string
		log      []string // nil: no log file
		want     string
		wantPref string // instead of want: a prefix
	}{
		{name: "running: the runtime's message", state: runtimeapi.ContainerState_CONTAINER_RUNNING, message: "m", path: path, file: ptrTo("x"), want: "m"},
		{name: "succeeded, from file", exit: 0, path: path, file: ptrTo("DONE"), want: "DONE"},
		{name: "succeeded, no path", exit: 0, file: ptrTo("DONE"), want: ""},
		{name: "failed, from file", exit: 1, path: path, file: ptrTo("bad"), want: "bad"},
		{name: "the runtime's message first", exit: 137, reason: "OOMKilled", message: "oom", path: path, file: ptrTo("bye"), want: "oom: bye"},
		{name: "the runtime's message alone", exit: 1, message: "oom", path: path, file: ptrTo(""), want: "oom"},
		{name: "failed, File policy: no logs", exit: 1, policy: v1.TerminationMessageReadFile, path: path, file: ptrTo(""), log: []string{"DONE"}, want: ""},
		{name: "failed, fallback, empty file: logs", exit: 1, policy: v1.TerminationMessageFallbackToLogsOnError, path: path, file: ptrTo(""),
			log: []string{`DONE\P`}, want: "DONE"},
		{name: "failed, fallback, no file mounted: logs", exit: 1, policy: v1.TerminationMessageFallbackToLogsOnError, path: path,
			log: []string{"one", "E:two"}, want: "one\ntwo\n"},
		{name: "failed, fallback, file wins", exit: 1, policy: v1.TerminationMessageFallbackToLogsOnError, path: path, file: ptrTo("OK"),
			log: []string{"DONE"}, want: "OK"},
		{name: "succeeded, fallback: no logs", exit: 0, policy: v1.TerminationMessageFallbackToLogsOnError, path: path, file: ptrTo(""),
			log: []string{"DONE"}, want: ""},
		{name: "could not run: no logs", exit: 128, reason: reasonContainerCannotRun, message: "exec failed",
			policy: v1.TerminationMessageFallbackToLogsOnError, path: path, file: ptrTo(""), log: []string{"DONE"}, want: "exec failed"},
		{name: "fallback: the last 80 lines", exit: 2, policy: v1.TerminationMessageFallbackToLogsOnError, path: path,
			log: many, want: strings.Join(many[20:], "\n") + "\n"},
		{name: "fallback: a split line counts once", exit: 2, policy: v1.TerminationMessageFallbackToLogsOnError, path: path,
			log: append(numbered(80), `a\P`, `b\P`, "c"), want: strings.Join(numbered(80)[1:], "\n") + "\nabc\n"},
		{name: "fallback: the last 2048 bytes", exit: 2, policy: v1.TerminationMessageFallbackToLogsOnError, path: path,
			log: long, want: (strings.Join(long, "\n") + "\n")[30*101-maxTerminationMessageLogLength:]},
		{name: "fallback: no log", exit: 2, policy: v1.TerminationMessageFallbackToLogsOnError, path: path,
			wantPref: "Error on reading termination message from logs: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &runtimeapi.ContainerStatus{
				State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: tt.exit, Reason: tt.reason, Message: tt.message,
				Annotations: containerTerminationAnnotations(tt.path, tt.policy),
				LogPath:     filepath.Join(t.TempDir(), "none.log"),
			}
			if tt.state != runtimeapi.ContainerState_CONTAINER_CREATED {
				s.State = tt.state
			}
			if tt.file != nil {
				s.Mounts = []*runtimeapi.Mount{{ContainerPath: path, HostPath: writeFile(t, *tt.file)}}
			}
			if tt.log != nil {
				s.LogPath = criLog(t, tt.log...)
			}
			got := exitMessage(s)
			if tt.wantPref != "" {
				if !strings.HasPrefix(got, tt.wantPref) {
					t.Errorf("got %q, want it to start with %q", got, tt.wantPref)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// containerTerminationAnnotations are those containerAnnotations writes.
func containerTerminationAnnotations(path string, policy v1.TerminationMessagePolicy) map[string]string {
	a, err := containerAnnotations(&v1.Pod{}, &v1.Container{TerminationMessagePath: path, TerminationMessagePolicy: policy}, 0)
	if err != nil {
		panic(err)
	}
	return a
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		writes []string
		want   string
	}{
		{nil, ""},
		{[]string{"ab", "cd"}, "abcd"},
		{[]string{"abc", "de"}, "bcde"},
		{[]string{"abcdef"}, "cdef"},
		{[]string{"ab", "abcdef", "g"}, "defg"},
		{[]string{"a", "b", "c", "d", "e"}, "bcde"},
	}
	for _, tt := range tests {
		b := &tailBuffer{max: 4}
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if string(b.b) != tt.want {
			t.Errorf("%q: kept %q, want %q", tt.writes, b.b, tt.want)
		}
	}
}

func TestTerminationMessageMounts(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	c := &v1.Container{Name: "c", TerminationMessagePath: "dev/termination-custom-log"}

	t.Run("none without a path or a root directory", func(t *testing.T) {
		if m := terminationMessageMounts(pod, &v1.Container{Name: "c"}, Options{RootDir: t.TempDir()}); m != nil {
			t.Errorf("without a path: %v", m)
		}
		if m := terminationMessageMounts(pod, c, Options{}); m != nil {
			t.Errorf("without a root directory: %v", m)
		}
	})

	t.Run("a new world-writable file per instance", func(t *testing.T) {
		root := t.TempDir()
		old := syscall.Umask(0o077)
		defer syscall.Umask(old)
		first := terminationMessageMounts(pod, c, Options{RootDir: root})
		second := terminationMessageMounts(pod, c, Options{RootDir: root})
		if len(first) != 1 || len(second) != 1 {
			t.Fatalf("mounts %v, %v; want one each", first, second)
		}
		dir := filepath.Join(root, "pods", "uid-1", "containers", "c")
		m := first[0]
		if filepath.Dir(m.HostPath) != dir || len(filepath.Base(m.HostPath)) != 8 || m.ContainerPath != "/dev/termination-custom-log" ||
			m.Readonly || m.SelinuxRelabel != selinuxEnabled() {
			t.Errorf("mount %+v, want an 8-digit file in %s at /dev/termination-custom-log", m, dir)
		}
		if second[0].HostPath == m.HostPath {
			t.Errorf("both instances got %s", m.HostPath)
		}
		if fi, err := os.Stat(m.HostPath); err != nil || fi.Mode() != 0o666 || fi.Size() != 0 {
			t.Errorf("file %v (err %v), want empty, mode 0666", fi, err)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 { // 0750 under the umask
			t.Errorf("directory %v (err %v), want 0750 less the umask", fi, err)
		}
	})

	t.Run("a file that cannot be made: an event, no mount", func(t *testing.T) {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "pods"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		rec := record.NewFakeRecorder(10)
		if m := terminationMessageMounts(pod, c, Options{RootDir: root, Recorder: rec}); m != nil {
			t.Errorf("mounts %v, want none", m)
		}
		testutil.EventWithPrefix(t, rec, "Warning Failed Error on creating termination-log file: ")
	})
}

func TestContainerConfigMountsTerminationMessage(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-2"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", TerminationMessagePath: "/dev/termination-log",
			TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError}}}}
	cfg, err := ContainerConfig(t.Context(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Mounts); n != 1 || cfg.Mounts[n-1].ContainerPath != "/dev/termination-log" {
		t.Errorf("mounts %v, want the termination-log last", cfg.Mounts)
	}
	if a := cfg.Annotations; a[AnnotationContainerTerminationMessagePath] != "/dev/termination-log" ||
		a[AnnotationContainerTerminationMessagePolicy] != "FallbackToLogsOnError" {
		t.Errorf("annotations %v", a)
	}
}

func TestTruncateTerminationMessages(t *testing.T) {
	msg := strings.Repeat("m", maxPodTerminationMessageLength)
	term := func(m string) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: m}}
	}
	tests := []struct {
		name       string
		containers int
		inits      int
		want       int
	}{
		{"one container: 12 KiB", 1, 0, maxPodTerminationMessageLength},
		{"three: 4 KiB each", 2, 1, maxPodTerminationMessageLength / 3},
		{"five", 5, 0, maxPodTerminationMessageLength / 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{}
			pod.Spec.Containers = make([]v1.Container, tt.containers)
			pod.Spec.InitContainers = make([]v1.Container, tt.inits)
			shared := &v1.ContainerStateTerminated{Message: msg + "tail"}
			s := v1.PodStatus{
				ContainerStatuses:     []v1.ContainerStatus{{State: v1.ContainerState{Terminated: shared}, LastTerminationState: term(msg)}, {State: term("short")}},
				InitContainerStatuses: []v1.ContainerStatus{{State: term(msg)}},
			}
			truncateTerminationMessages(pod, &s)
			for _, st := range []v1.ContainerState{s.ContainerStatuses[0].State, s.ContainerStatuses[0].LastTerminationState, s.InitContainerStatuses[0].State} {
				if n := len(st.Terminated.Message); n != tt.want {
					t.Errorf("message of %d bytes, want %d", n, tt.want)
				}
			}
			if m := s.ContainerStatuses[1].State.Terminated.Message; m != "short" {
				t.Errorf("short message became %q", m)
			}
			if shared.Message != msg+"tail" {
				t.Error("the original state was changed")
			}
		})
	}
}
