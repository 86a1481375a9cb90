package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// MountTmpfs mounts a tmpfs of size bytes on dir (made if missing); the
// caller unmounts it (Unmount), once the agent is stopped.
func MountTmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
}

// Unmount detaches what is mounted on dir, logging a failure.
func Unmount(t testing.TB, dir string) {
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		t.Logf("cleanup: unmount %s: %v", dir, err)
	}
}

// Fill writes the file path until its file system has no space left
// (ENOSPC), and returns how much it wrote. tmpfs gives space by pages: the
// last writes are of one page, so nothing is left for anyone.
func Fill(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var written int64
	for _, size := range []int{1 << 20, 4096} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = 'x'
		}
		for {
			n, err := f.Write(buf)
			written += int64(n)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// FreeBytes is the space left on dir's file system, for unprivileged
// users (as the eviction signal nodefs.available counts it).
func FreeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// WarningEvents lists the Warning events of the node's namespace (and
// those of the namespace given in also, e.g. a static pod's), as
// "object: reason: message" lines, oldest first, with the time each was
// last seen.
func WarningEvents(n *agent.APIPods, namespaces ...string) ([]SeenEvent, error) {
	var out []SeenEvent
	for _, ns := range append([]string{n.NS}, namespaces...) {
		evs, err := n.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "type=Warning"})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs.Items {
			last := ev.LastTimestamp.Time
			if last.IsZero() {
				last = ev.EventTime.Time
			}
			if last.IsZero() {
				last = ev.CreationTimestamp.Time
			}
			out = append(out, SeenEvent{Object: ev.InvolvedObject.Name, Reason: ev.Reason, Message: ev.Message, Last: last, Count: ev.Count})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Last.Before(out[j].Last) })
	return out, nil
}

// SeenEvent is one event as WarningEvents read it.
type SeenEvent struct {
	Object, Reason, Message string
	Last                    time.Time
	Count                   int32
}

func (e SeenEvent) String() string {
	msg := e.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Sprintf("%s: %s: %s", e.Object, e.Reason, msg)
}

// NodeCondition reads the status of the node's condition typ from the API.
func NodeCondition(n *agent.APIPods, typ v1.NodeConditionType) (v1.ConditionStatus, error) {
	node, err := n.NodeObject()
	if err != nil {
		return "", err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c.Status, nil
		}
	}
	return v1.ConditionUnknown, nil
}

// PodLogs reads the container's log through the API (the node's kubelet
// API serves it).
func PodLogs(n *agent.APIPods, pod, container string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := n.Admin.CoreV1().Pods(n.NS).GetLogs(pod, &v1.PodLogOptions{Container: container}).DoRaw(ctx)
	return string(b), err
}

// containsUIDs reports which of the pods' UIDs the file at path does not
// mention.
func missingUIDs(path string, uids []string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return uids, err
	}
	var out []string
	for _, u := range uids {
		if !strings.Contains(string(b), u) {
			out = append(out, u)
		}
	}
	return out, nil
}

// stateFile is the agent's checkpoint of the pods' allocations under its
// root directory (upstream's name).
func stateFile(rootDir string) string { return filepath.Join(rootDir, "allocated_pods_state") }
