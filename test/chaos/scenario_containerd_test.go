package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestContainerdRestart is scenario 2: containerd killed (SIGKILL) and
// restarted while API pods are created and deleted and static pods run.
// The node must report the runtime down while it is, and only then; every
// pod must converge with no duplicate sandbox or container; the static
// pods' containers, which their shims kept running, must not restart.
func TestContainerdRestart(t *testing.T) {
	s := Begin(t, "containerd-restart", "containerd killed and restarted mid-churn")
	outages := Pick(1, 3)
	perOutage := Pick(10, 20)
	// Upstream reports the runtime down once it has not answered for 30 s
	// (maxWaitForContainerRuntime), at its next status update: the full
	// suite's outages are long enough for it to show.
	down := Pick(25*time.Second, 45*time.Second)
	// statusPeriod is nodeStatusUpdateFrequency (the default): the node
	// reports a change of its readiness at its next status update.
	const statusPeriod = 10 * time.Second
	// lag is the node watch's polling and the API's latency.
	const lag = 2 * time.Second

	n := NewNode(t)
	statics := []string{"static-a", "static-b"}
	for _, name := range statics {
		n.WriteManifest(name+".yaml", agent.Manifest(name, fmt.Sprintf(
			"  terminationGracePeriodSeconds: 1\n  containers:\n  - name: c\n    image: %s\n    command: [sh, -c, exec sleep 3600]\n",
			n.Env.BusyboxImage)))
	}
	// containerd comes back whatever happens: every other test needs it.
	// Registered after the node, this runs before the node's cleanup,
	// which removes the pods through it.
	t.Cleanup(func() {
		if _, err := n.Env.ContainerdPid(); err != nil {
			t.Logf("cleanup: containerd is down (%v): starting it", err)
			n.Env.StartContainerd(t)
		}
	})
	n.Up(t, "chaos-containerd")
	before := map[string]v1.ContainerStatus{}
	for _, name := range statics {
		p := mirrorRunning(t, n, name)
		before[name] = p.Status.ContainerStatuses[0]
	}

	rw := WatchRuntime(n.RT, OwnedBy(n.Owns), 500*time.Millisecond)
	defer rw.Stop()
	nw := WatchNode(n.Admin, n.Name, 500*time.Millisecond)
	defer nw.Stop()

	type outage struct{ kill, restart time.Time }
	var windows []outage
	var alive, deleted []string
	var detectMax, recoverMax, convergeMax time.Duration
	reported, short := 0, 0
	for i := range outages {
		created := PodNames(fmt.Sprintf("a%d", i), perOutage/2)
		if err := CreateSleepers(n, created); err != nil {
			t.Fatal(err)
		}
		alive = append(alive, created...)
		if took, err := WaitFor(90*time.Second, func() error { _, err := NotRunning(n, alive); return err }); err != nil {
			t.Fatalf("outage %d: pods not running before the kill after %v: %v", i+1, took.Round(time.Second), err)
		}

		kill := time.Now()
		n.Env.KillContainerd(t)
		// The churn goes on while containerd is down: new pods, and half
		// of those running deleted.
		more := PodNames(fmt.Sprintf("b%d", i), perOutage-perOutage/2)
		if err := CreateSleepers(n, more); err != nil {
			t.Fatal(err)
		}
		var del, keep []string
		for j, name := range alive {
			if j%2 == 0 {
				del = append(del, name)
			} else {
				keep = append(keep, name)
			}
		}
		if err := DeletePods(n, del); err != nil {
			t.Fatal(err)
		}
		alive, deleted = append(keep, more...), append(deleted, del...)

		// Until the outage's end: the node's NotReady, and whether
		// another test binary's environment check started containerd
		// (hack/node-env up, from a checkout that does not know the
		// hold): the outage ends then.
		var c ConditionChange
		ok := false
		for time.Now().Before(kill.Add(down)) {
			if !ok {
				c, ok = readyChange(nw, kill, v1.ConditionFalse, 0)
			}
			if pid, err := n.Env.ContainerdPid(); err == nil {
				s.Note("outage %d: containerd (pid %d) started by someone else %.1f s after the kill", i+1, pid, time.Since(kill).Seconds())
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		lasted := time.Since(kill)
		switch {
		case ok:
			reported++
			detectMax = max(detectMax, c.At.Sub(kill))
			s.Note("outage %d: node NotReady %.1f s after the kill: %s", i+1, c.At.Sub(kill).Seconds(), c.Message)
		case lasted < statusPeriod+2*lag:
			// Too short to be reported; not held against the agent.
			short++
		default:
			s.Note("outage %d: node not reported NotReady within the %v outage", i+1, lasted.Round(100*time.Millisecond))
		}
		restart := time.Now()
		n.Env.StartContainerd(t)
		windows = append(windows, outage{kill, restart})
		s.Note("outage %d: containerd down %.1f s, back (CRI answering) in %.1f s", i+1, restart.Sub(kill).Seconds(), time.Since(restart).Seconds())

		// The pods converge, timed from the restart, while the node
		// comes back to Ready (if it reported the outage at all; it may
		// also report it late, once containerd is back).
		_, err := WaitFor(120*time.Second, func() error {
			if _, err := NotRunning(n, alive); err != nil {
				return err
			}
			if left, err := StillPresent(n, deleted); err != nil || len(left) > 0 {
				return fmt.Errorf("deleted pods still in the API: %v (%v)", left, err)
			}
			return nil
		})
		took := time.Since(restart)
		convergeMax = max(convergeMax, took)
		if err != nil {
			s.Note("outage %d: pods not converged %v after the restart: %v", i+1, took.Round(time.Second), err)
		}
		if st := nw.Stats(); !st.ReadyNow || ok {
			if c, ok := readyChange(nw, restart, v1.ConditionTrue, 60*time.Second); ok {
				recoverMax = max(recoverMax, c.At.Sub(restart))
			} else if !nw.Stats().ReadyNow {
				recoverMax = max(recoverMax, time.Since(restart))
				s.Note("outage %d: node not Ready again %v after the restart", i+1, time.Since(restart).Round(time.Second))
			}
		}
	}

	s.Figure("outages cut short by another test binary", float64(short), "")
	s.Check("runtime down reported in every outage", reported == outages-short, fmt.Sprintf("%d of %d outages", reported, outages-short))
	if reported > 0 {
		s.AtMost("kill → node NotReady (max)", detectMax.Seconds(), (statusPeriod + 2*lag).Seconds(), "s")
	}
	s.AtMost("containerd restart → node Ready (max)", recoverMax.Seconds(), (statusPeriod + 2*lag).Seconds(), "s")
	s.AtMost("containerd restart → every pod converged (max)", convergeMax.Seconds(), 60, "s")

	// Ready may turn False only while containerd is down (its report
	// observed up to lag later), and not back to True before it is up.
	outside, flaps := 0, 0
	var seen []string
	for _, c := range nw.Stats().Changes {
		if c.Type != v1.NodeReady {
			continue
		}
		seen = append(seen, c.String())
		in := slices.IndexFunc(windows, func(w outage) bool { return !c.At.Before(w.kill) && c.At.Before(w.restart.Add(lag)) })
		switch {
		case c.Status != v1.ConditionTrue && in < 0:
			outside++
		case c.Status == v1.ConditionTrue && in >= 0 && c.At.Before(windows[in].restart):
			flaps++
		}
	}
	if len(seen) > 0 {
		s.Note("Ready changes: %s", strings.Join(seen, "; "))
	}
	s.AtMost("NotReady reports outside the outages", float64(outside), 0, "")
	s.AtMost("Ready reports while containerd was down", float64(flaps), 0, "")

	rs := rw.Stop()
	s.Figure("runtime samples failed (containerd down)", float64(rs.Failed), "")
	s.AtMost("ready sandboxes per pod at once (max)", float64(rs.MaxSandboxesPerPod), 1, "")
	s.AtMost("running instances per container at once (max)", float64(rs.MaxInstancesPerContainer), 1, "")
	for _, d := range rs.Duplicates {
		s.Note("duplicate: %s", d)
	}
	if restarts, err := RestartCounts(n.Admin, n.NS); err == nil {
		s.AtMost("container restarts of the API pods", float64(restarts), 0, "")
	}

	// The static pods: running, once, with the containers they had.
	restarted, notOnce := 0, 0
	for _, name := range statics {
		p := mirrorRunning(t, n, name)
		cs, was := p.Status.ContainerStatuses[0], before[name]
		if cs.ContainerID != was.ContainerID || cs.RestartCount != was.RestartCount {
			restarted++
			s.Note("static pod %s: container %s (restarts %d), was %s (restarts %d)", name, cs.ContainerID, cs.RestartCount, was.ContainerID, was.RestartCount)
		}
		if k := readySandboxes(t, n.RT, p.Name); k != 1 {
			notOnce++
			s.Note("static pod %s: %d ready sandboxes", name, k)
		}
	}
	s.AtMost("static pod containers restarted", float64(restarted), 0, "")
	s.AtMost("static pods not running exactly once", float64(notOnce), 0, "")

	// Nothing of the API pods left once they are deleted.
	if err := DeletePods(n, alive); err != nil {
		t.Fatal(err)
	}
	all := append(append([]string(nil), alive...), deleted...)
	if _, err := WaitFor(60*time.Second, func() error {
		if left, err := StillPresent(n, all); err != nil || len(left) > 0 {
			return fmt.Errorf("still in the API: %v (%v)", left, err)
		}
		return nil
	}); err != nil {
		s.Note("%v", err)
	}
	ns := n.NS
	var sbs, cs int
	// Within a minute: the upstream kubelet's container GC, every
	// minute, removes the sandboxes of deleted pods that its pod workers
	// left.
	_, err := WaitFor(75*time.Second, func() error {
		var err error
		sbs, cs, err = Leftovers(t, n.RT, func(l map[string]string) bool { return l["io.kubernetes.pod.namespace"] == ns })
		if err == nil && sbs+cs > 0 {
			err = fmt.Errorf("%d sandboxes, %d containers left", sbs, cs)
		}
		return err
	})
	if err != nil {
		s.Note("leftovers: %v", err)
	}
	s.AtMost("sandboxes and containers left after the deletes", float64(sbs+cs), 0, "")
}

// readyChange waits up to within for the node watch to see Ready turn to
// status after since, and returns that change.
func readyChange(nw *NodeWatch, since time.Time, status v1.ConditionStatus, within time.Duration) (ConditionChange, bool) {
	deadline := time.Now().Add(within)
	for {
		for _, c := range nw.Stats().Changes {
			if c.Type == v1.NodeReady && c.Status == status && !c.At.Before(since) {
				return c, true
			}
		}
		if time.Now().After(deadline) {
			return ConditionChange{}, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mirrorRunning waits until the mirror pod of the node's static pod name
// shows it running with its containers, and returns it. (The read-only
// port, where the node's own view is, listens on the pod network.)
func mirrorRunning(t testing.TB, n *agent.APIPods, name string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, "static pod "+name+" running", 60*time.Second, func() error {
		p, err := n.Admin.CoreV1().Pods("default").Get(context.Background(), name+"-"+n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := agent.PodRunning(p); err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return fmt.Errorf("%d container statuses", len(p.Status.ContainerStatuses))
		}
		pod = p
		return nil
	})
	return pod
}

// readySandboxes counts the runtime's ready sandboxes of the pod named
// name (any namespace).
func readySandboxes(t testing.TB, rt runtimeapi.RuntimeServiceClient, name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{"io.kubernetes.pod.name": name}}})
	if err != nil {
		t.Logf("list sandboxes of %s: %v", name, err)
		return -1
	}
	return len(r.Items)
}
