package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/actorlet/actorlet/test/agent"
)

// TestEphemeralContainers adds ephemeral containers (kubectl debug) to
// running pods through the pods/ephemeralcontainers subresource, as
// kubectl does, and reaches them as kubectl does: exec, logs and attach
// through the API server, which streams from the node's kubelet API.
func TestEphemeralContainers(t *testing.T) {
	n := newLifeNode(t, "ephemeral")

	// As the conformance spec "will start an ephemeral container in an
	// existing pod": running, exec and logs; and the status as upstream's.
	t.Run("debugger in an existing pod", func(t *testing.T) {
		t.Parallel()
		pod := n.Run(t, n.NewPod("debugged", nil, n.Sleeper("app")))
		if pod.Generation != 1 {
			t.Errorf("generation %d before, want 1", pod.Generation)
		}
		ec := n.ephemeral("debugger", "while true; do echo polo; sleep 1; done")
		ec.Stdin, ec.TTY = true, true
		n.addEphemeral(t, "debugged", ec)
		cs := n.ephemeralRunning(t, "debugged", "debugger")
		pod, err := n.Get("debugged")
		if err != nil {
			t.Fatal(err)
		}
		if pod.Generation != 2 {
			t.Errorf("generation %d after, want 2", pod.Generation)
		}
		// Upstream's probe manager sets ready and started of regular and
		// init containers only.
		if cs.Ready || cs.Started != nil || cs.RestartCount != 0 || cs.Image != n.Env.BusyboxImage || cs.ImageID == "" ||
			!strings.HasPrefix(cs.ContainerID, "containerd://") {
			t.Errorf("ephemeral status: %+v", cs)
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "debugger" {
				t.Errorf("debugger among the containers' statuses")
			}
		}
		agent.Eventually(t, "observedGeneration 2", 30*time.Second, func() error {
			p, err := n.Get("debugged")
			if err != nil {
				return err
			}
			if p.Status.ObservedGeneration != 2 {
				return fmt.Errorf("observedGeneration %d", p.Status.ObservedGeneration)
			}
			return nil
		})
		n.Expect(t, "debugged", "debugger", "echo marco", "marco")
		agent.Eventually(t, "polo in the debugger's log", 30*time.Second, func() error {
			out, err := n.logs("debugged", "debugger")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "polo") {
				return fmt.Errorf("log %q", out)
			}
			return nil
		})
		// Without a target, the debugger has a process namespace of its
		// own: app's sleep is not in it.
		if ps := n.Sh(t, "debugged", "debugger", "ps -o pid,args"); strings.Contains(ps, "sleep 3600") {
			t.Errorf("debugger sees app's processes:\n%s", ps)
		}
		agent.Eventually(t, "a Started event of spec.ephemeralContainers{debugger}", 30*time.Second, func() error {
			var paths []string
			for _, e := range n.events(t, "debugged", "Started") {
				if e.InvolvedObject.FieldPath == "spec.ephemeralContainers{debugger}" {
					return nil
				}
				paths = append(paths, e.InvolvedObject.FieldPath)
			}
			return fmt.Errorf("Started events of %q", paths)
		})
	})

	// kubectl debug --target: the debugger shares the target container's
	// process namespace (CRI NamespaceMode TARGET).
	t.Run("target container's processes", func(t *testing.T) {
		t.Parallel()
		n.Run(t, n.NewPod("targeted", nil, n.Sleeper("app"), n.Busybox("other", "exec sleep 3599")))
		ec := v1.EphemeralContainer{EphemeralContainerCommon: n.ephemeral("debugger", "exec sleep 3601"), TargetContainerName: "app"}
		n.addEphemeralTarget(t, "targeted", ec)
		n.ephemeralRunning(t, "targeted", "debugger")
		ps := n.Sh(t, "targeted", "debugger", "ps -o pid,args")
		for _, want := range []string{"sleep 3600", "sleep 3601"} {
			if !strings.Contains(ps, want) {
				t.Errorf("ps in the debugger does not show %q:\n%s", want, ps)
			}
		}
		if strings.Contains(ps, "sleep 3599") {
			t.Errorf("ps in the debugger shows another container's process:\n%s", ps)
		}
		// The debugger is killed with the pod.
		pod, err := n.Get("targeted")
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), "targeted", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		agent.Eventually(t, "no container of targeted running", 30*time.Second, func() error {
			resp, err := n.RT.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
				LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)}}})
			if err != nil {
				return err
			}
			if len(resp.Containers) != 0 {
				var names []string
				for _, c := range resp.Containers {
					names = append(names, c.Metadata.Name)
				}
				return fmt.Errorf("running: %q", names)
			}
			return nil
		})
	})

	// kubectl debug -i: attach to the debugger's stdin, then the debugger
	// exits and is never restarted, whatever the pod's restart policy.
	t.Run("attach, exit, never restarted", func(t *testing.T) {
		t.Parallel()
		n.Run(t, n.NewPod("attached", nil, n.Sleeper("app")))
		ec := n.ephemeral("shell", "")
		ec.Command = []string{"sh"}
		ec.Stdin = true
		n.addEphemeral(t, "attached", ec)
		n.ephemeralRunning(t, "attached", "shell")
		out := n.attach(t, "attached", "shell", "echo attached-$((6*7)); exit 3\n")
		if !strings.Contains(out, "attached-42") {
			t.Errorf("attach output %q", out)
		}
		var id string
		agent.Eventually(t, "shell terminated", 30*time.Second, func() error {
			cs, err := n.ephemeralState("attached", "shell")
			if err != nil {
				return err
			}
			if cs.State.Terminated == nil {
				return fmt.Errorf("shell: %+v", cs.State)
			}
			if cs.State.Terminated.ExitCode != 3 {
				t.Errorf("exit code %d, want 3", cs.State.Terminated.ExitCode)
			}
			id = cs.ContainerID
			return nil
		})
		// Long enough for a restart to show: the pod syncs on the exit.
		time.Sleep(5 * time.Second)
		cs, err := n.ephemeralState("attached", "shell")
		if err != nil {
			t.Fatal(err)
		}
		if cs.State.Terminated == nil || cs.ContainerID != id || cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
			t.Errorf("shell after its exit: %+v", cs)
		}
		n.Running(t, "attached", 5*time.Second)
		if evs := n.events(t, "attached", "BackOff"); len(evs) != 0 {
			t.Errorf("back-off events: %+v", evs)
		}
	})
}

// ephemeral is an ephemeral busybox container running script (sh -c), with
// the fields kubectl debug sets.
func (n *lifeNode) ephemeral(name, script string) v1.EphemeralContainerCommon {
	return v1.EphemeralContainerCommon{Name: name, Image: n.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}, TerminationMessagePolicy: v1.TerminationMessageReadFile}
}

func (n *lifeNode) addEphemeral(t *testing.T, pod string, ec v1.EphemeralContainerCommon) {
	t.Helper()
	n.addEphemeralTarget(t, pod, v1.EphemeralContainer{EphemeralContainerCommon: ec})
}

// addEphemeralTarget adds ec to the pod through pods/ephemeralcontainers,
// as kubectl debug does.
func (n *lifeNode) addEphemeralTarget(t *testing.T, pod string, ec v1.EphemeralContainer) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := n.Get(pod)
		if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		_, err = n.Admin.CoreV1().Pods(n.NS).UpdateEphemeralContainers(context.Background(), pod, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("add ephemeral container %s to %s: %v", ec.Name, pod, err)
	}
}

// ephemeralState is the API's status of the pod's ephemeral container.
func (n *lifeNode) ephemeralState(pod, name string) (*v1.ContainerStatus, error) {
	p, err := n.Get(pod)
	if err != nil {
		return nil, err
	}
	for i := range p.Status.EphemeralContainerStatuses {
		if cs := &p.Status.EphemeralContainerStatuses[i]; cs.Name == name {
			return cs, nil
		}
	}
	return nil, fmt.Errorf("pod %s: no status of ephemeral container %s in %+v", pod, name, p.Status.EphemeralContainerStatuses)
}

// ephemeralRunning waits until the API shows the ephemeral container
// running, and returns its status then.
func (n *lifeNode) ephemeralRunning(t *testing.T, pod, name string) *v1.ContainerStatus {
	t.Helper()
	var cs *v1.ContainerStatus
	agent.Eventually(t, "ephemeral container "+name+" of "+pod+" running", 60*time.Second, func() error {
		s, err := n.ephemeralState(pod, name)
		if err != nil {
			return err
		}
		if s.State.Running == nil {
			return fmt.Errorf("%s: %+v", name, s.State)
		}
		cs = s
		return nil
	})
	return cs
}

// logs reads the container's log through the API server's pods/log.
func (n *lifeNode) logs(pod, container string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := n.Admin.CoreV1().Pods(n.NS).GetLogs(pod, &v1.PodLogOptions{Container: container}).DoRaw(ctx)
	return string(raw), err
}

// events are the pod's events with reason.
func (n *lifeNode) events(t *testing.T, pod, reason string) []v1.Event {
	t.Helper()
	evs, err := n.Events(pod)
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range evs {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// attach attaches to the container through the API server's pods/attach,
// as kubectl attach -i (kubectl debug -i) does, writes stdin and returns
// what the container wrote on stdout until it closed the stream.
func (n *lifeNode) attach(t *testing.T, pod, container, stdin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := n.Admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(n.NS).Name(pod).SubResource("attach").
		VersionedParams(&v1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(n.Cfg, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := remotecommand.NewSPDYExecutor(n.Cfg, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	// stdin stays open until the container ends the stream: closing it
	// first could end the attach before the shell read the line.
	r, w := io.Pipe()
	defer w.Close()
	go func() { _, _ = io.WriteString(w, stdin) }()
	var stdout, stderr bytes.Buffer
	err = exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: r, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Logf("attach: %v (stderr %q)", err, stderr.String())
	}
	return stdout.String()
}
