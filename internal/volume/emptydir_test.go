package volume

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"

	"github.com/actorlet/actorlet/internal/testutil"
)

func memLimits(s string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceMemory: resource.MustParse(s)}
}

func withMemLimit(limit string) v1.Container {
	c := v1.Container{Name: "c" + limit}
	if limit != "" {
		c.Resources.Limits = memLimits(limit)
	}
	return c
}

func quantityPtr(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestPodMemoryLimit(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := withMemLimit("50Mi")
	sidecar.RestartPolicy = &always
	tests := []struct {
		name string
		spec v1.PodSpec
		want string // "" for none
	}{
		{"no containers limited", v1.PodSpec{Containers: []v1.Container{withMemLimit("")}}, ""},
		{"one of two unlimited", v1.PodSpec{Containers: []v1.Container{withMemLimit("64Mi"), withMemLimit("")}}, ""},
		{"sum of app containers", v1.PodSpec{Containers: []v1.Container{withMemLimit("64Mi"), withMemLimit("32Mi")}}, "96Mi"},
		{"an init container larger than the sum", v1.PodSpec{
			InitContainers: []v1.Container{withMemLimit("200Mi")},
			Containers:     []v1.Container{withMemLimit("64Mi"), withMemLimit("32Mi")}}, "200Mi"},
		{"an unlimited init container", v1.PodSpec{
			InitContainers: []v1.Container{withMemLimit("")},
			Containers:     []v1.Container{withMemLimit("64Mi")}}, ""},
		{"a sidecar adds to the app containers", v1.PodSpec{
			InitContainers: []v1.Container{sidecar},
			Containers:     []v1.Container{withMemLimit("64Mi")}}, "114Mi"},
		{"overhead added", v1.PodSpec{Containers: []v1.Container{withMemLimit("64Mi")}, Overhead: memLimits("10Mi")}, "74Mi"},
		{"pod-level limit", v1.PodSpec{Containers: []v1.Container{withMemLimit("")},
			Resources: &v1.ResourceRequirements{Limits: memLimits("128Mi")}}, "128Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podMemoryLimit(&v1.Pod{Spec: tt.spec})
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("limit %s, want none", got)
			case tt.want != "" && (got == nil || got.Cmp(resource.MustParse(tt.want)) != 0):
				t.Fatalf("limit %v, want %s", got, tt.want)
			}
		})
	}
}

func TestEmptyDirMemorySize(t *testing.T) {
	limited := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withMemLimit("1Gi")}}}
	unlimited := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withMemLimit("")}}}
	tests := []struct {
		name        string
		allocatable *resource.Quantity
		sizeLimit   *resource.Quantity
		pod         *v1.Pod
		want        string // "" for tmpfs's default
	}{
		{"node allocatable when nothing else", quantityPtr("8Gi"), nil, unlimited, "8Gi"},
		{"pod limit below allocatable", quantityPtr("8Gi"), nil, limited, "1Gi"},
		{"pod limit above allocatable ignored", quantityPtr("512Mi"), nil, limited, "512Mi"},
		{"sizeLimit below the pod limit", quantityPtr("8Gi"), quantityPtr("100Mi"), limited, "100Mi"},
		{"sizeLimit above the pod limit ignored", quantityPtr("8Gi"), quantityPtr("2Gi"), limited, "1Gi"},
		{"sizeLimit above allocatable ignored", quantityPtr("1Gi"), quantityPtr("2Gi"), unlimited, "1Gi"},
		{"zero sizeLimit ignored", quantityPtr("8Gi"), quantityPtr("0"), unlimited, "8Gi"},
		{"no allocatable known: pod limit", nil, nil, limited, "1Gi"},
		{"no allocatable known: sizeLimit", nil, quantityPtr("100Mi"), unlimited, "100Mi"},
		{"nothing known: tmpfs default", nil, nil, unlimited, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := emptyDirMemorySize(tt.allocatable, tt.sizeLimit, tt.pod)
			switch {
			case tt.want == "" && got != nil:
				t.Fatalf("size %s, want tmpfs's default", got)
			case tt.want != "" && (got == nil || got.Cmp(resource.MustParse(tt.want)) != 0):
				t.Fatalf("size %v, want %s", got, tt.want)
			}
		})
	}
}

func localTestPod(uid string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{withMemLimit("64Mi")}}}
	p.UID = k8stypes.UID("uid-" + uid)
	p.Namespace, p.Name = "ns", "pod"
	return p
}

func TestSetUpEmptyDir(t *testing.T) {
	tests := []struct {
		name     string
		src      v1.EmptyDirVolumeSource
		wantErr  string
		wantOpts []string // the tmpfs's mount options; nil: no mount
	}{
		{name: "on disk", src: v1.EmptyDirVolumeSource{}},
		{name: "memory sized by the pod's limit", src: v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory},
			wantOpts: []string{"size=67108864"}},
		{name: "memory sized by sizeLimit", src: v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: quantityPtr("1Mi")},
			wantOpts: []string{"size=1048576"}},
		{name: "hugepages", src: v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages},
			wantErr: `emptyDir medium "HugePages" is not supported by this node`},
		{name: "hugepages of a size", src: v1.EmptyDirVolumeSource{Medium: "HugePages-2Mi"},
			wantErr: "is not supported by this node"},
		{name: "unknown medium", src: v1.EmptyDirVolumeSource{Medium: "Tape"}, wantErr: `unknown storage medium "Tape"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := mount.NewFakeMounter(nil)
			h := &Host{RootDir: t.TempDir(), Mounter: fm, NodeAllocatable: memLimits("8Gi")}
			pod := localTestPod("e")
			vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &tt.src}}
			m, err := h.SetUp(t.Context(), pod, vol)
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			dir := filepath.Join(h.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "v")
			if m != (Mounted{Name: "v", Path: dir, SELinuxRelabel: true}) {
				t.Fatalf("mounted %+v", m)
			}
			fi, err := os.Stat(dir)
			if err != nil || fi.Mode().Perm() != 0o777 {
				t.Fatalf("directory %v %v, want mode 0777", fi.Mode(), err)
			}
			if _, err := os.Stat(filepath.Join(h.RootDir, "pods", string(pod.UID), "plugins", "kubernetes.io~empty-dir", "v", "ready")); err != nil {
				t.Fatalf("no ready mark: %v", err)
			}
			mps, _ := fm.List()
			if tt.wantOpts == nil {
				if len(mps) != 0 {
					t.Fatalf("mounts %+v, want none", mps)
				}
				return
			}
			if len(mps) != 1 || mps[0].Type != "tmpfs" || mps[0].Path != dir || !slices.Equal(mps[0].Opts, tt.wantOpts) {
				t.Fatalf("mounts %+v, want a tmpfs at %s with %v", mps, dir, tt.wantOpts)
			}
			// Idempotent: a second SetUp mounts nothing over it.
			if _, err := h.SetUp(t.Context(), pod, vol); err != nil {
				t.Fatal(err)
			}
			if mps, _ := fm.List(); len(mps) != 1 {
				t.Fatalf("mounts after a second SetUp %+v", mps)
			}
		})
	}
}

// TestEmptyDirTmpfs mounts a real tmpfs: its size and the sticky bit of
// its root, as upstream's e2e tests expect, and its teardown.
func TestEmptyDirTmpfs(t *testing.T) {
	localNeedsRoot(t)
	h := &Host{RootDir: t.TempDir(), Mounter: mount.New(""), NodeAllocatable: memLimits("8Gi")}
	pod := localTestPod("t")
	vol := &v1.Volume{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{
		Medium: v1.StorageMediumMemory, SizeLimit: quantityPtr("4Mi")}}}
	m, err := h.SetUp(t.Context(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Mounter.Unmount(m.Path) })
	met, err := PodVolume{Plugin: PluginEmptyDir, Path: m.Path}.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if !met.OnTmpfs || met.Capacity != 4<<20 {
		t.Fatalf("metrics %+v, want a tmpfs of 4Mi", met)
	}
	fi, err := os.Stat(m.Path)
	if err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky == 0 {
		t.Fatalf("tmpfs root %v %v, want 1777", fi.Mode(), err)
	}
	if err := os.WriteFile(filepath.Join(m.Path, "data"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.TearDownPod(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(PodDir(h.RootDir, pod.UID)); !os.IsNotExist(err) {
		t.Fatalf("pod directory left: %v", err)
	}
}

// TestEmptyDirSetUpOnce: an emptyDir is set up, and given to the pod's
// fsGroup, once, as upstream's: a second SetUp (the volume-manager's, on
// any change of the pod) leaves the files the pod made since as they
// are. A memory volume whose tmpfs is gone is set up, and walked, again,
// as upstream.
func TestEmptyDirSetUpOnce(t *testing.T) {
	localNeedsRoot(t)
	tests := []struct {
		name   string
		medium v1.StorageMedium
		// change runs after the pod wrote its file, before SetUp again.
		change func(t *testing.T, fm *mount.FakeMounter, dir string)
		want   os.FileMode // the pod's file's mode after SetUp again
	}{
		{name: "on disk", want: 0o600},
		{name: "in memory", medium: v1.StorageMediumMemory, want: 0o600},
		{name: "in memory, its tmpfs gone", medium: v1.StorageMediumMemory, want: 0o660,
			change: func(t *testing.T, fm *mount.FakeMounter, dir string) { localMust(t, fm.Unmount(dir)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := mount.NewFakeMounter(nil)
			h := &Host{RootDir: t.TempDir(), Mounter: fm, NodeAllocatable: memLimits("8Gi")}
			pod := fsGroupPod(2000)
			vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: tt.medium}}}
			m, err := h.SetUp(t.Context(), pod, vol)
			localMust(t, err)
			f := filepath.Join(m.Path, "k")
			localMust(t, os.WriteFile(f, nil, 0o600))
			localMust(t, os.Chmod(f, 0o600))
			if tt.change != nil {
				tt.change(t, fm, m.Path)
			}
			if _, err := h.SetUp(t.Context(), pod, vol); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(f)
			localMust(t, err)
			if fi.Mode().Perm() != tt.want {
				t.Fatalf("the pod's file is %v after SetUp again, want %v", fi.Mode().Perm(), tt.want)
			}
		})
	}
}

// TestEmptyDirReadyWithoutDir: a ready mark whose directory is gone is
// dropped and the volume set up afresh, with the pod's group, as upstream.
func TestEmptyDirReadyWithoutDir(t *testing.T) {
	localNeedsRoot(t)
	h := &Host{RootDir: t.TempDir(), Mounter: mount.NewFakeMounter(nil)}
	pod := fsGroupPod(2000)
	vol := &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	m, err := h.SetUp(t.Context(), pod, vol)
	localMust(t, err)
	localMust(t, os.RemoveAll(m.Path))
	if _, err := h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(m.Path)
	localMust(t, err)
	if fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSetgid == 0 || fi.Sys().(*syscall.Stat_t).Gid != 2000 {
		t.Fatalf("directory set up again %v gid %d, want 2777 and the pod's group", fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid)
	}
	if !isReady(h.readyDir(pod, PluginEmptyDir, "v")) {
		t.Fatal("no ready mark")
	}
}

func fsGroupPod(gid int64) *v1.Pod {
	pod := localTestPod("fsgroup")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	return pod
}
