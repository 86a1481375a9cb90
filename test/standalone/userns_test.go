package standalone

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// runtimeSupportsUserNamespaces reports whether the environment's runtime
// says, in its Status answer, that its default handler supports user
// namespaces (containerd 2 with a recent runc and kernel; containerd 1.6
// reports no handlers).
func runtimeSupportsUserNamespaces(t *testing.T, rt runtimeapi.RuntimeServiceClient) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			return h.GetFeatures().GetUserNamespaces()
		}
	}
	return false
}

// idMap is the first line of a process's uid_map or gid_map: container ID
// Inside maps to host ID Host, for Length IDs.
type idMap struct{ Inside, Host, Length uint64 }

// userns is what the host sees of a container's process in a user
// namespace: its maps and its real host UID and GID.
type userns struct {
	UIDMap, GIDMap idMap
	HostUID        uint64
	HostGID        uint64
}

// containerPID is the host PID of the container's process, from the
// runtime's verbose status.
func (n *node) containerPID(id string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := n.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return 0, err
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil {
		return 0, fmt.Errorf("the runtime's info of container %s: %w", id, err)
	}
	if info.Pid <= 0 {
		return 0, fmt.Errorf("container %s has no process", id)
	}
	return info.Pid, nil
}

// usernsOf reads the user namespace of the container's process from /proc.
func (n *node) usernsOf(t *testing.T, containerID string) userns {
	t.Helper()
	pid, err := n.containerPID(strings.TrimPrefix(containerID, "containerd://"))
	if err != nil {
		t.Fatal(err)
	}
	readMap := func(file string) idMap {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var m idMap
		if len(lines) != 1 {
			t.Fatalf("%s of pid %d: %q, want one mapping", file, pid, data)
		}
		if _, err := fmt.Sscan(lines[0], &m.Inside, &m.Host, &m.Length); err != nil {
			t.Fatalf("%s of pid %d: %q: %v", file, pid, data, err)
		}
		return m
	}
	u := userns{UIDMap: readMap("uid_map"), GIDMap: readMap("gid_map")}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "Uid:":
			u.HostUID, _ = strconv.ParseUint(f[1], 10, 64)
		case "Gid:":
			u.HostGID, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	return u
}

// TestUserNamespaces runs static pods with hostUsers: false on a runtime
// that supports user namespaces: each runs in a user namespace of its own,
// its root mapped to an unprivileged host ID range recorded in its pod
// directory; two pods get disjoint ranges; a restart of actorlet keeps
// every running pod's range and allocates around them; procMount:
// Unmasked runs there; a pod's range is freed with its directory. On a
// runtime without user namespaces TestSecurityContextRefusals checks the
// refusal instead.
func TestUserNamespaces(t *testing.T) {
	n := newNode(t)
	if !runtimeSupportsUserNamespaces(t, n.RT) {
		t.Skip("the runtime does not support user namespaces: TestSecurityContextRefusals checks their refusal")
	}
	// A short resync, so that the directory of a pod without volumes goes
	// (and its range with it) within the test.
	n.Configure("syncFrequency: 3s\n")
	n.Start()
	spec := func(extra string) string {
		return fmt.Sprintf("  hostUsers: false\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n%s", n.busybox(), extra)
	}
	n.WriteManifest("a.yaml", manifest("userns-a", spec("")))
	n.WriteManifest("b.yaml", manifest("userns-b", spec("    securityContext:\n      runAsUser: 1000\n      runAsGroup: 2000\n      procMount: Unmasked\n")))

	type running struct {
		name string // in the manifest
		pod  *v1.Pod
		ns   userns
	}
	run := func(name string) running {
		t.Helper()
		p := n.Running(name, 90*time.Second)
		return running{name, p, n.usernsOf(t, p.Status.ContainerStatuses[0].ContainerID)}
	}
	// checkRange checks that the pod's process runs in a user namespace of
	// its own whose range its directory records, and returns the range's
	// first host ID.
	checkRange := func(r running, uid, gid uint64) uint64 {
		t.Helper()
		u := r.ns
		if u.UIDMap != u.GIDMap || u.UIDMap.Inside != 0 || u.UIDMap.Length != 65536 {
			t.Errorf("%s: uid_map %+v, gid_map %+v; want container ID 0 mapped for 65536 IDs, users and groups alike", r.pod.Name, u.UIDMap, u.GIDMap)
		}
		if u.UIDMap.Host < 65536 || u.UIDMap.Host%65536 != 0 {
			t.Errorf("%s: host range starts at %d, want a non-zero multiple of 65536", r.pod.Name, u.UIDMap.Host)
		}
		if u.HostUID != u.UIDMap.Host+uid || u.HostGID != u.GIDMap.Host+gid {
			t.Errorf("%s: the process runs as host uid %d, gid %d; want %d, %d", r.pod.Name, u.HostUID, u.HostGID, u.UIDMap.Host+uid, u.GIDMap.Host+gid)
		}
		t.Logf("%s: uid_map %d %d %d, gid_map %d %d %d; host uid %d, gid %d", r.pod.Name,
			u.UIDMap.Inside, u.UIDMap.Host, u.UIDMap.Length, u.GIDMap.Inside, u.GIDMap.Host, u.GIDMap.Length, u.HostUID, u.HostGID)
		data, err := os.ReadFile(filepath.Join(n.RootDir, "pods", string(r.pod.UID), "userns"))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"uidMappings":[{"hostId":%d,"containerId":0,"length":65536}],"gidMappings":[{"hostId":%d,"containerId":0,"length":65536}]}`, u.UIDMap.Host, u.UIDMap.Host)
		if string(data) != want {
			t.Errorf("%s: userns file %s\nwant %s", r.pod.Name, data, want)
		}
		return u.UIDMap.Host
	}
	disjoint := func(firsts ...uint64) {
		t.Helper()
		seen := map[uint64]bool{}
		for _, f := range firsts {
			if seen[f] {
				t.Errorf("two pods share the range at %d: %v", f, firsts)
			}
			seen[f] = true
		}
	}

	a, b := run("userns-a"), run("userns-b")
	firstA, firstB := checkRange(a, 0, 0), checkRange(b, 1000, 2000)
	disjoint(firstA, firstB)

	t.Run("an actorlet restart keeps every running pod's range", func(t *testing.T) {
		n.Stop(syscall.SIGTERM)
		n.Start()
		// The manifest of a third pod, read after the restart: its range
		// is none of those read back.
		n.WriteManifest("c.yaml", manifest("userns-c", spec("")))
		c := run("userns-c")
		firstC := checkRange(c, 0, 0)
		disjoint(firstA, firstB, firstC)
		agent.Consistently(t, "the pods keep their containers", 5*time.Second, time.Second, func() error {
			for _, before := range []running{a, b} {
				p, err := n.Pod(before.name)
				if err != nil {
					return err
				}
				if got, want := containerIDs(p), containerIDs(before.pod); fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("%s: containers %v, were %v", p.Name, got, want)
				}
			}
			return nil
		})
		for _, before := range []running{a, b} {
			if after := n.usernsOf(t, before.pod.Status.ContainerStatuses[0].ContainerID); after != before.ns {
				t.Errorf("%s: user namespace %+v after the restart, was %+v", before.pod.Name, after, before.ns)
			}
		}
	})

	t.Run("a pod's range goes with its directory", func(t *testing.T) {
		n.RemoveManifest("a.yaml")
		file := filepath.Join(n.RootDir, "pods", string(a.pod.UID), "userns")
		n.Eventually("userns-a's directory removed", 60*time.Second, func() error {
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				return fmt.Errorf("%s is still there (%v)", file, err)
			}
			return nil
		})
	})
}
