package podruntime

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/volume"
)

// TestIntegrationTerminationMessage runs upstream's conformance cases of
// termination messages ("should report termination message ...") against
// containerd, and the previous instance's message after a restart.
func TestIntegrationTerminationMessage(t *testing.T) {
	e, r := newIntegration(t)
	r.Opts.RootDir = t.TempDir()
	fallback := func(c v1.Container) v1.Container {
		c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
		return c
	}
	// finished runs the pod to its terminal phase and returns the main
	// container's terminated state.
	finished := func(t *testing.T, c v1.Container, phase v1.PodPhase) (*v1.Pod, *v1.ContainerStateTerminated) {
		t.Helper()
		pod := testPod(t, r, c)
		pod.Spec.RestartPolicy = v1.RestartPolicyNever
		res := syncUntil(t, r, pod, nil, time.Minute, string(phase), func(res SyncResult) bool {
			return res.APIStatus.Phase == phase
		})
		term := apiContainer(res.APIStatus, "main").State.Terminated
		if term == nil {
			t.Fatalf("main is not terminated: %+v", apiContainer(res.APIStatus, "main"))
		}
		return pod, term
	}
	tests := []struct {
		name      string
		container v1.Container
		phase     v1.PodPhase
		want      string
	}{
		{"from the file", busybox(e, "main", "sh", "-c", "echo -n DONE > /dev/termination-log"), v1.PodSucceeded, "DONE"},
		{"FallbackToLogsOnError: from the log of a failure", fallback(busybox(e, "main", "sh", "-c", "echo -n DONE; /bin/false")), v1.PodFailed, "DONE"},
		{"FallbackToLogsOnError: empty on success", fallback(busybox(e, "main", "sh", "-c", "echo -n DONE; /bin/true")), v1.PodSucceeded, ""},
		{"FallbackToLogsOnError: from the file on success", fallback(busybox(e, "main", "sh", "-c", "echo -n OK > /dev/termination-log; echo DONE")), v1.PodSucceeded, "OK"},
		{"FallbackToLogsOnError: the file first on failure", fallback(busybox(e, "main", "sh", "-c", "echo -n OK > /dev/termination-log; echo DONE; exit 3")), v1.PodFailed, "OK"},
		{"non-root user at a non-default path", func() v1.Container {
			c := busybox(e, "main", "sh", "-c", "echo -n DONE > /dev/termination-custom-log")
			c.TerminationMessagePath = "/dev/termination-custom-log"
			c.SecurityContext = &v1.SecurityContext{RunAsUser: ptrTo[int64](1000)}
			return c
		}(), v1.PodSucceeded, "DONE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, term := finished(t, tt.container, tt.phase)
			if term.Message != tt.want {
				t.Errorf("message %q, want %q (terminated %+v)", term.Message, tt.want, term)
			}
			// The file is the instance's, under the pod's directory.
			files, err := filepath.Glob(filepath.Join(r.Opts.RootDir, "pods", string(pod.UID), "containers", "main", "????????"))
			if err != nil || len(files) != 1 {
				t.Errorf("termination-log files %v (%v), want one", files, err)
			}
		})
	}

	t.Run("read again by a new runtime, as after a restart", func(t *testing.T) {
		pod, _ := finished(t, busybox(e, "main", "sh", "-c", "echo -n kept > /dev/termination-log"), v1.PodSucceeded)
		fresh := &Runtime{RT: r.RT, Img: r.Img, Opts: Options{RuntimeRequestTimeout: time.Minute}}
		st, err := fresh.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if cs := st.FindContainer("main"); cs == nil || cs.Message != "kept" {
			t.Errorf("container %+v, want the message kept", cs)
		}
	})

	t.Run("the previous instance's message in lastState", func(t *testing.T) {
		// The first run fails with a message; the second runs on.
		c := busybox(e, "main", "sh", "-c", `[ -e /data/ran ] && exec sleep 3600; touch /data/ran; echo -n "first run" > /dev/termination-log; exit 2`)
		dir := t.TempDir()
		c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		pod := testPod(t, r, c)
		pod.Spec.Volumes = []v1.Volume{{Name: "data"}}
		vols := map[string]volume.Mounted{"data": {Name: "data", Path: dir}}
		backoff := NewCrashLoopBackoff(0, nil)
		deadline := time.Now().Add(time.Minute)
		for {
			res := r.SyncPod(context.Background(), pod, vols, backoff, nil)
			pod.Status = res.APIStatus
			cs := apiContainer(res.APIStatus, "main")
			if cs.State.Running != nil && cs.RestartCount == 1 {
				last := cs.LastTerminationState.Terminated
				if last == nil || last.Message != "first run" || last.ExitCode != 2 {
					t.Errorf("lastState %+v, want the first run's exit 2 and message", cs.LastTerminationState)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no restart after a minute: %+v (err %v)", cs, res.Err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	})
}
