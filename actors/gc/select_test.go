package gc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	running      = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited       = runtimeapi.ContainerState_CONTAINER_EXITED
	createdState = runtimeapi.ContainerState_CONTAINER_CREATED
	ready        = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady     = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

func ctr(id, uid, name, sandbox string, state runtimeapi.ContainerState, ageMin int) *runtimeapi.Container {
	labels := map[string]string{}
	if uid != "" {
		labels["io.kubernetes.pod.uid"] = uid
		labels["io.kubernetes.container.name"] = name
	}
	return &runtimeapi.Container{Id: id, PodSandboxId: sandbox, State: state, Labels: labels,
		CreatedAt: t0.Add(-time.Duration(ageMin) * time.Minute).UnixNano()}
}

func sb(id, uid string, state runtimeapi.PodSandboxState, ageMin int) *runtimeapi.PodSandbox {
	labels := map[string]string{}
	if uid != "" {
		labels["io.kubernetes.pod.uid"] = uid
	}
	return &runtimeapi.PodSandbox{Id: id, State: state, Labels: labels, CreatedAt: t0.Add(-time.Duration(ageMin) * time.Minute).UnixNano()}
}

func TestSelectContainers(t *testing.T) {
	def := containerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
	knownA := map[types.UID]bool{"a": true}
	tests := []struct {
		name       string
		containers []*runtimeapi.Container
		sandboxes  []*runtimeapi.PodSandbox
		known      map[types.UID]bool
		knownAt    time.Time
		incomplete bool // not every source has sent its pods
		policy     containerPolicy
		wantC      []string
		wantS      []string
	}{
		{
			name: "known pod keeps newest dead instance, oldest removed first",
			containers: []*runtimeapi.Container{
				ctr("c1", "a", "app", "s1", exited, 50), ctr("c2", "a", "app", "s1", exited, 40),
				ctr("c3", "a", "app", "s1", exited, 30), ctr("c4", "a", "app", "s1", running, 20),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60)},
			known:     knownA, policy: def,
			wantC: []string{"c1", "c2"},
		},
		{
			name: "per container name",
			containers: []*runtimeapi.Container{
				ctr("c1", "a", "app", "s1", exited, 50), ctr("c2", "a", "side", "s1", exited, 40),
				ctr("c3", "a", "app", "s1", exited, 30),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60)},
			known:     knownA, policy: def,
			wantC: []string{"c1"},
		},
		{
			name:       "MinAge protects young dead containers",
			containers: []*runtimeapi.Container{ctr("c1", "a", "app", "s1", exited, 50), ctr("c2", "a", "app", "s1", exited, 2), ctr("c3", "a", "app", "s1", exited, 1)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60)},
			known:      knownA, policy: containerPolicy{MinAge: 5 * time.Minute, MaxPerPodContainer: 1, MaxContainers: -1},
			wantC: nil,
		},
		{
			name:       "MaxPerPodContainer -1 keeps all",
			containers: []*runtimeapi.Container{ctr("c1", "a", "app", "s1", exited, 50), ctr("c2", "a", "app", "s1", exited, 40)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60)},
			known:      knownA, policy: containerPolicy{MaxPerPodContainer: -1, MaxContainers: -1},
		},
		{
			name:       "created (not started) containers of a known pod are left alone",
			containers: []*runtimeapi.Container{ctr("c1", "a", "app", "s1", createdState, 50), ctr("c2", "a", "app", "s1", createdState, 40)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60)},
			known:      knownA, policy: def,
		},
		{
			name: "MaxContainers: even share, then oldest overall",
			containers: []*runtimeapi.Container{
				ctr("a1", "a", "app", "s1", exited, 50), ctr("a2", "a", "app", "s1", exited, 40), ctr("a3", "a", "app", "s1", exited, 10),
				ctr("b1", "b", "app", "s2", exited, 45), ctr("b2", "b", "app", "s2", exited, 35),
				ctr("c1", "c", "app", "s3", exited, 5),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s1", "a", ready, 60), sb("s2", "b", ready, 60), sb("s3", "c", ready, 60)},
			known:     map[types.UID]bool{"a": true, "b": true, "c": true},
			policy:    containerPolicy{MaxPerPodContainer: -1, MaxContainers: 2},
			// share 2/3 -> 1 each: a1,a2,b1 go; then 3 left > 2: oldest b2 goes.
			wantC: []string{"a1", "b1", "a2", "b2"},
		},
		{
			name: "unknown pod: everything not running goes, containers then sandboxes",
			containers: []*runtimeapi.Container{
				ctr("c1", "x", "app", "s1", exited, 50), ctr("c2", "x", "app", "s1", exited, 40), ctr("c3", "x", "app", "s1", createdState, 30),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s0", "x", notReady, 70), sb("s1", "x", notReady, 60)},
			known:     knownA, knownAt: t0, policy: def,
			wantC: []string{"c1", "c2", "c3"},
			wantS: []string{"s0", "s1"},
		},
		{
			name:       "unknown pod: running container and ready sandbox stay",
			containers: []*runtimeapi.Container{ctr("c1", "x", "app", "s1", exited, 50), ctr("c2", "x", "app", "s1", running, 40)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "x", ready, 60), sb("s0", "x", notReady, 70)},
			known:      knownA, knownAt: t0, policy: def,
			wantC: []string{"c1"},
			wantS: []string{"s0"},
		},
		{
			name:       "unknown pod created after the pod list was asked for is left alone",
			containers: []*runtimeapi.Container{ctr("c1", "x", "app", "s1", createdState, 1)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "x", notReady, 1)},
			known:      knownA, knownAt: t0.Add(-2 * time.Minute), policy: def,
		},
		{
			name: "sources not all ready: every pod counts as known",
			containers: []*runtimeapi.Container{
				ctr("c1", "x", "app", "s1", exited, 50), ctr("c2", "x", "app", "s1", exited, 40),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s0", "x", notReady, 70), sb("s1", "x", notReady, 60)},
			known:     knownA, knownAt: t0, incomplete: true, policy: def,
			// x's older instance goes by MaxPerPodContainer; its newest
			// sandbox stays, as a known pod's.
			wantC: []string{"c1"},
			wantS: []string{"s0"},
		},
		{
			name:       "objects without the pod UID label are not ours",
			containers: []*runtimeapi.Container{ctr("c1", "", "", "s1", exited, 50)},
			sandboxes:  []*runtimeapi.PodSandbox{sb("s1", "", notReady, 60)},
			known:      knownA, knownAt: t0, policy: def,
		},
		{
			name: "known pod: old dead sandboxes go, the newest stays, one holding a container stays",
			containers: []*runtimeapi.Container{
				ctr("c1", "a", "app", "s1", exited, 50), ctr("c2", "a", "app", "s2", exited, 40),
			},
			sandboxes: []*runtimeapi.PodSandbox{sb("s0", "a", notReady, 70), sb("s1", "a", notReady, 60), sb("s2", "a", notReady, 45), sb("s3", "a", notReady, 30)},
			known:     knownA, policy: def,
			// c1 goes, so s1 holds nothing; s2 holds c2; s3 is the newest.
			wantC: []string{"c1"},
			wantS: []string{"s0", "s1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotC, gotS := selectContainers(tt.containers, tt.sandboxes, knownPods{UIDs: tt.known, At: tt.knownAt, Complete: !tt.incomplete}, t0, tt.policy)
			if !slices.Equal(gotC, tt.wantC) {
				t.Errorf("containers = %v, want %v", gotC, tt.wantC)
			}
			if !slices.Equal(gotS, tt.wantS) {
				t.Errorf("sandboxes = %v, want %v", gotS, tt.wantS)
			}
		})
	}
}

func image(id string, size uint64, tags ...string) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, Size: size, RepoTags: tags}
}

func TestSelectImages(t *testing.T) {
	const gib = 1 << 30
	began := t0.Add(-48 * time.Hour)
	pol := imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	old := func(lastUsedMin, firstMin int) *imageRecord {
		r := &imageRecord{firstDetected: t0.Add(-time.Duration(firstMin) * time.Minute)}
		if lastUsedMin >= 0 {
			r.lastUsed = t0.Add(-time.Duration(lastUsedMin) * time.Minute)
		}
		return r
	}
	images := []*runtimeapi.Image{
		image("sha256:used", 1*gib, "docker.io/library/busybox:1"),
		image("sha256:pause", 1*gib, "registry.k8s.io/pause:3.10"),
		image("sha256:lru", 1*gib, "example/lru:1"),
		image("sha256:mru", 1*gib, "example/mru:1"),
		image("sha256:young", 1*gib, "example/young:1"),
		{Id: "sha256:pinned", Size: gib, Pinned: true},
	}
	records := map[string]*imageRecord{
		"sha256:used": old(0, 600), "sha256:pause": old(-1, 600), "sha256:lru": old(300, 600),
		"sha256:mru": old(10, 600), "sha256:young": old(-1, 1), "sha256:pinned": old(-1, 600),
	}
	inUse := map[string]bool{"docker.io/library/busybox:1": true}
	tests := []struct {
		name                string
		capacity, available uint64
		policy              imagePolicy
		want                []string
		need                uint64 // to free beyond the images removed for their age
	}{
		{name: "under the high threshold: nothing", capacity: 100 * gib, available: 20 * gib, policy: pol},
		// need 20 GiB available, have 14: only lru and mru (2 GiB) may go.
		{name: "above: least recently used first", capacity: 100 * gib, available: 14 * gib, policy: pol,
			want: []string{"sha256:lru", "sha256:mru"}, need: 6 * gib},
		{name: "above: frees as much as it may, never young/used/pinned/sandbox", capacity: 10 * gib, available: 0, policy: pol,
			want: []string{"sha256:lru", "sha256:mru"}, need: 2 * gib},
		{name: "threshold 100 disables", capacity: 10 * gib, available: 0, policy: imagePolicy{HighThresholdPercent: 100, LowThresholdPercent: 80}},
		{name: "max age removes old unused images whatever the usage", capacity: 100 * gib, available: 90 * gib,
			policy: imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: time.Hour}, want: []string{"sha256:lru"}},
		{name: "max age waits for the actor to have run that long", capacity: 100 * gib, available: 90 * gib,
			policy: imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 72 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			choices, need := selectImages(images, inUse, "registry.k8s.io/pause:3.10", tt.capacity, tt.available, tt.policy, t0, began, records)
			if need != tt.need {
				t.Errorf("need = %d, want %d", need, tt.need)
			}
			for _, c := range choices {
				got = append(got, c.id)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("images = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("stops once enough is freed", func(t *testing.T) {
		// 10 GiB disk, 1.5 GiB free, 85% -> need 2 GiB free: 0.5 GiB, lru is enough.
		got, need := selectImages(images, inUse, "registry.k8s.io/pause:3.10", 10*gib, 3*gib/2, pol, t0, began, records)
		if len(got) != 1 || got[0].id != "sha256:lru" || got[0].reason != reasonSpace || need != gib/2 {
			t.Errorf("got %+v, need %d", got, need)
		}
	})
}

func TestDetectImages(t *testing.T) {
	records := map[string]*imageRecord{"sha256:gone": {firstDetected: t0}}
	images := []*runtimeapi.Image{image("sha256:a", 1, "a:1"), image("sha256:b", 2, "b:1")}
	detectImages(records, images, imagesInUse([]*runtimeapi.Container{{ImageRef: "sha256:a"}}, nil), t0)
	if _, ok := records["sha256:gone"]; ok {
		t.Error("gone image still recorded")
	}
	if r := records["sha256:a"]; r == nil || !r.lastUsed.Equal(t0) || !r.firstDetected.Equal(t0) {
		t.Errorf("a = %+v", r)
	}
	if r := records["sha256:b"]; r == nil || !r.lastUsed.IsZero() || r.size != 2 {
		t.Errorf("b = %+v", r)
	}
	later := t0.Add(time.Hour)
	detectImages(records, images, nil, later)
	if r := records["sha256:a"]; !r.firstDetected.Equal(t0) || !r.lastUsed.Equal(t0) {
		t.Errorf("a after = %+v", r)
	}
}

func TestSandboxImage(t *testing.T) {
	for _, tt := range []struct {
		info map[string]string
		want string
	}{
		{map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}, "registry.k8s.io/pause:3.10"},
		{map[string]string{"config": `{"pinnedImages":{"sandbox":"registry.k8s.io/pause:3.10.1"}}`}, "registry.k8s.io/pause:3.10.1"},
		{map[string]string{"config": `not json`}, ""},
		{nil, ""},
	} {
		if got := sandboxImage(tt.info); got != tt.want {
			t.Errorf("sandboxImage(%v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}

func TestRemoveLogDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ns_known_uid-known", "ns_left_uid-left", "ns_gone_uid-gone", "ns_new_uid-new", "notapod"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	for _, d := range []string{"ns_known_uid-known", "ns_left_uid-left", "ns_gone_uid-gone", "notapod"} {
		if err := os.Chtimes(filepath.Join(root, d), past, past); err != nil {
			t.Fatal(err)
		}
	}
	known := knownPods{UIDs: map[types.UID]bool{"uid-known": true}, At: time.Now().Add(-time.Minute), Complete: true}
	n, errs := removeLogDirs(root, known, map[types.UID]bool{"uid-left": true})
	if n != 1 || len(errs) != 0 {
		t.Fatalf("removed %d, errs %v", n, errs)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"notapod", "ns_known_uid-known", "ns_left_uid-left", "ns_new_uid-new"}; !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
}

func TestRotatedLogs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "0.log")
	for _, f := range []string{"0.log", "0.log.20260101-120002", "0.log.20260101-120001.gz", "0.log.20260101-120001",
		"0.log.20260101-120003.tmp", "1.log.20260101-120000"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := rotatedLogs(p)
	want := []string{p + ".20260101-120001", p + ".20260101-120001.gz", p + ".20260101-120002", p + ".20260101-120003.tmp"}
	if !slices.Equal(got, want) {
		t.Errorf("rotatedLogs = %v, want %v", got, want)
	}
	// The leftovers of an interrupted rotation go: the .tmp file and the
	// uncompressed file whose compressed copy exists.
	got = cleanupUnusedLogs(got)
	want = []string{p + ".20260101-120001.gz", p + ".20260101-120002"}
	if !slices.Equal(got, want) || !slices.Equal(rotatedLogs(p), want) {
		t.Errorf("after cleanup: %v (on disk %v), want %v", got, rotatedLogs(p), want)
	}
}
