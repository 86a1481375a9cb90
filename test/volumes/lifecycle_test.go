package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/actorlet/actorlet/test/agent"
)

// TestVolumeLifecycle: volumes across a kill -9 of actorlet, and what a
// removed pod leaves on the host (nothing), whether actorlet was running
// when it went or not.
func TestVolumeLifecycle(t *testing.T) {
	n := newVolNode(t)

	t.Run("kill -9 keeps the tmpfs volumes and their data", func(t *testing.T) {
		s := n.Secret(t, "kept", map[string]string{"k": "kept-secret"})
		size := resource.MustParse("32Mi")
		p := n.NewPod("keeper", []v1.Volume{
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: s}}},
		}, n.Busybox("c", "echo precious > /mem/f && exec sleep 3600", mnt("mem", "/mem"), mnt("sec", "/sec")))
		created := n.Run(t, p)
		n.EventuallySees(t, "keeper", "c", "cat /mem/f", "precious", 10*time.Second)
		before, err := n.ContainerState("keeper", "c")
		if err != nil {
			t.Fatal(err)
		}
		memDir, secDir := n.volumeDir(created.UID, pluginEmptyDir, "mem"), n.volumeDir(created.UID, pluginSecret, "sec")
		once := func() error {
			for _, dir := range []string{memDir, secDir} {
				if ms := agent.MountsAt(t, dir); len(ms) != 1 || ms[0].FSType != "tmpfs" {
					return fmt.Errorf("host mounts at %s: %+v, want one tmpfs", dir, ms)
				}
			}
			return nil
		}
		if err := once(); err != nil {
			t.Fatal(err)
		}

		n.Stop(syscall.SIGKILL)
		n.Start()
		agent.Eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
		// A pod started after the restart proves the volume manager is at
		// work again; by then it has taken the running pod's volumes over.
		n.Run(t, n.NewPod("after", []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}}},
			n.Sleeper("c", mnt("mem", "/mem"))))
		agent.Consistently(t, "each tmpfs mounted once", 5*time.Second, time.Second, once)
		after, err := n.ContainerState("keeper", "c")
		if err != nil {
			t.Fatal(err)
		}
		if after.ContainerID != before.ContainerID || after.RestartCount != 0 || after.State.Running == nil {
			t.Errorf("the container after the restart: %s, restarts %d, %+v; want %s still running",
				after.ContainerID, after.RestartCount, after.State, before.ContainerID)
		}
		n.Expect(t, "keeper", "c", "cat /mem/f /sec/k", "precious\nkept-secret")
		if got := readFile(t, filepath.Join(memDir, "f")); got != "precious\n" {
			t.Errorf("the data on the host's tmpfs: %q", got)
		}
	})

	t.Run("a removed pod leaves no mount and no directory", func(t *testing.T) {
		created := n.Run(t, n.everyKind(t, "removed"))
		dir := n.podDir(created.UID)
		if len(agent.MountsUnder(t, dir)) == 0 {
			t.Fatalf("no mounts under %s while the pod runs", dir)
		}
		// Upstream deletes the pod from the API only once its resources
		// are reclaimed, its volumes among them
		// (PodResourcesAreReclaimed), and removes the directory at its
		// next housekeeping. The mounts are read the moment the watch
		// says the pod is gone: a teardown a few milliseconds late shows.
		if ms := n.mountsWhenGone(t, "removed", dir); len(ms) > 0 {
			t.Errorf("the pod is gone from the API with its volumes still mounted: %q", ms)
		}
		agent.Eventually(t, "no mount and no directory left", 60*time.Second, nothingLeft(t, dir))
	})

	t.Run("a pod removed while actorlet is down leaves nothing", func(t *testing.T) {
		created := n.Run(t, n.everyKind(t, "orphan"))
		dir := n.podDir(created.UID)
		n.Stop(syscall.SIGKILL)
		n.delete(t, "orphan", 0)
		agent.Eventually(t, "the pod gone from the API", 30*time.Second, n.gone("orphan"))
		n.Start()
		// Upstream: the orphaned pod's containers are killed, its volumes
		// unmounted, then its directory removed (cleanupOrphanedPodDirs).
		agent.Eventually(t, "no mount and no directory left", 90*time.Second, nothingLeft(t, dir))
	})
}

// everyKind is a pod with a volume of each kind that mounts something on
// the host: emptyDir on disk and in memory, configMap, secret, and the
// projected service-account volume.
func (n *volNode) everyKind(t *testing.T, name string) *v1.Pod {
	t.Helper()
	cm := n.ConfigMap(t, name+"-config", map[string]string{"k": "v"})
	s := n.Secret(t, name+"-secret", map[string]string{"k": "v"})
	p := n.NewPod(name, []v1.Volume{
		{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
		{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: s}}},
	}, n.Sleeper("c", mnt("disk", "/disk"), mnt("mem", "/mem"), mnt("cfg", "/cfg"), mnt("sec", "/sec"),
		v1.VolumeMount{Name: "cfg", MountPath: "/k", SubPath: "k"}))
	p.Spec.AutomountServiceAccountToken = nil
	return p
}

// mountsWhenGone deletes the pod through the API with a grace period of
// 1 s and returns the mounts under dir at the moment a watch sees the pod
// deleted from the API.
func (n *volNode) mountsWhenGone(t *testing.T, name, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := n.Admin.CoreV1().Pods(n.NS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch pod %s: %v", name, err)
	}
	defer func() { w.Stop() }()
	n.delete(t, name, 1)
	for ctx.Err() == nil {
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				return agent.MountsUnder(t, dir)
			case watch.Error:
				t.Logf("watch of pod %s: %v", name, apierrors.FromObject(ev.Object))
			}
		}
		// The API server may end a watch early (one ended within seconds
		// in CI): if the pod is gone by now, the mounts are read at once,
		// a little later than the deletion; otherwise the watch goes on.
		if _, err := n.Get(name); apierrors.IsNotFound(err) {
			return agent.MountsUnder(t, dir)
		}
		w.Stop()
		if w, err = n.Admin.CoreV1().Pods(n.NS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name}); err != nil {
			if ctx.Err() != nil {
				break
			}
			t.Fatalf("watch pod %s again: %v", name, err)
		}
	}
	t.Fatalf("pod %s not deleted from the API within 60 s", name)
	return nil
}

// delete deletes the pod through the API with a grace period.
func (n *volNode) delete(t *testing.T, name string, grace int64) {
	t.Helper()
	if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
}

// gone is nil once the API has no pod name.
func (n *volNode) gone(name string) func() error {
	return func() error {
		if _, err := n.Get(name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s still there (%v)", name, err)
		}
		return nil
	}
}

// nothingLeft is nil once the host has no mount under the pod's directory
// and the directory is gone.
func nothingLeft(t *testing.T, podDir string) func() error {
	return func() error {
		if ms := agent.MountsUnder(t, podDir); len(ms) > 0 {
			return fmt.Errorf("still mounted: %q", ms)
		}
		if _, err := os.Stat(podDir); !os.IsNotExist(err) {
			return fmt.Errorf("%s still there (%v)", podDir, err)
		}
		return nil
	}
}
