package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/faults/apiproxy"
)

// apiserverPeriod is the node-status period the scenario configures:
// nodeStatusUpdateFrequency (upstream's default) and
// nodeStatusReportFrequency (upstream's is 5 min: only a changed status is
// written sooner), so that heartbeats are due every period; the lease is
// renewed every nodeLeaseDurationSeconds/4 = 10 s.
const apiserverPeriod = 10 * time.Second

// TestAPIServerFaults is scenario apiserver-faults: the node's API server
// unreachable, then answering 429 to everything, then 503, then slowly.
// Meanwhile pods change: one is created, one deleted and one's container
// exits. After recovery the API must show what the runtime has, the lease
// and the node's heartbeats must be fresh within one node-status period
// (with 3x slack), and no container may have restarted or run twice.
func TestAPIServerFaults(t *testing.T) {
	s := Begin(t, "apiserver-faults", "API server unreachable, 429 and 503 storms, slow answers: no restarts, statuses and lease caught up")
	unreachable := Pick(15*time.Second, 60*time.Second)
	storm := Pick(10*time.Second, 60*time.Second)
	slow := Pick(10*time.Second, 60*time.Second)
	delay, jitter := 2*time.Second, Pick(time.Duration(0), 3*time.Second)

	n := NewNode(t, agent.WithConfig(fmt.Sprintf("nodeStatusUpdateFrequency: %s\nnodeStatusReportFrequency: %s\n", apiserverPeriod, apiserverPeriod)))
	p, err := apiproxy.New(n.Kubeconfig, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	n.Kubeconfig = p.Kubeconfig
	n.Up(t, "chaos-apiserver")

	// The pods: sleepers that must run on untouched, one the scenario
	// deletes, one whose container exits on a file the test makes (a
	// hostPath: the kubelet API's exec needs the API server for its
	// authorization), and a static pod.
	keep := PodNames("keep", 3)
	if err := CreateSleepers(n, append(append([]string(nil), keep...), "doomed")); err != nil {
		t.Fatal(err)
	}
	signal := t.TempDir()
	hostDir := v1.HostPathDirectory
	fin := n.NewPod("finisher", []v1.Volume{{Name: "w", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: signal, Type: &hostDir}}}},
		n.Busybox("c", "while [ ! -f /w/done ]; do sleep 0.2; done; exit 3", v1.VolumeMount{Name: "w", MountPath: "/w"}))
	fin.Spec.RestartPolicy = v1.RestartPolicyNever
	n.Create(t, fin)
	n.WriteManifest("static.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static
  namespace: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "exec sleep 3600"]
`, n.NS, n.Env.BusyboxImage))
	staticName := "static-" + n.Name
	steady := append(append([]string(nil), keep...), staticName)
	if _, err := WaitFor(90*time.Second, func() error {
		_, err := NotRunning(n, append(append([]string(nil), steady...), "doomed", "finisher"))
		return err
	}); err != nil {
		t.Fatalf("pods before the faults: %v", err)
	}
	before, err := containerIDs(n, steady)
	if err != nil {
		t.Fatal(err)
	}

	rw := WatchRuntime(n.RT, OwnedBy(n.Owns), 500*time.Millisecond)
	defer rw.Stop()
	nw := WatchNode(n.Admin, n.Name, time.Second)
	defer nw.Stop()
	t.Cleanup(func() { p.Clear(); p.SetUnreachable(false) })

	// Unreachable: the changes happen now, the node cannot tell anyone.
	t.Logf("API server unreachable for %v", unreachable)
	p.SetUnreachable(true)
	if err := DeletePods(n, []string{"doomed"}); err != nil {
		t.Fatal(err)
	}
	if err := CreateSleepers(n, []string{"late"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(signal, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// What kube-controller-manager's node-lifecycle controller does once
	// the node's lease is older than its grace period (50 s: only the full
	// variant's outage is that long): it marks the node's pods not Ready.
	// The short variant does it by hand to one pod; the node must put the
	// truth back.
	if err := markNotReady(n, keep[0]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(unreachable)
	p.SetUnreachable(false)

	t.Logf("429 to everything for %v", storm)
	r429 := p.Add(apiproxy.Rule{Status: 429, RetryAfter: 1})
	time.Sleep(storm)
	p.Clear()
	t.Logf("503 to everything for %v", storm)
	r503 := p.Add(apiproxy.Rule{Status: 503})
	time.Sleep(storm)
	p.Clear()

	t.Logf("every answer %v late (+ up to %v) for %v", delay, jitter, slow)
	rSlow := p.Add(apiproxy.Rule{Delay: delay, Jitter: jitter})
	slowStart := time.Now()
	var slowCatchUp time.Duration = -1
	var slowErr error
	for time.Since(slowStart) < slow {
		if slowCatchUp < 0 {
			if slowErr = statusesCaughtUp(n, steady, before); slowErr == nil {
				slowCatchUp = time.Since(slowStart)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	p.Clear()
	recovered := time.Now()
	t.Logf("recovered; proxy saw %s", p.Stats())

	s.Figure("429 answers", float64(r429.Hits()), "")
	s.Figure("503 answers", float64(r503.Hits()), "")
	s.Figure("slow answers", float64(rSlow.Hits()), "")
	st := p.Stats()
	s.Figure("connections cut or refused while unreachable", float64(st.Cut+st.Refused), "")
	if slowCatchUp >= 0 {
		s.Figure("statuses caught up while answers were slow", slowCatchUp.Seconds(), "s")
	} else {
		s.Note("statuses not caught up during the %v of slow answers: %v", slow, slowErr)
	}

	// Caught up after recovery: the API shows what the runtime has, the
	// lease is renewed and the node's heartbeat written again.
	limit := 3 * apiserverPeriod.Seconds()
	took, err := WaitFor(90*time.Second, func() error { return statusesCaughtUp(n, steady, before) })
	if err != nil {
		s.Note("statuses after recovery: %v", err)
	}
	s.AtMost("pod statuses caught up after recovery", took.Seconds(), limit, "s")
	took, err = WaitFor(90*time.Second, func() error { return leaseRenewedAfter(n, recovered) })
	if err != nil {
		s.Note("lease after recovery: %v", err)
	}
	s.AtMost("lease renewed after recovery", took.Seconds(), limit, "s")
	took, err = WaitFor(90*time.Second, func() error { return heartbeatAfter(n, recovered) })
	if err != nil {
		s.Note("node status after recovery: %v", err)
	}
	s.AtMost("node status Ready with a fresh heartbeat after recovery", took.Seconds(), limit, "s")

	// Nothing restarted, nothing ran twice.
	ns := nw.Stop()
	s.Figure("longest node Ready≠True (node-lifecycle controller, grace 50 s)", ns.LongestNotReady.Seconds(), "s")
	s.Figure("node Ready changes", float64(ns.ReadyChanges), "")
	for _, c := range ns.Changes {
		s.Note("node condition: %s", c)
	}
	rs := rw.Stop()
	for _, d := range rs.Duplicates {
		s.Note("duplicate: %s", d)
	}
	s.AtMost("most ready sandboxes of one pod at once", float64(rs.MaxSandboxesPerPod), 1, "")
	s.AtMost("most running instances of one container at once", float64(rs.MaxInstancesPerContainer), 1, "")
	restarts, err := RestartCounts(n.Admin, n.NS)
	if err != nil {
		t.Fatal(err)
	}
	s.AtMost("container restarts (API)", float64(restarts), 0, "")
	after, err := containerIDs(n, steady)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for pod, id := range before {
		if after[pod] != id {
			changed = append(changed, fmt.Sprintf("%s: %s → %s", pod, ShortID(id), ShortID(after[pod])))
		}
	}
	s.Check("container IDs unchanged", len(changed) == 0, strings.Join(append(changed, fmt.Sprintf("%d pods", len(before))), "; "))
	// A sandbox made again for a pod would stay in the runtime beside the
	// first: the steady API pods must each have the one they had.
	most := 0
	for _, pod := range keep {
		got, err := n.Get(pod)
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := n.RuntimeObjects(string(got.UID))
		if sb > 1 {
			s.Note("pod %s: %d sandboxes in the runtime", pod, sb)
		}
		most = max(most, sb)
	}
	s.AtMost("most sandboxes of one steady pod in the runtime", float64(most), 1, "")
}

// containerIDs maps each pod to its first container's ID, as the API
// shows it.
func containerIDs(n *agent.APIPods, pods []string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range pods {
		p, err := n.Get(name)
		if err != nil {
			return nil, err
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID == "" {
			return nil, fmt.Errorf("pod %s: no container ID", name)
		}
		out[name] = p.Status.ContainerStatuses[0].ContainerID
	}
	return out, nil
}

// statusesCaughtUp returns nil once the API shows what the scenario did
// to the pods while the API server was away, and the steady pods running
// and Ready with the containers they had.
func statusesCaughtUp(n *agent.APIPods, steady []string, ids map[string]string) error {
	var errs []error
	for _, name := range append(append([]string(nil), steady...), "late") {
		p, err := n.Get(name)
		if err == nil {
			err = agent.PodRunning(p)
		}
		if err == nil && !agent.PodReady(p) {
			err = fmt.Errorf("pod %s not Ready", name)
		}
		if id, ok := ids[name]; err == nil && ok && (len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].ContainerID != id) {
			err = fmt.Errorf("pod %s: another container", name)
		}
		errs = append(errs, err)
	}
	if p, err := n.Get("finisher"); err != nil {
		errs = append(errs, err)
	} else if cs := p.Status.ContainerStatuses; p.Status.Phase != v1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
		errs = append(errs, fmt.Errorf("finisher: phase %s, not shown exited with 3", p.Status.Phase))
	}
	if _, err := n.Get("doomed"); !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("doomed still in the API (%v)", err))
	}
	return errors.Join(errs...)
}

// markNotReady sets the pod's Ready condition False in the API as the
// node-lifecycle controller does (MarkPodsNotReady) for a node it lost.
func markNotReady(n *agent.APIPods, name string) error {
	p, err := n.Get(name)
	if err != nil {
		return err
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == v1.PodReady {
			c.Status, c.Reason, c.LastTransitionTime = v1.ConditionFalse, "NodeNotReady", metav1.Now()
		}
	}
	_, err = n.Admin.CoreV1().Pods(n.NS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
	return err
}

// leaseRenewedAfter returns nil once the node's lease was renewed after t.
func leaseRenewedAfter(n *agent.APIPods, t time.Time) error {
	l, err := n.Admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(t.Truncate(time.Microsecond)) {
		return fmt.Errorf("lease renewed at %v, before %v", l.Spec.RenewTime, t.Format("15:04:05.000"))
	}
	return nil
}

// heartbeatAfter returns nil once the node's Ready condition is True with
// a heartbeat after t (whole seconds in the API: the second after t's).
func heartbeatAfter(n *agent.APIPods, t time.Time) error {
	node, err := n.NodeObject()
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status != v1.ConditionTrue || !c.LastHeartbeatTime.Time.After(t) {
			return fmt.Errorf("node Ready=%s, heartbeat %v", c.Status, c.LastHeartbeatTime.Format("15:04:05"))
		}
		return nil
	}
	return fmt.Errorf("no Ready condition")
}
