package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/faults/apiproxy"
)

// TestDeletedPodsLastWord creates pods of several shapes and deletes each
// at a random moment of its life (while its sandbox is made, while an init
// container runs or after it failed, while a container starts, restarts or
// has exited), several at a time, and watches every status update of every
// pod until it is gone. Each update must keep upstream's status manager's
// rules (statusRuleViolations) and the last status before the pod left the
// API must be its last word (lastWordViolations). It passes against the
// upstream kubelet too:
//
//	CLUSTER_KUBELET=$(hack/node-env upstream-kubelet) go test -run TestDeletedPodsLastWord ./test/cluster/
//
// LASTWORD_PODS overrides the number of pods of each test.
func TestDeletedPodsLastWord(t *testing.T) {
	n := startClusterNode(t)
	deleteAtRandom(t, n, lastWordPods(t, 150))
}

// TestDeletedPodsLastWordAPIFaults is TestDeletedPodsLastWord with the
// node's API server failing a fifth of its pod status writes and pod
// deletions (503) and slow on others: a pod's last word must survive its
// retries.
func TestDeletedPodsLastWordAPIFaults(t *testing.T) {
	n := newClusterNode(t)
	p, err := apiproxy.New(n.Kubeconfig, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	n.Kubeconfig = p.Kubeconfig
	status := regexp.MustCompile(`/pods/[^/]+/status$`)
	pod := regexp.MustCompile(`/pods/[^/]+$`)
	failedPatch := p.Add(apiproxy.Rule{Method: http.MethodPatch, Path: status, Status: http.StatusServiceUnavailable, Fraction: 0.2})
	failedDelete := p.Add(apiproxy.Rule{Method: http.MethodDelete, Path: pod, Status: http.StatusServiceUnavailable, Fraction: 0.2})
	slowPatch := p.Add(apiproxy.Rule{Method: http.MethodPatch, Path: status, Delay: 100 * time.Millisecond, Jitter: 400 * time.Millisecond, Fraction: 0.3})
	n.Start()
	eventually(t, "node Ready", 30*time.Second, n.Ready)
	deleteAtRandom(t, n, lastWordPods(t, 60))
	t.Logf("status writes failed %d, slowed %d; deletions failed %d", failedPatch.Hits(), slowPatch.Hits(), failedDelete.Hits())
	if failedPatch.Hits() == 0 || failedDelete.Hits() == 0 {
		t.Errorf("the faults never acted: %s", p.Stats())
	}
}

func lastWordPods(t *testing.T, pods int) int {
	if s := os.Getenv("LASTWORD_PODS"); s != "" {
		var err error
		if pods, err = strconv.Atoi(s); err != nil {
			t.Fatalf("LASTWORD_PODS=%q: %v", s, err)
		}
	}
	return pods
}

// deleteAtRandom is the body of the last-word tests: pods pods on n, 12
// at a time, each deleted at a random moment, every status update checked.
func deleteAtRandom(t *testing.T, n *clusterNode, pods int) {
	const parallel = 12
	ns := n.Namespace("lastword")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newStatusHistory()
	watching := make(chan error, 1)
	go func() { watching <- h.watch(ctx, n.Admin, ns) }()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 39))
	type job struct {
		pod   *v1.Pod
		delay time.Duration
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				created, err := n.Admin.CoreV1().Pods(ns).Create(ctx, j.pod, metav1.CreateOptions{})
				if err != nil {
					t.Errorf("create %s: %v", j.pod.Name, err)
					continue
				}
				time.Sleep(j.delay)
				if err := n.Admin.CoreV1().Pods(ns).Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete %s: %v", created.Name, err)
					continue
				}
				if err := h.waitGone(ctx, created.UID, 2*time.Minute); err != nil {
					t.Errorf("%s: %v", created.Name, err)
				}
			}
		}()
	}
	for i := range pods {
		shape := lastWordShapes[rng.IntN(len(lastWordShapes))]
		p := shape.pod(n, ns, fmt.Sprintf("%s-%d", shape.name, i), rng)
		jobs <- job{pod: p, delay: time.Duration(rng.Int64N(int64(4 * time.Second)))}
	}
	close(jobs)
	wg.Wait()
	cancel()
	if err := <-watching; err != nil {
		t.Fatal(err)
	}

	seen := h.report(t)
	t.Logf("%d pods, %d status updates seen; last phases %v", pods, seen.updates, seen.lastPhases)
	if seen.gone != pods {
		t.Errorf("%d of %d pods seen gone", seen.gone, pods)
	}
}

// lastWordShape is one kind of pod the test deletes at random moments.
type lastWordShape struct {
	name string
	pod  func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod
}

var lastWordShapes = []lastWordShape{
	{"sleeps", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		return n.apiPod(ns, name, "sleep 600", 1, anyPolicy(rng))
	}},
	{"stops-on-term", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		return n.apiPod(ns, name, "trap 'exit 0' TERM; sleep 600 & wait", 2, anyPolicy(rng))
	}},
	{"exits", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		return n.apiPod(ns, name, fmt.Sprintf("sleep %d; exit %d", rng.IntN(3), rng.IntN(2)), 1, anyPolicy(rng))
	}},
	{"init-fails", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		p := n.apiPod(ns, name, "sleep 600", 1, anyPolicy(rng))
		p.Spec.InitContainers = []v1.Container{n.script("init", fmt.Sprintf("sleep %d; exit 1", rng.IntN(2)))}
		return p
	}},
	{"init-runs", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		p := n.apiPod(ns, name, "sleep 600", 1, anyPolicy(rng))
		p.Spec.InitContainers = []v1.Container{
			n.script("init1", "true"),
			n.script("init2", fmt.Sprintf("sleep %d", rng.IntN(4))),
		}
		return p
	}},
	{"two", func(n *clusterNode, ns, name string, rng *rand.Rand) *v1.Pod {
		p := n.apiPod(ns, name, "sleep 600", 1, anyPolicy(rng))
		p.Spec.Containers = append(p.Spec.Containers, n.script("quick", "sleep 1"))
		return p
	}},
}

func anyPolicy(rng *rand.Rand) v1.RestartPolicy {
	return []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}[rng.IntN(3)]
}

// script is a busybox container running a shell script.
func (n *clusterNode) script(name, script string) v1.Container {
	return v1.Container{Name: name, Image: n.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}}
}

// statusHistory is every version of every pod a watch saw, by UID.
type statusHistory struct {
	mu   sync.Mutex
	pods map[types.UID]*podHistory
	// changed is closed and replaced on every event.
	changed chan struct{}
}

type podHistory struct {
	versions []*v1.Pod
	gone     bool
}

func newStatusHistory() *statusHistory {
	return &statusHistory{pods: map[types.UID]*podHistory{}, changed: make(chan struct{})}
}

// watch records the namespace's pods until ctx ends, watching again from
// the last version seen when the API server ends a watch.
func (h *statusHistory) watch(ctx context.Context, kube kubernetes.Interface, ns string) error {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	rv := list.ResourceVersion
	for ctx.Err() == nil {
		w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch pods from %s: %w", rv, err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				w.Stop()
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("watch pods: %v", ev.Object)
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type != watch.Bookmark {
				h.record(p, ev.Type == watch.Deleted)
			}
		}
	}
	return nil
}

func (h *statusHistory) record(p *v1.Pod, deleted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ph := h.pods[p.UID]
	if ph == nil {
		ph = &podHistory{}
		h.pods[p.UID] = ph
	}
	ph.versions = append(ph.versions, p)
	ph.gone = ph.gone || deleted
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitGone waits until the watch saw the pod's deletion.
func (h *statusHistory) waitGone(ctx context.Context, uid types.UID, within time.Duration) error {
	deadline := time.After(within)
	for {
		h.mu.Lock()
		ph, changed := h.pods[uid], h.changed
		gone := ph != nil && ph.gone
		h.mu.Unlock()
		if gone {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("not gone from the API %s after its deletion", within)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type historySummary struct {
	updates, gone int
	lastPhases    map[v1.PodPhase]int
}

// report checks every pod's history, reporting each violation with the
// pod's statuses.
func (h *statusHistory) report(t *testing.T) historySummary {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	sum := historySummary{lastPhases: map[v1.PodPhase]int{}}
	for _, ph := range h.pods {
		sum.updates += len(ph.versions)
		var problems []string
		for i := 1; i < len(ph.versions); i++ {
			for _, v := range statusRuleViolations(ph.versions[i-1], ph.versions[i]) {
				problems = append(problems, fmt.Sprintf("update %d: %s", i, v))
			}
		}
		last := ph.versions[len(ph.versions)-1]
		if ph.gone {
			sum.gone++
			sum.lastPhases[last.Status.Phase]++
			problems = append(problems, lastWordViolations(last, appContainersLeftWaiting(ph.versions))...)
		}
		if len(problems) > 0 {
			t.Errorf("pod %s (%s, restartPolicy %s): %s\n%s", last.Name, last.UID, last.Spec.RestartPolicy,
				strings.Join(problems, "; "), statusTrail(ph.versions))
		}
	}
	return sum
}

// statusTrail is a pod's statuses, one line each, for a failure message.
func statusTrail(versions []*v1.Pod) string {
	var b strings.Builder
	for i, p := range versions {
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = " deleting"
		}
		fmt.Fprintf(&b, "  %d%s: %s %s", i, deleting, p.Status.Phase, p.Status.Reason)
		for _, c := range p.Status.InitContainerStatuses {
			fmt.Fprintf(&b, " init:%s=%s", c.Name, stateString(c))
		}
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s=%s", c.Name, stateString(c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func stateString(c v1.ContainerStatus) string {
	s := c.State
	switch {
	case s.Running != nil:
		return fmt.Sprintf("running(ready=%v)", c.Ready)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%s,%d)", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s)", s.Waiting.Reason)
	}
	return "none"
}

// statusRuleViolations is what the update from prev to cur breaks of
// upstream's status manager's rules (checkContainerStateTransition and
// generateAPIPodStatus): a terminal phase never changes; a container that
// cannot restart never leaves terminated; a terminal pod has nothing
// running or ready; a container that exited 0 had started; a pod
// succeeded only with every container exited 0.
func statusRuleViolations(prev, cur *v1.Pod) []string {
	var out []string
	if terminal(prev.Status.Phase) && cur.Status.Phase != prev.Status.Phase {
		out = append(out, fmt.Sprintf("phase %s after %s", cur.Status.Phase, prev.Status.Phase))
	}
	policy := cur.Spec.RestartPolicy
	restartable := func(exit int32) bool {
		return policy == v1.RestartPolicyAlways || (policy == v1.RestartPolicyOnFailure && exit != 0)
	}
	for _, pair := range []struct {
		kind      string
		old, next []v1.ContainerStatus
	}{{"init container", prev.Status.InitContainerStatuses, cur.Status.InitContainerStatuses},
		{"container", prev.Status.ContainerStatuses, cur.Status.ContainerStatuses}} {
		for _, o := range pair.old {
			if o.State.Terminated == nil || restartable(o.State.Terminated.ExitCode) {
				continue
			}
			for _, c := range pair.next {
				if c.Name == o.Name && c.State.Terminated == nil {
					out = append(out, fmt.Sprintf("%s %s from terminated to %s", pair.kind, c.Name, stateString(c)))
				}
			}
		}
	}
	all := append(append([]v1.ContainerStatus{}, cur.Status.InitContainerStatuses...), cur.Status.ContainerStatuses...)
	for _, c := range all {
		if t := c.State.Terminated; t != nil && t.ExitCode == 0 && (t.StartedAt.IsZero() || c.ContainerID == "") {
			out = append(out, fmt.Sprintf("container %s succeeded without having started", c.Name))
		}
	}
	if terminal(cur.Status.Phase) {
		for _, c := range all {
			// A completed init container is Ready, as upstream reports it.
			if c.State.Running != nil || (c.Ready && c.State.Terminated == nil) {
				out = append(out, fmt.Sprintf("%s with container %s %s", cur.Status.Phase, c.Name, stateString(c)))
			}
		}
		for _, cond := range cur.Status.Conditions {
			if (cond.Type == v1.PodReady || cond.Type == v1.ContainersReady) && cond.Status == v1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s with %s True", cur.Status.Phase, cond.Type))
			}
		}
	}
	if cur.Status.Phase == v1.PodSucceeded {
		for _, c := range cur.Status.ContainerStatuses {
			if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
				out = append(out, fmt.Sprintf("Succeeded with container %s %s", c.Name, stateString(c)))
			}
		}
	}
	return out
}

// lastWordViolations is what a pod's last status before it left the API
// lacks of upstream's (the status manager's TerminatePod): a terminal
// phase; a status for every container, each terminated once the pod
// initialized; every init container terminated but the trailing ones that
// never started. initialized is whether the pod had initialized before it
// ended: upstream's TerminatePod judges it on the pod's status before its
// last sync, so an init container that completes while the pod is killed
// may leave the app containers waiting.
func lastWordViolations(p *v1.Pod, initialized bool) []string {
	var out []string
	if !terminal(p.Status.Phase) {
		out = append(out, fmt.Sprintf("left the API in phase %s", p.Status.Phase))
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		out = append(out, fmt.Sprintf("left with %d container statuses for %d containers", len(p.Status.ContainerStatuses), len(p.Spec.Containers)))
	}
	if initialized || len(p.Spec.InitContainers) == 0 {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated == nil {
				out = append(out, fmt.Sprintf("left with container %s %s", c.Name, stateString(c)))
			}
		}
	}
	for _, c := range attemptedInits(p.Status.InitContainerStatuses) {
		if c.State.Terminated == nil {
			out = append(out, fmt.Sprintf("left with init container %s %s", c.Name, stateString(c)))
		}
	}
	return out
}

// appContainersLeftWaiting reports whether any version of the pod shows an
// app container that left waiting (it was created, so the pod had
// initialized).
func appContainersLeftWaiting(versions []*v1.Pod) bool {
	for _, p := range versions {
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting == nil || c.LastTerminationState.Terminated != nil {
				return true
			}
		}
	}
	return false
}

// attemptedInits is upstream's initializedContainers: the init containers
// but the trailing ones still waiting for their first start, and at least
// the first.
func attemptedInits(inits []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(inits) - 1; i >= 0; i-- {
		if inits[i].State.Waiting == nil || inits[i].LastTerminationState.Terminated != nil {
			return inits[:i+1]
		}
	}
	if len(inits) > 0 {
		return inits[:1]
	}
	return nil
}

func terminal(phase v1.PodPhase) bool { return phase == v1.PodSucceeded || phase == v1.PodFailed }
