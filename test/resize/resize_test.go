// Package resize runs actorlet as the environment's node against the real
// kube-apiserver and containerd and resizes pods in place through the
// resize subresource (issue #21): CPU and memory applied without a
// restart and read back inside the container (cgroup v1 files), a
// RestartContainer policy restarting the container, and a resize that
// does not fit left pending. Upstream kubelet v1.37.2 is the reference.
package resize

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

func resources(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	for name, q := range map[v1.ResourceName]string{v1.ResourceCPU: cpuReq, v1.ResourceMemory: memReq} {
		if q != "" {
			r.Requests[name] = resource.MustParse(q)
		}
	}
	for name, q := range map[v1.ResourceName]string{v1.ResourceCPU: cpuLim, v1.ResourceMemory: memLim} {
		if q != "" {
			r.Limits[name] = resource.MustParse(q)
		}
	}
	return r
}

// cgroupScript prints the container's CPU shares, CFS quota and memory
// limit as cgroup v1 shows them inside it, as the e2e specs read them.
const cgroupScript = "echo $(cat /sys/fs/cgroup/cpu/cpu.shares) $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"

// resize asks for new resources of the pod's container c through the
// resize subresource, as the e2e specs' replace endpoint does.
func resize(t *testing.T, n *agent.APIPods, name, c string, r v1.ResourceRequirements) (*v1.Pod, error) {
	t.Helper()
	p, err := n.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == c {
			p.Spec.Containers[i].Resources = r
		}
	}
	return n.Admin.CoreV1().Pods(n.NS).UpdateResize(context.Background(), name, p, metav1.UpdateOptions{})
}

// condition returns the pod's condition of type ct, nil without one.
func condition(p *v1.Pod, ct v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func sameList(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if qb, ok := b[name]; !ok || q.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// resized waits until the API shows the pod's resize done: its generation
// observed, no resize condition, and the container's status showing want
// as its resources and want's requests as its allocation.
func resized(t *testing.T, n *agent.APIPods, name, c string, want v1.ResourceRequirements) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, "pod "+name+" resized", 60*time.Second, func() error {
		p, err := n.Get(name)
		if err != nil {
			return err
		}
		if p.Status.ObservedGeneration < p.Generation {
			return fmt.Errorf("observedGeneration %d < generation %d", p.Status.ObservedGeneration, p.Generation)
		}
		for _, ct := range []v1.PodConditionType{v1.PodResizePending, v1.PodResizeInProgress} {
			if cond := condition(p, ct); cond != nil {
				return fmt.Errorf("condition %s: %s %s", ct, cond.Reason, cond.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != c {
				continue
			}
			if cs.Resources == nil || !sameList(cs.Resources.Requests, want.Requests) || !sameList(cs.Resources.Limits, want.Limits) {
				return fmt.Errorf("status resources %v", cs.Resources)
			}
			if !sameList(cs.AllocatedResources, want.Requests) {
				return fmt.Errorf("allocated resources %v", cs.AllocatedResources)
			}
			if cs.State.Running == nil {
				return fmt.Errorf("container %s not running: %+v", c, cs.State)
			}
			pod = p
			return nil
		}
		return fmt.Errorf("no status of container %s", c)
	})
	return pod
}

func restartCount(p *v1.Pod, c string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == c {
			return cs.RestartCount
		}
	}
	return -1
}

func TestInPlaceResize(t *testing.T) {
	n := agent.NewAPIPods(t, binary)
	n.Up(t, "resize")

	t.Run("cpu and memory applied without a restart", func(t *testing.T) {
		c := n.Sleeper("c")
		c.Resources = resources("100m", "200m", "32Mi", "64Mi")
		pod := n.Run(t, n.NewPod("in-place", nil, c))
		n.Expect(t, "in-place", "c", cgroupScript, "102 20000 67108864")

		want := resources("200m", "400m", "64Mi", "128Mi")
		if _, err := resize(t, n, "in-place", "c", want); err != nil {
			t.Fatalf("resize: %v", err)
		}
		after := resized(t, n, "in-place", "c", want)
		if got := restartCount(after, "c"); got != restartCount(pod, "c") {
			t.Errorf("restart count %d, want %d: the resize restarted the container", got, restartCount(pod, "c"))
		}
		if after.Status.ContainerStatuses[0].ContainerID != pod.Status.ContainerStatuses[0].ContainerID {
			t.Errorf("container replaced: %s, was %s", after.Status.ContainerStatuses[0].ContainerID, pod.Status.ContainerStatuses[0].ContainerID)
		}
		n.EventuallySees(t, "in-place", "c", cgroupScript, "204 40000 134217728", 30*time.Second)
		// The pod cgroup grew with it (its limits are its containers').
		podCgroupLimit(t, pod, "128Mi")
		n.Event(t, "in-place", "ResizeStarted", `"generation":2`)
		n.Event(t, "in-place", "ResizeCompleted", `"generation":2`)

		// And back down: the memory limit shrinks below the old one.
		down := resources("50m", "100m", "16Mi", "48Mi")
		if _, err := resize(t, n, "in-place", "c", down); err != nil {
			t.Fatalf("resize down: %v", err)
		}
		after = resized(t, n, "in-place", "c", down)
		if got := restartCount(after, "c"); got != restartCount(pod, "c") {
			t.Errorf("restart count %d after the decrease", got)
		}
		n.EventuallySees(t, "in-place", "c", cgroupScript, "51 10000 50331648", 30*time.Second)
		podCgroupLimit(t, pod, "48Mi")
	})

	t.Run("RestartContainer policy restarts the container", func(t *testing.T) {
		c := n.Sleeper("c")
		c.Resources = resources("100m", "100m", "64Mi", "64Mi")
		c.ResizePolicy = []v1.ContainerResizePolicy{
			{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
			{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
		}
		pod := n.Run(t, n.NewPod("restart-policy", nil, c))
		want := resources("100m", "100m", "96Mi", "96Mi")
		if _, err := resize(t, n, "restart-policy", "c", want); err != nil {
			t.Fatalf("resize: %v", err)
		}
		agent.Eventually(t, "restarted once", 60*time.Second, func() error {
			p, err := n.Get("restart-policy")
			if err != nil {
				return err
			}
			if got := restartCount(p, "c"); got != restartCount(pod, "c")+1 {
				return fmt.Errorf("restart count %d", got)
			}
			return nil
		})
		resized(t, n, "restart-policy", "c", want)
		n.EventuallySees(t, "restart-policy", "c", cgroupScript, "102 10000 100663296", 30*time.Second)

		// A CPU change under NotRequired does not restart it again.
		want = resources("200m", "200m", "96Mi", "96Mi")
		if _, err := resize(t, n, "restart-policy", "c", want); err != nil {
			t.Fatalf("resize cpu: %v", err)
		}
		after := resized(t, n, "restart-policy", "c", want)
		if got := restartCount(after, "c"); got != restartCount(pod, "c")+1 {
			t.Errorf("restart count %d after a NotRequired cpu resize", got)
		}
		n.EventuallySees(t, "restart-policy", "c", cgroupScript, "204 20000 100663296", 30*time.Second)
	})

	t.Run("a resize that does not fit waits", func(t *testing.T) {
		node, err := n.NodeObject()
		if err != nil {
			t.Fatal(err)
		}
		allocatable := node.Status.Allocatable[v1.ResourceCPU]
		// Beyond the node's allocatable: upstream's API server refuses it
		// (PodResizeValidator) before the node sees it; were it to pass,
		// the node would leave it pending as Infeasible.
		small := n.Sleeper("c")
		small.Resources = resources("100m", "", "", "")
		n.Run(t, n.NewPod("small", nil, small))
		huge := resource.NewMilliQuantity(allocatable.MilliValue()*2, resource.DecimalSI).String()
		if _, err := resize(t, n, "small", "c", resources(huge, "", "", "")); err == nil {
			agent.Eventually(t, "infeasible", 30*time.Second, func() error {
				p, err := n.Get("small")
				if err != nil {
					return err
				}
				if c := condition(p, v1.PodResizePending); c == nil || c.Reason != v1.PodReasonInfeasible {
					return fmt.Errorf("PodResizePending %+v", c)
				}
				return nil
			})
		} else if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node didn't have enough allocatable resources") {
			t.Fatalf("resize beyond allocatable: %v", err)
		}

		// Beyond what the other pods leave: Deferred, with upstream's
		// message, until they go.
		used := int64(0)
		pods, err := n.Admin.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodRunning || p.Status.Phase == v1.PodPending {
				for _, c := range p.Spec.Containers {
					used += c.Resources.Requests.Cpu().MilliValue()
				}
			}
		}
		hogCPU := allocatable.MilliValue() - used - 200
		if hogCPU <= 0 {
			t.Skipf("no CPU left on the node to fill (allocatable %dm, used %dm)", allocatable.MilliValue(), used)
		}
		hog := n.Sleeper("c")
		hog.Resources = resources(strconv.FormatInt(hogCPU, 10)+"m", "", "", "")
		n.Run(t, n.NewPod("hog", nil, hog))
		want := resources("500m", "", "", "")
		if _, err := resize(t, n, "small", "c", want); err != nil {
			t.Fatalf("resize: %v", err)
		}
		agent.Eventually(t, "deferred", 30*time.Second, func() error {
			p, err := n.Get("small")
			if err != nil {
				return err
			}
			c := condition(p, v1.PodResizePending)
			if c == nil || c.Reason != v1.PodReasonDeferred || !strings.HasPrefix(c.Message, "Node didn't have enough resource: cpu, requested: 500") {
				return fmt.Errorf("PodResizePending %+v", c)
			}
			if c.ObservedGeneration != p.Generation || p.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("generation %d observed %d, condition's %d", p.Generation, p.Status.ObservedGeneration, c.ObservedGeneration)
			}
			if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].AllocatedResources.Cpu().MilliValue() != 100 {
				return fmt.Errorf("allocated %v", cs)
			}
			return nil
		})
		n.Expect(t, "small", "c", "cat /sys/fs/cgroup/cpu/cpu.shares", "102")
		n.Event(t, "small", "ResizeDeferred", "Node didn't have enough resource: cpu")
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), "hog", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		resized(t, n, "small", "c", want)
		n.EventuallySees(t, "small", "c", "cat /sys/fs/cgroup/cpu/cpu.shares", "512", 30*time.Second)
	})
}

// podCgroupLimit waits until the memory limit of the pod's cgroup, found
// on the host below the cgroup v1 memory hierarchy wherever the layout
// puts it (kubepods, or its QoS child), is want.
func podCgroupLimit(t *testing.T, pod *v1.Pod, want string) {
	t.Helper()
	q := resource.MustParse(want)
	agent.Eventually(t, "pod cgroup memory limit "+want, 30*time.Second, func() error {
		var dirs []string
		for _, pattern := range []string{"/sys/fs/cgroup/memory/*/pod%s", "/sys/fs/cgroup/memory/*/*/pod%s", "/sys/fs/cgroup/memory/*/*/*/pod%s"} {
			m, _ := filepath.Glob(fmt.Sprintf(pattern, pod.UID))
			dirs = append(dirs, m...)
		}
		if len(dirs) != 1 {
			return fmt.Errorf("pod cgroups %v", dirs)
		}
		raw, err := os.ReadFile(filepath.Join(dirs[0], "memory.limit_in_bytes"))
		if err != nil {
			return err
		}
		if got := strings.TrimSpace(string(raw)); got != strconv.FormatInt(q.Value(), 10) {
			return fmt.Errorf("%s: %s", dirs[0], got)
		}
		return nil
	})
}
