package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
	"github.com/actorlet/actorlet/test/env"
)

// TestContainerGCAgainstContainerd runs container GC passes against the
// environment's containerd: a known pod keeps its newest dead instance; an
// unknown pod loses its dead containers, then (once its sandbox is stopped)
// its sandbox and its log directory. It talks CRI directly and does not run
// actorlet.
func TestContainerGCAgainstContainerd(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, _ := e.CRI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "gc-it-" + hex.EncodeToString(b)
	uid := name + "-uid"
	const ns = "gc-test"
	logsRoot := t.TempDir()
	logDir := logs.PodLogsDir(logsRoot, ns, name, types.UID(uid))
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	podLabels := map[string]string{
		podruntime.LabelPodUID: uid, podruntime.LabelPodName: name, podruntime.LabelPodNamespace: ns,
	}
	sbCfg := env.SandboxConfig(name, uid, ns, logDir, podLabels)
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	sbID := sb.PodSandboxId
	byUID := map[string]string{podruntime.LabelPodUID: uid}
	listContainers := func() []*runtimeapi.Container {
		t.Helper()
		r, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: byUID}})
		if err != nil {
			t.Fatalf("ListContainers: %v", err)
		}
		return r.Containers
	}
	listSandboxes := func() []*runtimeapi.PodSandbox {
		t.Helper()
		r, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: byUID}})
		if err != nil {
			t.Fatalf("ListPodSandbox: %v", err)
		}
		return r.Items
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if r, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: byUID}}); err == nil {
			for _, c := range r.Containers {
				_, _ = rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: 1})
				_, _ = rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id})
			}
		}
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID})
		_, _ = rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sbID})
	})

	const instances = 5
	var ids []string
	for i := range instances {
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  sbID,
			SandboxConfig: sbCfg,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "fail", Attempt: uint32(i)},
				Image:    &runtimeapi.ImageSpec{Image: e.BusyboxImage},
				Command:  []string{"sh", "-c", "exit 1"},
				LogPath:  fmt.Sprintf("fail/%d.log", i),
				Labels: map[string]string{
					podruntime.LabelPodUID: uid, podruntime.LabelPodName: name, podruntime.LabelPodNamespace: ns,
					podruntime.LabelContainerName: "fail",
				},
				Annotations: map[string]string{podruntime.AnnotationContainerRestartCount: strconv.Itoa(i)},
			},
		})
		if err != nil {
			t.Fatalf("CreateContainer %d: %v", i, err)
		}
		ids = append(ids, c.ContainerId)
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			t.Fatalf("StartContainer %d: %v", i, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
			if err != nil {
				t.Fatalf("ContainerStatus %d: %v", i, err)
			}
			if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("container %d did not exit: %v", i, st.Status.State)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if got := len(listContainers()); got != instances {
		t.Fatalf("%d containers before GC, want %d", got, instances)
	}

	pass := containerPass{
		// Only this test's pod: the runtime is shared.
		Selector: byUID,
		Runtime:  rt, PodLogsDir: logsRoot, Log: zerolog.New(zerolog.NewTestWriter(t)),
		Policy: containerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1},
	}
	run := func(known map[types.UID]bool) {
		t.Helper()
		done := pass.Run(ctx, knownPods{UIDs: known, At: time.Now(), Complete: true})
		if len(done.Errs) > 0 {
			t.Fatalf("gc pass: %v", done.Errs)
		}
		t.Logf("pass: %s", done.Summary())
	}

	// Known pod: the newest dead instance stays (kubectl logs --previous,
	// restart count), the four older ones go, with their logs.
	run(map[types.UID]bool{types.UID(uid): true})
	left := listContainers()
	if len(left) != 1 || left[0].Id != ids[instances-1] {
		t.Fatalf("after GC of a known pod: %d containers left (%v), want only the newest %s", len(left), left, ids[instances-1])
	}
	if _, err := os.Stat(filepath.Join(logDir, "fail", "0.log")); !os.IsNotExist(err) {
		t.Errorf("log of a removed instance still there: %v", err)
	}
	if n := len(listSandboxes()); n != 1 {
		t.Fatalf("%d sandboxes after GC of a known pod, want 1", n)
	}

	// Unknown pod with a ready sandbox: its dead container goes, the ready
	// sandbox and the log directory stay.
	run(map[types.UID]bool{})
	if n := len(listContainers()); n != 0 {
		t.Fatalf("%d containers of an unknown pod left, want 0", n)
	}
	if n := len(listSandboxes()); n != 1 {
		t.Fatalf("ready sandbox of an unknown pod removed")
	}
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("log directory of a pod with a sandbox left removed: %v", err)
	}

	// Once stopped, everything of the unknown pod goes.
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbID}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	run(map[types.UID]bool{})
	if n := len(listSandboxes()); n != 0 {
		t.Fatalf("%d sandboxes of an unknown pod left, want 0", n)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Fatalf("log directory of a gone pod still there: %v", err)
	}
}

// TestDetectImagesAgainstContainerd lists what an image GC pass needs from
// the environment's containerd (read-only): images, the image filesystem's
// size and the sandbox image, which must never be a candidate.
func TestDetectImagesAgainstContainerd(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, img := e.CRI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	d := detect(ctx, rt, img)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if len(d.Images) == 0 || d.CapacityBytes == 0 {
		t.Fatalf("detected %d images, capacity %d", len(d.Images), d.CapacityBytes)
	}
	t.Logf("%s; sandbox image %q", d.Summary(), d.SandboxImage)
	// containerd 1.x names the sandbox image in its verbose status; 2.x
	// names it only as pinned (CRI Image.pinned), which keeps it out of the
	// candidates just the same.
	if d.SandboxImage == "" {
		pinned := false
		for _, im := range d.Images {
			pinned = pinned || im.Pinned && imageNamed(im, map[string]bool{e.PauseImage: true})
		}
		if !pinned {
			t.Errorf("the sandbox image %s is neither in the runtime's verbose status nor pinned", e.PauseImage)
		}
	}
	// A full disk and no age limits: every candidate is fair game, but
	// never the sandbox image or a pinned one.
	records := map[string]*imageRecord{}
	inUse := imagesInUse(d.Containers, d.MountedImages)
	detectImages(records, d.Images, inUse, d.At.Add(-time.Hour))
	choices, _ := selectImages(d.Images, inUse, d.SandboxImage, d.CapacityBytes, 0, imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80}, d.At, d.At, records)
	for _, c := range choices {
		for _, im := range d.Images {
			if im.Id == c.id && (im.Pinned || imageNamed(im, map[string]bool{d.SandboxImage: true})) {
				t.Errorf("would remove %s (%v), pinned or the sandbox image", c.id, im.RepoTags)
			}
		}
	}
}
