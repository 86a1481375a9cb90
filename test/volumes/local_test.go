package volumes

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/test/agent"
)

// pluginEmptyDir is upstream's directory of emptyDir volumes under
// ROOT/pods/UID/volumes.
const pluginEmptyDir = "kubernetes.io~empty-dir"

// TestLocalVolumes: emptyDir on disk and in memory, hostPath with its type
// checks, fsGroup, subPath and subPathExpr, and a subPath symlink that
// points out of its volume: volumes that need no API object but the pod.
func TestLocalVolumes(t *testing.T) {
	n := newVolNode(t)

	t.Run("emptyDir on disk", func(t *testing.T) {
		// The first run leaves a mark and fails; the restarted container
		// must find it: the volume outlives the container.
		script := `if [ -f /data/mark ]; then exec sleep 3600; fi; echo first-run > /data/mark; exit 1`
		p := n.NewPod("disk", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			n.Busybox("c", script, mnt("data", "/data")))
		created := n.Create(t, p)
		agent.Eventually(t, "the container restarted and running", 60*time.Second, func() error {
			cs, err := n.ContainerState("disk", "c")
			if err != nil {
				return err
			}
			if cs.RestartCount < 1 || cs.State.Running == nil {
				return fmt.Errorf("restartCount %d, state %+v", cs.RestartCount, cs.State)
			}
			return nil
		})
		n.Expect(t, "disk", "c", "cat /data/mark", "first-run")
		// Upstream makes the directory 0777 whatever the umask.
		n.Expect(t, "disk", "c", "stat -c %a /data", "777")
		dir := n.volumeDir(created.UID, pluginEmptyDir, "data")
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatalf("the volume's directory on the host: %v", err)
		}
		if fi.Mode().Perm() != 0o777 || !fi.IsDir() {
			t.Errorf("%s: mode %v, want a directory 0777", dir, fi.Mode())
		}
		if b, err := os.ReadFile(filepath.Join(dir, "mark")); err != nil || string(b) != "first-run\n" {
			t.Errorf("the mark on the host: %q, %v", b, err)
		}
		if ms := agent.MountsAt(t, dir); len(ms) != 0 {
			t.Errorf("an emptyDir on disk is a plain directory, found mounts %+v", ms)
		}
	})

	t.Run("emptyDir Memory sized by sizeLimit", func(t *testing.T) {
		limit := resource.MustParse("64Mi")
		p := n.NewPod("mem-sized", []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}},
			n.Sleeper("c", mnt("mem", "/mem")))
		created := n.Run(t, p)
		n.checkTmpfs(t, created, "mem", "/mem", kib(limit.Value()))
	})

	t.Run("emptyDir Memory sized by the pod's memory limit", func(t *testing.T) {
		c := n.Sleeper("c", mnt("mem", "/mem"))
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("96Mi")}
		p := n.NewPod("mem-limit", []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}, c)
		created := n.Run(t, p)
		n.checkTmpfs(t, created, "mem", "/mem", kib(96<<20))
	})

	t.Run("emptyDir Memory sized by node allocatable", func(t *testing.T) {
		node, err := n.NodeObject()
		if err != nil {
			t.Fatal(err)
		}
		p := n.NewPod("mem-node", []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{
			EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}},
			n.Sleeper("c", mnt("mem", "/mem")))
		created := n.Run(t, p)
		n.checkTmpfs(t, created, "mem", "/mem", kib(node.Status.Allocatable.Memory().Value()))
	})

	t.Run("hostPath types", func(t *testing.T) {
		base := t.TempDir()
		newDir := filepath.Join(base, "made", "by", "kubelet")
		newFile := filepath.Join(base, "made-file")
		sock := filepath.Join(base, "app.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		existing := filepath.Join(base, "existing")
		if err := os.WriteFile(existing, []byte("from-the-host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		hp := func(name, path string, typ v1.HostPathType) v1.Volume {
			return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ}}}
		}
		vols := []v1.Volume{
			hp("dir", newDir, v1.HostPathDirectoryOrCreate),
			hp("file", newFile, v1.HostPathFileOrCreate),
			hp("sock", sock, v1.HostPathSocket),
			hp("null", "/dev/null", v1.HostPathCharDev),
			hp("existing", existing, v1.HostPathFile),
			{Name: "unset", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: base}}},
		}
		p := n.NewPod("hostpath", vols, n.Sleeper("c", mnt("dir", "/dir"), mnt("file", "/file"), mnt("sock", "/app.sock"),
			mnt("null", "/null"), mnt("existing", "/existing"), mnt("unset", "/base")))
		n.Run(t, p)
		// What upstream creates: a directory 0755 (with its parents), an
		// empty file 0644.
		if fi, err := os.Stat(newDir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Errorf("DirectoryOrCreate made %s: %v, %v; want a directory 0755", newDir, fi.Mode(), err)
		}
		if fi, err := os.Stat(newFile); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || fi.Size() != 0 {
			t.Errorf("FileOrCreate made %s: %v, %v; want an empty file 0644", newFile, fi.Mode(), err)
		}
		// What the container sees is the host's own objects.
		n.Expect(t, "hostpath", "c", "echo from-the-pod > /dir/hello && test -d /dir && test -f /file && test -S /app.sock && test -c /null && cat /existing", "from-the-host")
		if b, err := os.ReadFile(filepath.Join(newDir, "hello")); err != nil || string(b) != "from-the-pod\n" {
			t.Errorf("the pod's write in the host's directory: %q, %v", b, err)
		}
		n.Expect(t, "hostpath", "c", "ls /base | sort | tr '\\n' ' '", "app.sock existing made made-file ")
	})

	t.Run("hostPath Directory missing, then made", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "not-yet")
		typ := v1.HostPathDirectory
		p := n.NewPod("hostpath-missing", []v1.Volume{{Name: "dir", VolumeSource: v1.VolumeSource{
			HostPath: &v1.HostPathVolumeSource{Path: missing, Type: &typ}}}}, n.Sleeper("c", mnt("dir", "/dir")))
		n.Create(t, p)
		// Upstream: "MountVolume.SetUp failed for volume "dir" : hostPath
		// type check failed: PATH is not a directory".
		n.Event(t, "hostpath-missing", "FailedMount", `"dir"`, "hostPath type check failed", missing)
		n.stuckCreating(t, "hostpath-missing")
		// The mount is retried: once the directory exists, the pod starts.
		if err := os.Mkdir(missing, 0o700); err != nil {
			t.Fatal(err)
		}
		n.Running(t, "hostpath-missing", 2*time.Minute)
		n.Expect(t, "hostpath-missing", "c", "stat -c %a /dir", "700")
	})

	t.Run("fsGroup", func(t *testing.T) {
		cm := n.ConfigMap(t, "fsgroup-config", map[string]string{"a": "alpha"})
		fsGroup, user := int64(2000), int64(1000)
		p := n.NewPod("fsgroup", []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
		}, n.Sleeper("c", mnt("scratch", "/scratch"), mnt("cfg", "/cfg")))
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, RunAsUser: &user, SupplementalGroups: []int64{3000}}
		n.Run(t, p)
		// Upstream's SetVolumeOwnership: the group is fsGroup, directories
		// get setgid and group rwx, so that what the pod creates keeps the
		// group; the process has fsGroup among its groups.
		n.Expect(t, "fsgroup", "c", "stat -c '%g %A' /scratch", "2000 drwxrwsrwx")
		n.Expect(t, "fsgroup", "c", "touch /scratch/f && stat -c '%u %g' /scratch/f", "1000 2000")
		if groups := strings.Fields(n.Sh(t, "fsgroup", "c", "id -G")); !slices.Contains(groups, "2000") || !slices.Contains(groups, "3000") {
			t.Errorf("id -G = %v, want fsGroup 2000 and the supplemental group 3000 among them", groups)
		}
		// A configMap's files: group fsGroup, read-only masks (0644|0440).
		n.Expect(t, "fsgroup", "c", "stat -L -c '%g %a' /cfg/a", "2000 644")
	})

	t.Run("fsGroup applied once to an emptyDir", func(t *testing.T) {
		// Upstream sets an emptyDir up once (its ready mark) and never
		// gives it to fsGroup again: a file the pod made private stays
		// private when the pod changes and at every resync (issue #33).
		// The downwardAPI volume shows when the node has seen the change.
		fsGroup := int64(2000)
		p := n.NewPod("fsgroup-once", []v1.Volume{
			{Name: "disk", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		}, n.Busybox("c", "umask 077; echo k > /disk/k; echo k > /mem/k; exec sleep 3600",
			mnt("disk", "/disk"), mnt("mem", "/mem"), mnt("info", "/info")))
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup}
		n.Run(t, p)
		n.EventuallySees(t, "fsgroup-once", "c", "stat -c %a /disk/k /mem/k", "600\n600", 30*time.Second)
		if _, err := n.Admin.CoreV1().Pods(n.NS).Patch(context.Background(), "fsgroup-once", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"poke":"1"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		n.EventuallySees(t, "fsgroup-once", "c", "grep -c poke /info/labels", "1", 3*syncFrequency+15*time.Second)
		// One more pod sync after the change: the periodic resync.
		time.Sleep(syncFrequency + 5*time.Second)
		n.Expect(t, "fsgroup-once", "c", "stat -c '%a %g' /disk/k /mem/k", "600 2000\n600 2000")
	})

	t.Run("volume stats in /stats/summary", func(t *testing.T) {
		created := n.Run(t, n.NewPod("stats", []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			n.Busybox("c", "head -c 1048576 /dev/zero > /data/mib && exec sleep 3600", mnt("data", "/data"))))
		// Upstream measures each pod's volumes every volumeStatsAggPeriod
		// (du and find for an emptyDir on disk) and serves the last figures.
		agent.Eventually(t, "the volume's usage in /stats/summary", 3*volumeStatsAggPeriod+15*time.Second, func() error {
			raw, err := n.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy", "stats/summary").DoRaw(context.Background())
			if err != nil {
				return err
			}
			var sum statsapi.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				return err
			}
			for _, ps := range sum.Pods {
				if ps.PodRef.UID != string(created.UID) {
					continue
				}
				for _, vs := range ps.VolumeStats {
					if vs.Name != "data" {
						continue
					}
					if vs.UsedBytes == nil || *vs.UsedBytes < 1<<20 || vs.InodesUsed == nil || *vs.InodesUsed < 2 {
						return fmt.Errorf("volume data: usedBytes %v, inodesUsed %v; want at least 1 MiB and 2 inodes", ptrValue(vs.UsedBytes), ptrValue(vs.InodesUsed))
					}
					return nil
				}
				return fmt.Errorf("pod stats without the volume data: %+v", ps.VolumeStats)
			}
			return fmt.Errorf("no stats of pod %s", created.UID)
		})
	})

	t.Run("subPath and subPathExpr", func(t *testing.T) {
		cm := n.ConfigMap(t, "subpath-config", map[string]string{"app.conf": "setting=1\n", "other": "x"})
		env := []v1.EnvVar{{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		writer := n.Busybox("c", "echo hi > /out/f && exec sleep 3600",
			v1.VolumeMount{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
			v1.VolumeMount{Name: "work", MountPath: "/out", SubPathExpr: "$(POD_NAME)"})
		writer.Env = env
		p := n.NewPod("subpath", []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}},
			{Name: "work", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		}, writer, n.Sleeper("all", mnt("work", "/all")))
		created := n.Run(t, p)
		n.Expect(t, "subpath", "c", "cat /etc/app.conf", "setting=1")
		// A subPath of a file is a file, not the volume's directory.
		n.Expect(t, "subpath", "c", "test -f /etc/app.conf && test ! -e /etc/other && echo a-file", "a-file")
		// subPathExpr: $(POD_NAME) from the container's env, created in
		// the volume.
		n.EventuallySees(t, "subpath", "all", "cat /all/subpath/f", "hi", 10*time.Second)
		if _, err := os.Stat(filepath.Join(n.volumeDir(created.UID, pluginEmptyDir, "work"), "subpath", "f")); err != nil {
			t.Errorf("the subPathExpr directory on the host: %v", err)
		}
	})

	t.Run("subPath symlink out of the volume refused", func(t *testing.T) {
		// The init container plants a symlink to / in the volume; the
		// container that mounts it as a subPath must not start (upstream:
		// CreateContainerConfigError, "failed to prepare subPath for
		// volumeMount ..."), never see the host's root. A subPath on a
		// real directory of the same volume works.
		p := n.NewPod("escape", []v1.Volume{{Name: "vol", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			n.Sleeper("escaper", v1.VolumeMount{Name: "vol", MountPath: "/esc", SubPath: "escape"}),
			n.Sleeper("honest", v1.VolumeMount{Name: "vol", MountPath: "/d", SubPath: "dir"}))
		p.Spec.InitContainers = []v1.Container{n.Busybox("plant", "ln -s / /vol/escape && mkdir /vol/dir && echo ok > /vol/dir/ok", mnt("vol", "/vol"))}
		n.Create(t, p)
		n.ContainerRunning(t, "escape", "honest")
		n.Expect(t, "escape", "honest", "cat /d/ok", "ok")
		refused := func() error {
			cs, err := n.ContainerState("escape", "escaper")
			if err != nil {
				return err
			}
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.ContainerID != "" {
				return fmt.Errorf("the escaper was created: %+v (container %q)", cs.State, cs.ContainerID)
			}
			if w := cs.State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" || !strings.Contains(w.Message, "subPath") {
				return fmt.Errorf("the escaper: %+v, want waiting CreateContainerConfigError about its subPath", cs.State)
			}
			return nil
		}
		agent.Eventually(t, "the escaper refused", 30*time.Second, refused)
		agent.Consistently(t, "the escaper refused", 5*time.Second, 500*time.Millisecond, refused)
	})
}

func ptrValue(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkTmpfs checks that the pod's emptyDir volume is a tmpfs of size (as
// the kernel shows it) on the host, mounted once at upstream's path, and
// in the container at path, 1777 (tmpfs's root: upstream mounts with
// size= only), writable.
func (n *volNode) checkTmpfs(t *testing.T, p *v1.Pod, volume, path, size string) {
	t.Helper()
	dir := n.volumeDir(p.UID, pluginEmptyDir, volume)
	ms := agent.MountsAt(t, dir)
	if len(ms) != 1 || ms[0].FSType != "tmpfs" || !slices.Contains(strings.Split(ms[0].Options, ","), size) {
		t.Errorf("host mounts at %s: %+v, want one tmpfs with %s", dir, ms, size)
	}
	fstype, opts := n.containerMount(t, p.Name, "c", path)
	if fstype != "tmpfs" || !slices.Contains(opts, size) || !slices.Contains(opts, "rw") {
		t.Errorf("in the container, %s: %s %v, want tmpfs rw with %s", path, fstype, opts, size)
	}
	n.Expect(t, p.Name, "c", fmt.Sprintf("echo in-memory > %s/f && cat %s/f && stat -c %%a %s", path, path, path), "in-memory\n1777")
}
