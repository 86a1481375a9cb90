package standalone

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// Timings in these tests are the product's bounds times three, so that a
// loaded 2-core machine does not make them flake; `make bench` reports the
// real figures.

func (n *node) busybox() string { return n.Env.BusyboxImage }

func TestWebServerPodServesFromTheHost(t *testing.T) {
	n := newNode(t)
	n.Start()
	n.WriteManifest("web.yaml", manifest("web", fmt.Sprintf(`  containers:
  - name: httpd
    image: %s
    command: ["sh", "-c", "mkdir -p /www && echo hello-from-actorlet > /www/index.html && exec httpd -f -p 8080 -h /www"]
`, n.busybox())))
	pod := n.Running("web", 60*time.Second)
	if pod.Status.PodIP == "" || !strings.HasPrefix(pod.Status.PodIP, "10.244.") {
		t.Fatalf("pod IP %q is not in the pod network 10.244.0.0/16", pod.Status.PodIP)
	}
	n.Eventually("the web server answers from the host", 30*time.Second, func() error {
		resp, err := http.Get("http://" + pod.Status.PodIP + ":8080/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "hello-from-actorlet") {
			return fmt.Errorf("body %q", body)
		}
		return nil
	})
	for _, c := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		if !hasCondition(pod, c) {
			t.Errorf("condition %s is not True: %+v", c, pod.Status.Conditions)
		}
	}
}

func hasCondition(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func TestRestartPolicies(t *testing.T) {
	n := newNode(t)
	n.Start()
	pods := map[string]string{
		"crash":          "  restartPolicy: Always\n  containers:\n  - name: c\n    image: %s\n    command: [\"sh\", \"-c\", \"exit 1\"]\n",
		"never":          "  restartPolicy: Never\n  containers:\n  - name: c\n    image: %s\n    command: [\"sh\", \"-c\", \"exit 1\"]\n",
		"onfailure-ok":   "  restartPolicy: OnFailure\n  containers:\n  - name: c\n    image: %s\n    command: [\"sh\", \"-c\", \"exit 0\"]\n",
		"onfailure-fail": "  restartPolicy: OnFailure\n  containers:\n  - name: c\n    image: %s\n    command: [\"sh\", \"-c\", \"exit 3\"]\n",
		"init": "  initContainers:\n  - name: first\n    image: %[1]s\n    command: [\"sh\", \"-c\", \"echo one > /dev/termination-log\"]\n" +
			"  - name: second\n    image: %[1]s\n    command: [\"true\"]\n  containers:\n  - name: app\n    image: %[1]s\n    command: [\"sleep\", \"3600\"]\n",
		"init-fails": "  restartPolicy: Never\n  initContainers:\n  - name: broken\n    image: %[1]s\n    command: [\"sh\", \"-c\", \"exit 2\"]\n" +
			"  containers:\n  - name: app\n    image: %[1]s\n    command: [\"sleep\", \"3600\"]\n",
	}
	for name, body := range pods {
		n.WriteManifest(name+".yaml", manifest(name, fmt.Sprintf(body, n.busybox())))
	}

	t.Run("Always restarts with backoff and shows CrashLoopBackOff", func(t *testing.T) {
		sawBackoff := false
		n.Eventually("crash restarts three times", 90*time.Second, func() error {
			p, err := n.Pod("crash")
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return fmt.Errorf("no status yet: %v", err)
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackoff = true
			}
			if cs.RestartCount < 3 || !sawBackoff {
				return fmt.Errorf("restartCount %d, saw CrashLoopBackOff %v", cs.RestartCount, sawBackoff)
			}
			if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
				return fmt.Errorf("last termination %+v", cs.LastTerminationState)
			}
			return nil
		})
	})
	t.Run("Never fails the pod", func(t *testing.T) {
		n.Eventually("never fails", 60*time.Second, func() error {
			return phaseAndReason(n, "never", v1.PodFailed, "Error", 0)
		})
	})
	t.Run("OnFailure succeeds after exit 0", func(t *testing.T) {
		n.Eventually("onfailure-ok succeeds", 60*time.Second, func() error {
			return phaseAndReason(n, "onfailure-ok", v1.PodSucceeded, "Completed", 0)
		})
	})
	t.Run("OnFailure restarts after a failure", func(t *testing.T) {
		n.Eventually("onfailure-fail restarts", 60*time.Second, func() error {
			p, err := n.Pod("onfailure-fail")
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return fmt.Errorf("no status yet: %v", err)
			}
			if rc := p.Status.ContainerStatuses[0].RestartCount; rc < 1 {
				return fmt.Errorf("restartCount %d", rc)
			}
			return nil
		})
	})
	t.Run("init containers run in order before the app", func(t *testing.T) {
		p := n.Running("init", 60*time.Second)
		if len(p.Status.InitContainerStatuses) != 2 {
			t.Fatalf("init statuses: %+v", p.Status.InitContainerStatuses)
		}
		first, second := p.Status.InitContainerStatuses[0].State.Terminated, p.Status.InitContainerStatuses[1].State.Terminated
		if first == nil || second == nil || first.Reason != "Completed" || second.Reason != "Completed" {
			t.Fatalf("init containers did not complete: %+v", p.Status.InitContainerStatuses)
		}
		if second.StartedAt.Before(&first.FinishedAt) {
			t.Errorf("second init container started %v, before the first finished %v", second.StartedAt, first.FinishedAt)
		}
		if app := p.Status.ContainerStatuses[0].State.Running; app == nil || app.StartedAt.Before(&second.FinishedAt) {
			t.Errorf("app started before the init containers finished: %+v", p.Status.ContainerStatuses[0].State)
		}
	})
	t.Run("a failing init container blocks the app", func(t *testing.T) {
		n.Eventually("init-fails fails", 60*time.Second, func() error {
			p, err := n.Pod("init-fails")
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodFailed {
				return fmt.Errorf("phase %q", p.Status.Phase)
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil || cs.State.Terminated != nil || cs.ContainerID != "" {
					return fmt.Errorf("app container ran: %+v", cs)
				}
			}
			return nil
		})
	})
}

func phaseAndReason(n *node, name string, phase v1.PodPhase, reason string, restarts int32) error {
	p, err := n.Pod(name)
	if err != nil {
		return err
	}
	if p.Status.Phase != phase || len(p.Status.ContainerStatuses) == 0 {
		return fmt.Errorf("phase %q, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Terminated == nil || cs.State.Terminated.Reason != reason || cs.RestartCount != restarts {
		return fmt.Errorf("container state %+v restarts %d", cs.State, cs.RestartCount)
	}
	return nil
}

func TestRemovingTheManifestStopsThePod(t *testing.T) {
	n := newNode(t)
	n.Start()
	// polite exits on SIGTERM; stubborn ignores it and must be killed at
	// the deadline of its 3 s grace period.
	n.WriteManifest("polite.yaml", manifest("polite", fmt.Sprintf(`  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
`, n.busybox())))
	n.WriteManifest("stubborn.yaml", manifest("stubborn", fmt.Sprintf(`  terminationGracePeriodSeconds: 3
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap '' TERM; while true; do sleep 0.2; done"]
`, n.busybox())))
	polite := n.Running("polite", 60*time.Second)
	stubborn := n.Running("stubborn", 60*time.Second)

	for _, tc := range []struct {
		file    string
		pod     *v1.Pod
		atLeast time.Duration
		within  time.Duration
	}{
		// The polite pod goes at once, far inside its 30 s grace period.
		{"polite.yaml", polite, 0, 3 * (2 * time.Second)},
		// The stubborn one goes at its 3 s deadline (+2 s), not before.
		{"stubborn.yaml", stubborn, 3 * time.Second, 3 * (3*time.Second + 2*time.Second)},
	} {
		removed := time.Now()
		n.RemoveManifest(tc.file)
		n.Eventually(tc.file+" gone from the runtime", tc.within, func() error {
			if sb, c := n.RuntimeObjects(string(tc.pod.UID)); sb+c > 0 {
				return fmt.Errorf("%d sandboxes and %d containers left", sb, c)
			}
			return nil
		})
		took := time.Since(removed)
		if took < tc.atLeast {
			t.Errorf("%s: gone after %v, before its grace period %v: SIGTERM was not ignored?", tc.file, took, tc.atLeast)
		}
		t.Logf("%s: pod gone %v after its manifest was removed", tc.file, took.Round(10*time.Millisecond))
	}
}

func TestEditingTheImageRestartsOnlyThatContainer(t *testing.T) {
	n := newNode(t)
	n.Start()
	// A manifest with its own UID keeps it across edits, so the edit is an
	// update of the same pod (a manifest without one gets a new UID from
	// its content, and an edit replaces the whole pod, as upstream).
	body := `metadata:
  name: edit
  uid: 6c1f8a52-0c41-4d6e-9d0b-edit00000001
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: keep
    image: %s
    command: ["sleep", "3600"]
  - name: change
    image: %s
    command: ["sleep", "3600"]
`
	n.WriteManifest("edit.yaml", "apiVersion: v1\nkind: Pod\n"+fmt.Sprintf(body, n.busybox(), n.busybox()))
	before := containerIDs(n.Running("edit", 60*time.Second))
	// The short name of the same image: a different image field, which the
	// runtime resolves without a second image to build.
	short := strings.TrimPrefix(n.busybox(), "docker.io/library/")
	n.WriteManifest("edit.yaml", "apiVersion: v1\nkind: Pod\n"+fmt.Sprintf(body, n.busybox(), short))
	n.Eventually("the changed container restarts", 60*time.Second, func() error {
		p, err := n.Pod("edit")
		if err != nil {
			return err
		}
		after := containerIDs(p)
		if after["change"] == before["change"] || after["change"] == "" {
			return fmt.Errorf("container change not restarted yet: %v", after)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return fmt.Errorf("%s not running", cs.Name)
			}
			if cs.Name == "change" && cs.Image != short && !strings.HasSuffix(cs.Image, short) {
				return fmt.Errorf("container change runs image %q, want %q", cs.Image, short)
			}
		}
		if after["keep"] != before["keep"] {
			t.Fatalf("container keep was restarted too: %s → %s", before["keep"], after["keep"])
		}
		return nil
	})
}

func TestRestartAdoptsAndCleansUp(t *testing.T) {
	// Held across the restart: another test binary's actorlet would
	// meanwhile take this one's pods for orphans.
	env.HoldRuntime(t)
	n := newNode(t)
	n.Start()
	for _, name := range []string{"stays", "goes"} {
		n.WriteManifest(name+".yaml", manifest(name, agent.SleepSpec("c", n.busybox(), 2)))
	}
	stays := n.Running("stays", 60*time.Second)
	goes := n.Running("goes", 60*time.Second)
	n.Stop(syscall.SIGKILL)
	n.RemoveManifest("goes.yaml")
	n.Start()
	n.Eventually("the pod that stays is adopted", 60*time.Second, func() error {
		p, err := n.Pod("stays")
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		if got, want := containerIDs(p), containerIDs(stays); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("containers recreated after restart: %v, were %v", got, want)
		}
		return nil
	})
	n.Eventually("the pod whose manifest went while actorlet was down is cleaned up", 60*time.Second, func() error {
		if sb, c := n.RuntimeObjects(string(goes.UID)); sb+c > 0 {
			return fmt.Errorf("%d sandboxes and %d containers left", sb, c)
		}
		return nil
	})
}

func TestBadManifestsAffectNoOtherPod(t *testing.T) {
	n := newNode(t)
	n.Start()
	n.WriteManifest("good.yaml", manifest("good", fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
	good := n.Running("good", 60*time.Second)
	n.WriteManifest("syntax.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [this is: not valid\n")
	n.WriteManifest("invalid.yaml", manifest("invalid", "  containers:\n  - name: c\n"))
	n.Eventually("both bad manifests are logged with their file names", 30*time.Second, func() error {
		logs := n.Logs()
		for _, f := range []string{"syntax.yaml", "invalid.yaml"} {
			if !strings.Contains(logs, f) {
				return fmt.Errorf("no log line names %s", f)
			}
		}
		if !strings.Contains(logs, "image") {
			return fmt.Errorf("the invalid spec's reason (missing image) is not logged")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // a rescan or two
	p := n.Running("good", 10*time.Second)
	if fmt.Sprint(containerIDs(p)) != fmt.Sprint(containerIDs(good)) {
		t.Errorf("the good pod was disturbed: %v → %v", containerIDs(good), containerIDs(p))
	}
}

func TestPanickingWorkerRestartsAlone(t *testing.T) {
	n := newNode(t)
	n.Start()
	for _, name := range []string{"victim", "bystander"} {
		n.WriteManifest(name+".yaml", manifest(name, fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
	}
	victim := n.Running("victim", 60*time.Second)
	bystander := n.Running("bystander", 60*time.Second)
	worker := workerPath(victim)
	n.InjectPanic(worker, "")
	n.Eventually("the worker restarted", 30*time.Second, func() error {
		if !strings.Contains(n.Logs(), "injected fault") {
			return fmt.Errorf("no restart logged yet")
		}
		return nil
	})
	// The dashboard's data shows the restart on the victim's worker alone.
	n.Eventually("the registry shows the restart", 30*time.Second, func() error {
		actors, err := n.actors()
		if err != nil {
			return err
		}
		restarts := map[string]int{}
		for _, a := range actors {
			if a.Kind == "pod-worker" {
				if a.State != "syncing" {
					return fmt.Errorf("worker %s in state %q", a.Path, a.State)
				}
				restarts[a.Path] = a.Restarts
			}
		}
		if restarts[worker] != 1 || restarts[workerPath(bystander)] != 0 {
			return fmt.Errorf("worker restarts %v", restarts)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // let the restarted worker sync
	for _, before := range []*v1.Pod{victim, bystander} {
		name := strings.TrimSuffix(before.Name, "-"+n.Name)
		after := n.Running(name, 30*time.Second)
		if fmt.Sprint(containerIDs(after)) != fmt.Sprint(containerIDs(before)) {
			t.Errorf("%s: containers recreated: %v → %v", name, containerIDs(before), containerIDs(after))
		}
	}
}

// TestPodManagerRestartResumesPods injects a panic into the pod-manager: it
// restarts with its workers, asks the config-source for the pods again, and
// its new workers adopt the running containers.
func TestPodManagerRestartResumesPods(t *testing.T) {
	n := newNode(t)
	n.Start()
	n.WriteManifest("keep.yaml", manifest("keep", fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
	before := n.Running("keep", 60*time.Second)
	n.InjectPanic("bootstrap/pod-manager", "")
	n.Eventually("the pod-manager restarted", 30*time.Second, func() error {
		if !strings.Contains(n.Logs(), "injected fault") {
			return fmt.Errorf("no restart logged yet")
		}
		return nil
	})
	after := n.Running("keep", 60*time.Second)
	if fmt.Sprint(containerIDs(after)) != fmt.Sprint(containerIDs(before)) {
		t.Errorf("containers recreated: %v → %v", containerIDs(before), containerIDs(after))
	}
}

// TestRejectedStaticPodStaysRejected: a static pod refused at admission
// (more CPU than the node has) is Failed with upstream's reason, and is
// refused again after a restart: nothing of it is ever created. A static
// pod is critical, so its refusal is upstream's failed preemption
// (UnexpectedAdmissionError), not OutOfcpu.
func TestRejectedStaticPodStaysRejected(t *testing.T) {
	// Held across the restart: another test binary's actorlet would
	// meanwhile take this one's pods for orphans.
	env.HoldRuntime(t)
	n := newNode(t)
	n.WriteManifest("greedy.yaml", manifest("greedy", fmt.Sprintf(
		"  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n    resources:\n      requests:\n        cpu: \"1000\"\n", n.busybox())))
	n.WriteManifest("modest.yaml", manifest("modest", fmt.Sprintf(
		"  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
	rejected := func() *v1.Pod {
		t.Helper()
		var pod *v1.Pod
		n.Eventually("greedy rejected: Failed, UnexpectedAdmissionError", 30*time.Second, func() error {
			p, err := n.Pod("greedy")
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != "UnexpectedAdmissionError" || !strings.Contains(p.Status.Message, "(res: cpu") {
				return fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
			}
			pod = p
			return nil
		})
		return pod
	}
	n.Start()
	before := rejected()
	n.Running("modest", 60*time.Second)
	n.Stop(syscall.SIGTERM)
	n.Start()
	after := rejected()
	if after.UID != before.UID || after.Status.Message != before.Status.Message {
		t.Errorf("after the restart: %s %q, before: %s %q", after.UID, after.Status.Message, before.UID, before.Status.Message)
	}
	n.Running("modest", 30*time.Second)
	agent.Consistently(t, "nothing of greedy in the runtime", 5*time.Second, time.Second, func() error {
		if sb, c := n.RuntimeObjects(string(before.UID)); sb+c != 0 {
			return fmt.Errorf("greedy has %d sandboxes and %d containers, want none", sb, c)
		}
		return nil
	})
}

// TestPanicInSyncWorkStaysInThePod injects a panic into a pod-worker's sync
// work, which runs off its mailbox: the process survives, the worker alone
// restarts and adopts its pod (same sandbox and containers, no container
// restart), and the other pod is untouched.
func TestPanicInSyncWorkStaysInThePod(t *testing.T) {
	n := newNode(t)
	n.Start()
	for _, name := range []string{"victim", "bystander"} {
		n.WriteManifest(name+".yaml", manifest(name, fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", n.busybox())))
	}
	victim := n.Running("victim", 60*time.Second)
	bystander := n.Running("bystander", 60*time.Second)
	n.InjectPanic(workerPath(victim), "sync-work")
	n.Eventually("the panic in the sync work is logged with its stack", 30*time.Second, func() error {
		logs := n.Logs()
		if !strings.Contains(logs, "work started off the mailbox panicked") || !strings.Contains(logs, "injected fault in sync work") {
			return fmt.Errorf("not logged yet")
		}
		if !strings.Contains(logs, "goroutine ") {
			return fmt.Errorf("logged without a stack")
		}
		return nil
	})
	n.Eventually("the victim's worker alone restarted, for the panic in its sync work", 30*time.Second, func() error {
		actors, err := n.actors()
		if err != nil {
			return err
		}
		var restarted []string
		for _, a := range actors {
			if a.Restarts > 0 {
				restarted = append(restarted, a.Path)
			}
			if a.Kind == "pod-worker" && a.State != "syncing" {
				return fmt.Errorf("worker %s in state %q", a.Path, a.State)
			}
			if a.Path == workerPath(victim) && a.Restarts == 1 && !strings.Contains(a.LastFailure, "injected fault in sync work") {
				return fmt.Errorf("the victim's worker failed with %q, not the injected panic", a.LastFailure)
			}
		}
		if fmt.Sprint(restarted) != fmt.Sprint([]string{workerPath(victim)}) {
			return fmt.Errorf("restarted actors %v, want only %s", restarted, workerPath(victim))
		}
		return nil
	})
	time.Sleep(3 * time.Second) // let the restarted worker sync
	if !n.Proc.Alive() {
		t.Fatal("actorlet died")
	}
	for _, before := range []*v1.Pod{victim, bystander} {
		name := strings.TrimSuffix(before.Name, "-"+n.Name)
		after := n.Running(name, 30*time.Second)
		if fmt.Sprint(containerIDs(after)) != fmt.Sprint(containerIDs(before)) {
			t.Errorf("%s: containers recreated: %v → %v", name, containerIDs(before), containerIDs(after))
		}
		for _, cs := range after.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("%s: container %s restarted %d times", name, cs.Name, cs.RestartCount)
			}
		}
		if sandboxes, containers := n.RuntimeObjects(string(before.UID)); sandboxes != 1 || containers != 1 {
			t.Errorf("%s: %d sandboxes and %d containers in the runtime, want 1 and 1", name, sandboxes, containers)
		}
	}
}
