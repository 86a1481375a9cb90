package chaos

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// statusPeriod is the node's nodeStatusUpdateFrequency in this scenario,
// set explicitly (upstream's default): the longest Ready≠True allowed.
const statusPeriod = 10 * time.Second

// TestRestarts restarts the agent many times in a row, SIGTERM and SIGKILL
// alternately, with static and API pods running: no container may be
// restarted or run twice, the node's Ready may not flap for longer than one
// status period, and each static pod runs exactly once throughout.
func TestRestarts(t *testing.T) {
	s := Begin(t, "restarts", "agent restarted in a row with static and API pods running")
	restarts := Pick(3, 20)
	n := NewNode(t, agent.WithConfig(fmt.Sprintf("nodeStatusUpdateFrequency: %s\n", statusPeriod)))
	n.Up(t, "restarts")

	static := func(name string) {
		n.WriteManifest(name+".yaml", agent.Manifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "exec sleep 3600"]
`, n.Env.BusyboxImage)))
	}
	mirror := func(name string) string { return name + "-" + n.Name }
	// static-a runs throughout; static-b's manifest is removed and
	// static-c's written while the agent is down at the middle restart:
	// the restarted agent must stop static-b and delete its mirror pod,
	// and run static-c once.
	static("static-a")
	static("static-b")
	mirrors := []string{mirror("static-a"), mirror("static-b")}
	swapAt := restarts / 2
	apiPods := PodNames("r", Pick(4, 6))
	if err := CreateSleepers(n, apiPods); err != nil {
		t.Fatal(err)
	}
	took, err := WaitFor(120*time.Second, func() error {
		if _, err := NotRunning(n, apiPods); err != nil {
			return err
		}
		return mirrorsRunning(n.Admin, mirrors)
	})
	if err != nil {
		t.Fatalf("the pods did not start: %v", err)
	}
	s.Figure("static and API pods running at the start", took.Seconds(), "s")

	before, err := runningContainers(n.RT, OwnedBy(n.Owns))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(mirrors) + len(apiPods); len(before) != want {
		t.Fatalf("%d running containers of the test's pods in the runtime, want %d: %v", len(before), want, before)
	}
	apiIDs, err := apiContainerIDs(n.Admin, n.NS, "default", mirrors)
	if err != nil {
		t.Fatal(err)
	}

	rw := WatchRuntime(n.RT, OwnedBy(n.Owns), 200*time.Millisecond)
	nw := WatchNode(n.Admin, n.Name, 250*time.Millisecond)
	lw := watchLease(n.Admin, n.Name, 250*time.Millisecond)
	defer rw.Stop()
	defer nw.Stop()
	defer lw.stop()

	var caughtUp []time.Duration
	for i := range restarts {
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		n.Stop(sig)
		started := time.Now()
		if i == swapAt {
			n.RemoveManifest("static-b.yaml")
			static("static-c")
			mirrors = []string{mirror("static-a"), mirror("static-c")}
		}
		n.Start()
		// The next restart waits until this run has done its part: the
		// lease renewed and the Node Ready as this run reported them, and
		// the mirror pods in place.
		took, err := WaitFor(60*time.Second, func() error {
			if r := lw.lastRenew(); !r.After(started) {
				return fmt.Errorf("lease last renewed %s, before the start", r.Format("15:04:05.000"))
			}
			if err := n.Ready(); err != nil {
				return err
			}
			return mirrorsRunning(n.Admin, mirrors)
		})
		if err != nil {
			s.Note("restart %d (%s): not caught up within %v: %v", i+1, sig, took.Round(time.Millisecond), err)
		}
		caughtUp = append(caughtUp, time.Since(started))
	}
	// One more status period, so that a late restart of a container or a
	// late flap would still be seen.
	time.Sleep(statusPeriod)

	after, err := runningContainers(n.RT, OwnedBy(n.Owns))
	if err != nil {
		t.Fatal(err)
	}
	// static-b's container is meant to stop; static-c's is new.
	bKey := "default/" + mirror("static-b") + "/c"
	bAfter := after[bKey]
	delete(before, bKey)
	delete(apiIDs, bKey)
	changed := diffIDs(before, after)
	apiAfter, err := apiContainerIDs(n.Admin, n.NS, "default", mirrors)
	if err != nil {
		t.Fatal(err)
	}
	apiChanged := diffIDs(apiIDs, apiAfter)
	removedMirror := 0
	if _, err := n.Admin.CoreV1().Pods("default").Get(context.Background(), mirror("static-b"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		removedMirror = 1
		s.Note("the mirror pod of static-b, whose manifest was removed while the agent was down: %v", err)
	}
	_, cAfter := after["default/"+mirror("static-c")+"/c"]
	restartCounts, err := RestartCounts(n.Admin, n.NS)
	if err != nil {
		t.Fatal(err)
	}
	staticRestarts, err := mirrorRestartCounts(n.Admin, mirrors)
	if err != nil {
		t.Fatal(err)
	}
	missingMirrors := 0
	if err := mirrorsRunning(n.Admin, mirrors); err != nil {
		missingMirrors = len(mirrors)
		s.Note("mirror pods at the end: %v", err)
	}
	rs, ns, ls := rw.Stop(), nw.Stop(), lw.stop()

	s.Figure("restarts", float64(restarts), "")
	var longest, sum time.Duration
	for _, d := range caughtUp {
		longest, sum = max(longest, d), sum+d
	}
	s.Figure("mean time to catch up after a restart", (sum / time.Duration(len(caughtUp))).Seconds(), "s")
	s.Figure("longest time to catch up after a restart", longest.Seconds(), "s")
	s.AtMost("containers restarted (runtime container IDs changed)", float64(len(changed)), 0, "")
	s.AtMost("containers restarted (API container IDs changed)", float64(len(apiChanged)), 0, "")
	s.AtMost("restart counts in the API (API and static pods)", float64(restartCounts+staticRestarts), 0, "")
	for _, c := range append(changed, apiChanged...) {
		s.Note("changed: %s", c)
	}
	s.AtMost("longest Ready≠True", ns.LongestNotReady.Seconds(), statusPeriod.Seconds(), "s")
	s.Figure("Ready changes of the node", float64(ns.ReadyChanges), "")
	for _, c := range ns.Changes {
		s.Note("node: %s", c)
	}
	s.AtMost("longest gap between lease renewals", ls.longestGap.Seconds(), 40, "s")
	s.Figure("lease renewals seen", float64(ls.renewals), "")
	s.AtMost("most ready sandboxes of one pod at once", float64(rs.MaxSandboxesPerPod), 1, "")
	s.AtMost("most running instances of one container at once", float64(rs.MaxInstancesPerContainer), 1, "")
	for _, d := range rs.Duplicates {
		s.Note("duplicate: %s", d)
	}
	s.Figure("runtime samples (failed)", float64(rs.Failed), "")
	s.AtMost("mirror pods missing at the end", float64(missingMirrors), 0, "")
	s.Check("static pod removed while down: its container stopped", bAfter == "", fmt.Sprintf("running container %q", ShortID(bAfter)))
	s.AtMost("static pod removed while down: its mirror pod left in the API", float64(removedMirror), 0, "")
	s.Check("static pod added while down: running", cAfter, fmt.Sprintf("running: %v", cAfter))
}

// mirrorsRunning returns nil when every mirror pod (namespace default) is
// in the API, Running with its containers running.
func mirrorsRunning(admin kubernetes.Interface, mirrors []string) error {
	for _, name := range mirrors {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("mirror pod %s: %w", name, err)
		}
		if p.Annotations["kubernetes.io/config.mirror"] == "" {
			return fmt.Errorf("pod %s is not a mirror pod", name)
		}
		if err := agent.PodRunning(p); err != nil {
			return err
		}
	}
	return nil
}

// mirrorRestartCounts sums the restart counts of the mirror pods.
func mirrorRestartCounts(admin kubernetes.Interface, mirrors []string) (int, error) {
	n := 0
	for _, name := range mirrors {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		for _, cs := range p.Status.ContainerStatuses {
			n += int(cs.RestartCount)
		}
	}
	return n, nil
}

// runningContainers maps "pod/container" of the running containers that
// owns selects to their runtime IDs.
func runningContainers(rt runtimeapi.RuntimeServiceClient, owns Owns) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range cs.Containers {
		if owns(c.Labels) {
			key := c.Labels["io.kubernetes.pod.namespace"] + "/" + c.Labels["io.kubernetes.pod.name"] + "/" + c.Labels["io.kubernetes.container.name"]
			if out[key] != "" {
				out[key] += "," + c.Id
			} else {
				out[key] = c.Id
			}
		}
	}
	return out, nil
}

// apiContainerIDs maps "pod/container" to the container ID the API shows,
// for the pods of ns and the mirror pods of mirrorNS.
func apiContainerIDs(admin kubernetes.Interface, ns, mirrorNS string, mirrors []string) (map[string]string, error) {
	out := map[string]string{}
	add := func(p *v1.Pod) {
		for _, cs := range p.Status.ContainerStatuses {
			out[p.Namespace+"/"+p.Name+"/"+cs.Name] = cs.ContainerID
		}
	}
	pods, err := admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		add(&pods.Items[i])
	}
	for _, name := range mirrors {
		p, err := admin.CoreV1().Pods(mirrorNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		add(p)
	}
	return out, nil
}

// diffIDs describes each key of before whose ID is not the same after.
func diffIDs(before, after map[string]string) []string {
	var out []string
	for k, id := range before {
		if after[k] != id {
			out = append(out, fmt.Sprintf("%s: %s → %q", k, ShortID(id), ShortID(after[k])))
		}
	}
	sort.Strings(out)
	return out
}

// leaseWatch polls the node's Lease and records its renewals.
type leaseWatch struct {
	p *poller

	mu       sync.Mutex
	last     time.Time // the last renewTime seen
	stats    leaseStats
	observed bool
}

type leaseStats struct {
	renewals int
	// longestGap is the longest time between two renewTimes seen, or from
	// the last one to the end of the watch.
	longestGap time.Duration
}

func watchLease(admin kubernetes.Interface, node string, interval time.Duration) *leaseWatch {
	w := &leaseWatch{}
	w.p = poll(interval, func(ctx context.Context) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(cctx, node, metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
			w.observe(l.Spec.RenewTime.Time)
		}
	})
	return w
}

func (w *leaseWatch) observe(renew time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.observed {
		w.observed, w.last = true, renew
		return
	}
	if renew.After(w.last) {
		w.stats.renewals++
		w.stats.longestGap = max(w.stats.longestGap, renew.Sub(w.last))
		w.last = renew
	}
}

func (w *leaseWatch) lastRenew() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *leaseWatch) stop() leaseStats {
	w.p.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	if w.observed {
		s.longestGap = max(s.longestGap, time.Since(w.last))
	}
	return s
}
