package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Owns selects the runtime objects of a scenario by their labels (those
// the kubelet puts on sandboxes and containers: io.kubernetes.pod.uid,
// .name, .namespace, io.kubernetes.container.name).
type Owns func(labels map[string]string) bool

// OwnedBy adapts a node's sandbox selector (agent.Node.Owns) to labels.
func OwnedBy(sel func(*runtimeapi.PodSandbox) bool) Owns {
	return func(l map[string]string) bool { return sel(&runtimeapi.PodSandbox{Labels: l}) }
}

// poller calls sample at once and then every interval, on a goroutine of
// its own, until stop: the loop every watch of a scenario shares. sample
// gets a context that stop cancels.
type poller struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func poll(interval time.Duration, sample func(ctx context.Context)) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop ends the polling and waits for a sample under way to end.
func (p *poller) stop() {
	p.cancel()
	<-p.done
}

// RuntimeWatch samples the runtime straight (not through any proxy) while
// a scenario runs, for what must hold at every moment: at most one ready
// sandbox per pod and one running container per pod's container.
type RuntimeWatch struct {
	rt   runtimeapi.RuntimeServiceClient
	owns Owns
	p    *poller

	mu    sync.Mutex
	stats RuntimeStats
}

// RuntimeStats is what a RuntimeWatch saw.
type RuntimeStats struct {
	Samples int
	// Failed counts samples the runtime did not answer (it was down).
	Failed int
	// MaxSandboxesPerPod is the most ready sandboxes seen at once for one
	// pod UID; MaxInstancesPerContainer the most running containers at
	// once for one (pod UID, container name).
	MaxSandboxesPerPod       int
	MaxInstancesPerContainer int
	// Duplicates describes each sample that saw more than one, up to 10.
	Duplicates []string
}

// WatchRuntime samples rt every interval until Stop.
func WatchRuntime(rt runtimeapi.RuntimeServiceClient, owns Owns, interval time.Duration) *RuntimeWatch {
	w := &RuntimeWatch{rt: rt, owns: owns}
	w.p = poll(interval, w.sample)
	return w
}

func (w *RuntimeWatch) sample(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sbs, err := w.rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	var cs *runtimeapi.ListContainersResponse
	if err == nil {
		cs, err = w.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	w.stats.Samples++
	if err != nil {
		w.stats.Failed++
		return
	}
	now := time.Now().Format("15:04:05.000")
	perPod := map[string]int{}
	for _, sb := range sbs.Items {
		if w.owns(sb.Labels) {
			uid := sb.Labels["io.kubernetes.pod.uid"]
			perPod[uid]++
			if n := perPod[uid]; n > w.stats.MaxSandboxesPerPod {
				w.stats.MaxSandboxesPerPod = n
			}
			if perPod[uid] == 2 && len(w.stats.Duplicates) < 10 {
				w.stats.Duplicates = append(w.stats.Duplicates, fmt.Sprintf("%s: 2 ready sandboxes of pod %s/%s",
					now, sb.Labels["io.kubernetes.pod.namespace"], sb.Labels["io.kubernetes.pod.name"]))
			}
		}
	}
	perContainer := map[string]int{}
	for _, c := range cs.Containers {
		if w.owns(c.Labels) {
			key := c.Labels["io.kubernetes.pod.uid"] + "/" + c.Labels["io.kubernetes.container.name"]
			perContainer[key]++
			if n := perContainer[key]; n > w.stats.MaxInstancesPerContainer {
				w.stats.MaxInstancesPerContainer = n
			}
			if perContainer[key] == 2 && len(w.stats.Duplicates) < 10 {
				w.stats.Duplicates = append(w.stats.Duplicates, fmt.Sprintf("%s: 2 running instances of container %s of pod %s/%s",
					now, c.Labels["io.kubernetes.container.name"], c.Labels["io.kubernetes.pod.namespace"], c.Labels["io.kubernetes.pod.name"]))
			}
		}
	}
}

// Stats returns what the watch saw so far.
func (w *RuntimeWatch) Stats() RuntimeStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Duplicates = append([]string(nil), s.Duplicates...)
	return s
}

// Stop ends the sampling and returns what it saw.
func (w *RuntimeWatch) Stop() RuntimeStats {
	w.p.stop()
	return w.Stats()
}

// Leftovers counts the runtime's sandboxes and containers, in any state,
// that owns selects: what a scenario's deletes must not leave.
func Leftovers(t testing.TB, rt runtimeapi.RuntimeServiceClient, owns Owns) (sandboxes, containers int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 0, 0, err
	}
	for _, sb := range sbs.Items {
		if owns(sb.Labels) {
			sandboxes++
		}
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return 0, 0, err
	}
	for _, c := range cs.Containers {
		if owns(c.Labels) {
			containers++
		}
	}
	return sandboxes, containers, nil
}

// HeldByRuntime counts the leftovers that owns selects which no CRI
// client can remove: a container whose StartContainer was cancelled midway
// (reason StartError, "context canceled"), whose task containerd keeps in
// runc init so that every RemoveContainer fails with "cannot delete running
// task" (containerd/containerd#11037, #11674), and the sandbox holding it.
// The agent never cancels a StartContainer it makes, so only its death
// (kill -9) inside one leaves this; upstream's kubelet is exposed the same
// way. It returns one line per container for the report.
func HeldByRuntime(rt runtimeapi.RuntimeServiceClient, owns Owns) (sandboxes, containers int, lines []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}}})
	if err != nil {
		return 0, 0, nil, err
	}
	holding := map[string]bool{}
	for _, c := range cs.Containers {
		if !owns(c.Labels) {
			continue
		}
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			return 0, 0, nil, err
		}
		if st.Status.GetReason() != "StartError" || !strings.Contains(st.Status.GetMessage(), "context canceled") {
			continue
		}
		containers++
		holding[c.PodSandboxId] = true
		lines = append(lines, fmt.Sprintf("%s/%s container %s (%.12s): %s",
			c.Labels["io.kubernetes.pod.namespace"], c.Labels["io.kubernetes.pod.name"],
			c.Labels["io.kubernetes.container.name"], c.Id, st.Status.GetMessage()))
	}
	return len(holding), containers, lines, nil
}

// NodeWatch follows the node's conditions from the API as the admin
// (straight to kube-apiserver, not through any proxy), polling, and
// records each change.
type NodeWatch struct {
	p *poller

	mu      sync.Mutex
	last    map[v1.NodeConditionType]v1.ConditionStatus
	changes []ConditionChange
	// notReadySince is when Ready was last seen not True; zero while True.
	notReadySince   time.Time
	longestNotReady time.Duration
	started         time.Time
}

// ConditionChange is one condition seen with a new status.
type ConditionChange struct {
	At     time.Time
	Type   v1.NodeConditionType
	Status v1.ConditionStatus
	Reason string
	// Message is the condition's message (e.g. "container runtime is
	// down").
	Message string
}

func (c ConditionChange) String() string {
	return fmt.Sprintf("%s %s=%s (%s)", c.At.Format("15:04:05.000"), c.Type, c.Status, c.Reason)
}

// WatchNode polls the Node named name every interval until Stop. The
// conditions seen first are the baseline, not changes.
func WatchNode(admin kubernetes.Interface, name string, interval time.Duration) *NodeWatch {
	w := &NodeWatch{started: time.Now()}
	w.p = poll(interval, func(ctx context.Context) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if node, err := admin.CoreV1().Nodes().Get(cctx, name, metav1.GetOptions{}); err == nil {
			w.observe(node.Status.Conditions)
		}
	})
	return w
}

func (w *NodeWatch) observe(conds []v1.NodeCondition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	first := w.last == nil
	if first {
		w.last = map[v1.NodeConditionType]v1.ConditionStatus{}
	}
	ready := false
	for _, c := range conds {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			ready = true
		}
		if prev, ok := w.last[c.Type]; !first && (!ok || prev != c.Status) {
			w.changes = append(w.changes, ConditionChange{At: now, Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
		w.last[c.Type] = c.Status
	}
	switch {
	case !ready && w.notReadySince.IsZero():
		w.notReadySince = now
	case ready && !w.notReadySince.IsZero():
		w.longestNotReady = max(w.longestNotReady, now.Sub(w.notReadySince))
		w.notReadySince = time.Time{}
	}
}

// NodeStats is what a NodeWatch saw.
type NodeStats struct {
	Changes []ConditionChange
	// ReadyChanges counts the changes of the Ready condition.
	ReadyChanges int
	// LongestNotReady is the longest time Ready was seen not True (to now
	// if it still is not).
	LongestNotReady time.Duration
	// ReadyNow is whether Ready was True at the last poll.
	ReadyNow bool
}

// Stats returns what the watch saw so far.
func (w *NodeWatch) Stats() NodeStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := NodeStats{Changes: append([]ConditionChange(nil), w.changes...), LongestNotReady: w.longestNotReady,
		ReadyNow: w.last != nil && w.last[v1.NodeReady] == v1.ConditionTrue}
	if !w.notReadySince.IsZero() {
		s.LongestNotReady = max(s.LongestNotReady, time.Since(w.notReadySince))
	}
	for _, c := range w.changes {
		if c.Type == v1.NodeReady {
			s.ReadyChanges++
		}
	}
	return s
}

// Stop ends the polling and returns what it saw.
func (w *NodeWatch) Stop() NodeStats {
	w.p.stop()
	return w.Stats()
}

// RestartCounts sums the restart counts of the containers (init and
// regular) of the namespace's pods, as the API shows them.
func RestartCounts(admin kubernetes.Interface, ns string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		for _, s := range append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			n += int(s.RestartCount)
		}
	}
	return n, nil
}

// ProcStatus reads fields of /proc/PID/status in KiB (RssAnon, VmRSS,
// Threads as a count).
func ProcStatus(pid int, fields ...string) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				if err == nil {
					out[k] = n
				}
			}
		}
	}
	return out, nil
}
