package podruntime

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/testutil"
)

// TestIntegrationRunAsNonRoot checks runAsNonRoot against this
// environment's containerd and images: busybox runs as root and is refused,
// busybox:uid1234 runs, and runAsUser: 0 is refused whatever the image.
func TestIntegrationRunAsNonRoot(t *testing.T) {
	e, r := newIntegration(t)
	if e.NonRootImage == "" {
		t.Fatal("the environment has no image with a non-root user (ACTORLET_NONROOT_IMAGE): run hack/node-env up")
	}
	rec := record.NewFakeRecorder(100)
	r.Opts.Recorder = rec
	ctx := context.Background()
	nonRoot := func(c v1.Container, runAsUser *int64) v1.Container {
		c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: runAsUser}
		return c
	}
	refused := func(t *testing.T, pod *v1.Pod, want string) {
		t.Helper()
		res := r.SyncPod(ctx, pod, nil, NewCrashLoopBackoff(0, nil), nil)
		if res.Err == nil || !strings.Contains(res.Err.Error(), want) {
			t.Fatalf("sync error %v, want %q", res.Err, want)
		}
		w := apiContainer(res.APIStatus, "main").State.Waiting
		if w == nil || w.Reason != ReasonCreateContainerConfigError || w.Message != want {
			t.Errorf("waiting %+v, want %s: %s", w, ReasonCreateContainerConfigError, want)
		}
		if res.APIStatus.Phase != v1.PodPending {
			t.Errorf("phase %s, want Pending", res.APIStatus.Phase)
		}
		if n := len(res.Status.ContainerStatuses); n != 0 {
			t.Errorf("%d containers created, want none", n)
		}
		found := false
		for _, ev := range testutil.Events(rec) {
			found = found || ev == "Warning Failed Error: "+want
		}
		if !found {
			t.Errorf("no event %q", "Warning Failed Error: "+want)
		}
	}

	t.Run("an image whose user is root is refused", func(t *testing.T) {
		pod := testPod(t, r, nonRoot(busybox(e, "main", "sleep", "3600"), nil))
		refused(t, pod, fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: main)", podref.Desc(pod)))
	})
	t.Run("runAsUser 0 is refused", func(t *testing.T) {
		c := nonRoot(busybox(e, "main", "sleep", "3600"), ptrTo[int64](0))
		c.Image = e.NonRootImage
		pod := testPod(t, r, c)
		refused(t, pod, fmt.Sprintf("container's runAsUser breaks non-root policy (pod: %q, container: main)", podref.Desc(pod)))
	})
	// The user is read from the image's status as ensureImage found it, or,
	// when ensureImage pulled it, read afterwards: both are tried.
	for _, policy := range []v1.PullPolicy{v1.PullIfNotPresent, v1.PullAlways} {
		t.Run("an image with USER 1234 runs, pull policy "+string(policy), func(t *testing.T) {
			c := nonRoot(busybox(e, "main", "sh", "-c", `[ "$(id -u)" = 1234 ] || exit 7; exec sleep 3600`), nil)
			c.Image, c.ImagePullPolicy = e.NonRootImage, policy
			pod := testPod(t, r, c)
			res := syncUntil(t, r, pod, NewCrashLoopBackoff(0, nil), time.Minute, "Running", func(res SyncResult) bool {
				return res.APIStatus.Phase == v1.PodRunning
			})
			if res.Err != nil {
				t.Fatalf("sync: %v", res.Err)
			}
			// Still running a moment later: its user was 1234, not root.
			time.Sleep(time.Second)
			st, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			if cs := st.FindContainer("main"); cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Errorf("container %+v, want running as 1234", cs)
			}
			testutil.Events(rec)
		})
	}
}

// TestIntegrationHostUsersFalseRefused checks that a pod with hostUsers:
// false never runs on this environment's containerd (1.6: no user
// namespaces), not even from a sandbox made in the host's user namespace
// before.
func TestIntegrationHostUsersFalseRefused(t *testing.T) {
	e, r := newIntegration(t)
	rec := record.NewFakeRecorder(100)
	r.Opts.Recorder = rec
	ctx := context.Background()
	const reason = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	wantEvent := regexp.QuoteMeta("Warning FailedCreatePodSandBox Failed to create pod sandbox: " + reason)

	st, err := r.RT.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.RuntimeHandlers {
		if h.Name == "" && h.GetFeatures().GetUserNamespaces() {
			t.Skip("this runtime supports user namespaces; the test is for one that does not")
		}
	}

	t.Run("a new pod: nothing is created", func(t *testing.T) {
		pod := testPod(t, r, busybox(e, "main", "sleep", "3600"))
		pod.Spec.HostUsers = ptrTo(false)
		for range 2 { // and again on the retry
			res := r.SyncNewPod(ctx, pod, nil, NewCrashLoopBackoff(0, nil), nil)
			if res.Err == nil || !strings.Contains(res.Err.Error(), reason) {
				t.Fatalf("sync error %v, want %q", res.Err, reason)
			}
			expectEvents(t, rec, wantEvent)
			if res.APIStatus.Phase != v1.PodPending {
				t.Errorf("phase %s, want Pending", res.APIStatus.Phase)
			}
		}
		got, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.SandboxStatuses) != 0 || len(got.ContainerStatuses) != 0 {
			t.Errorf("the runtime holds %d sandboxes and %d containers of the pod, want none", len(got.SandboxStatuses), len(got.ContainerStatuses))
		}
	})

	t.Run("a pod running in the host's user namespace is stopped", func(t *testing.T) {
		pod := testPod(t, r, busybox(e, "main", "sleep", "3600"))
		syncUntil(t, r, pod, nil, time.Minute, "Running", func(res SyncResult) bool { return res.APIStatus.Phase == v1.PodRunning })
		testutil.Events(rec)
		// What an actorlet that ignored hostUsers left behind.
		pod.Spec.HostUsers = ptrTo(false)
		res := r.SyncPod(ctx, pod, nil, nil, nil)
		if res.Err == nil || !strings.Contains(res.Err.Error(), reason) {
			t.Fatalf("sync error %v, want %q", res.Err, reason)
		}
		found := false
		for _, ev := range testutil.Events(rec) {
			found = found || regexp.MustCompile("^"+wantEvent+"$").MatchString(ev)
		}
		if !found {
			t.Errorf("no event %s", wantEvent)
		}
		got, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.SandboxStatuses) != 1 || got.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("sandboxes %v, want the old one, stopped", got.SandboxStatuses)
		}
		for _, cs := range got.ContainerStatuses {
			if cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Errorf("container %s still runs", cs.Name)
			}
		}
	})
}
