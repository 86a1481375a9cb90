// Package cgroups runs actorlet as the environment's node against the
// real kube-apiserver and containerd (issue #21) and reads back from
// /sys/fs/cgroup the cgroup tree it makes for a Guaranteed, a Burstable
// and a BestEffort pod: the QoS cgroups below kubepods, each pod's cgroup
// with its limits (CPU shares and quota, memory limit, pids.max from
// podPidsLimit), kubepods bounded by allocatable (kubeReserved set), and
// the pod cgroups removed once the pods are deleted. The node runs below a
// cgroupRoot of its own, so that it shares no cgroup with the
// environment's other nodes. cgroup v1 (this machine's).
package cgroups

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
)

var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

const cgroupfs = "/sys/fs/cgroup"

// hierarchy is a v1 hierarchy's directory, following the cpu ->
// cpu,cpuacct links of machines that join them.
func hierarchy(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(filepath.Join(cgroupfs, name))
	if err != nil {
		t.Skipf("no cgroup v1 %s hierarchy: %v", name, err)
	}
	return dir
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// removeTree removes the cgroup tree at dir, deepest first.
func removeTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir)
}

func TestQoSCgroups(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupfs, "cgroup.controllers")); err == nil {
		t.Skip("cgroup v2: this test reads cgroup v1 files")
	}
	cpu, mem, pids := hierarchy(t, "cpu"), hierarchy(t, "memory"), hierarchy(t, "pids")
	root := "/actorlet-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() {
		for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio", "devices", "freezer",
			"net_cls", "net_prio", "perf_event", "rdma", "systemd"} {
			if dir, err := filepath.EvalSymlinks(filepath.Join(cgroupfs, h)); err == nil {
				removeTree(filepath.Join(dir, root))
			}
		}
	})
	n := agent.NewAPIPods(t, binary, agent.WithConfig(fmt.Sprintf(`cgroupRoot: %s
kubeReserved:
  cpu: 500m
  memory: 1Gi
podPidsLimit: 128
`, root)))
	n.Up(t, "cgroups")
	kubepods := filepath.Join(root, "kubepods")

	node, err := n.NodeObject()
	if err != nil {
		t.Fatal(err)
	}
	// kubepods: capacity minus kubeReserved (upstream's
	// getNodeAllocatableAbsolute: the hard eviction threshold stays
	// usable by pods); the kernel rounds the limit down to pages.
	page := int64(os.Getpagesize())
	capMem := node.Status.Capacity.Memory().Value()
	capCPU := node.Status.Capacity.Cpu().MilliValue()
	if capCPU != int64(runtime.NumCPU())*1000 {
		t.Logf("capacity %dm CPU, NumCPU %d", capCPU, runtime.NumCPU())
	}
	shares := func(milli int64) int64 { return max(milli*1024/1000, 2) }
	agent.Eventually(t, "kubepods bounded by allocatable", 10*time.Second, cgroupFiles(map[string]int64{
		filepath.Join(mem, kubepods, "memory.limit_in_bytes"):    (capMem - 1<<30) / page * page,
		filepath.Join(cpu, kubepods, "cpu.shares"):               shares(capCPU - 500),
		filepath.Join(cpu, kubepods, "besteffort", "cpu.shares"): 2,
	}))

	res := func(cpu, mem string) v1.ResourceList {
		out := v1.ResourceList{}
		if cpu != "" {
			out[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			out[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return out
	}
	guaranteed := n.Sleeper("c")
	guaranteed.Resources = v1.ResourceRequirements{Requests: res("200m", "64Mi"), Limits: res("200m", "64Mi")}
	burstable := n.Sleeper("c")
	burstable.Resources = v1.ResourceRequirements{Requests: res("100m", "32Mi"), Limits: res("300m", "")}
	pods := map[v1.PodQOSClass]*v1.Pod{
		v1.PodQOSGuaranteed: n.Run(t, n.NewPod("guaranteed", nil, guaranteed)),
		v1.PodQOSBurstable:  n.Run(t, n.NewPod("burstable", nil, burstable)),
		v1.PodQOSBestEffort: n.Run(t, n.NewPod("besteffort", nil, n.Sleeper("c"))),
	}
	dirs := map[v1.PodQOSClass]string{}
	for class, p := range pods {
		if p.Status.QOSClass != class {
			t.Errorf("pod %s: QoS class %s, want %s", p.Name, p.Status.QOSClass, class)
		}
		parent := kubepods
		if class != v1.PodQOSGuaranteed {
			parent = filepath.Join(kubepods, strings.ToLower(string(class)))
		}
		dirs[class] = filepath.Join(parent, "pod"+string(p.UID))
		// The pod's container runs in its cgroup: the runtime made the
		// container's cgroup below it.
		entries, err := os.ReadDir(filepath.Join(mem, dirs[class]))
		if err != nil {
			t.Errorf("pod %s: cgroup: %v", p.Name, err)
			continue
		}
		children := 0
		for _, e := range entries {
			if e.IsDir() {
				children++
			}
		}
		if children == 0 {
			t.Errorf("pod %s: no container cgroup below %s", p.Name, dirs[class])
		}
	}
	g, b, be := dirs[v1.PodQOSGuaranteed], dirs[v1.PodQOSBurstable], dirs[v1.PodQOSBestEffort]
	const unlimited = 9223372036854771712 // v1's memory.limit_in_bytes without a limit
	agent.Eventually(t, "pod cgroups with their limits", 10*time.Second, cgroupFiles(map[string]int64{
		filepath.Join(cpu, g, "cpu.shares"):                     204,
		filepath.Join(cpu, g, "cpu.cfs_quota_us"):               20000,
		filepath.Join(cpu, g, "cpu.cfs_period_us"):              100000,
		filepath.Join(mem, g, "memory.limit_in_bytes"):          64 << 20,
		filepath.Join(pids, g, "pids.max"):                      128,
		filepath.Join(cpu, b, "cpu.shares"):                     102,
		filepath.Join(cpu, b, "cpu.cfs_quota_us"):               30000,
		filepath.Join(mem, b, "memory.limit_in_bytes"):          unlimited,
		filepath.Join(pids, b, "pids.max"):                      128,
		filepath.Join(cpu, be, "cpu.shares"):                    2,
		filepath.Join(cpu, be, "cpu.cfs_quota_us"):              -1,
		filepath.Join(mem, be, "memory.limit_in_bytes"):         unlimited,
		filepath.Join(pids, be, "pids.max"):                     128,
		filepath.Join(cpu, kubepods, "burstable", "cpu.shares"): 102,
	}))

	for _, p := range pods {
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agent.Eventually(t, "burstable shares back to the minimum", 60*time.Second, cgroupFiles(map[string]int64{
		filepath.Join(cpu, kubepods, "burstable", "cpu.shares"): 2,
	}))
	// The garbage collector removes a pod's cgroup once the runtime
	// holds nothing of it, at its next pass (a minute apart).
	agent.Eventually(t, "pod cgroups removed", 3*time.Minute, func() error {
		for _, d := range []string{g, b, be} {
			for _, h := range []string{cpu, mem, pids} {
				if _, err := os.Stat(filepath.Join(h, d)); err == nil {
					return fmt.Errorf("%s still exists", filepath.Join(h, d))
				}
			}
		}
		return nil
	})
	for _, d := range []string{kubepods, filepath.Join(kubepods, "burstable"), filepath.Join(kubepods, "besteffort")} {
		if _, err := os.Stat(filepath.Join(mem, d)); err != nil {
			t.Errorf("QoS cgroup %s gone: %v", d, err)
		}
	}
}

// TestResourceFields runs the node with cpuCFSQuota false, podsPerCore 1,
// qosReserved (QOSReserved) and kubeletCgroups, and reads back what each
// did: no CFS quota in the pod's and its container's cgroups, pods
// capacity of one per CPU, the burstable cgroup's memory limit lowered by
// half the Guaranteed pod's request, the agent in its own cgroup, and the
// container's memory+swap limit at its memory limit (swap controller).
func TestResourceFields(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupfs, "cgroup.controllers")); err == nil {
		t.Skip("cgroup v2: this test reads cgroup v1 files")
	}
	cpu, mem := hierarchy(t, "cpu"), hierarchy(t, "memory")
	root := "/actorlet-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	self := filepath.Join(root, "actorlet")
	t.Cleanup(func() {
		for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "blkio", "devices", "freezer",
			"net_cls", "net_prio", "perf_event", "rdma", "systemd"} {
			if dir, err := filepath.EvalSymlinks(filepath.Join(cgroupfs, h)); err == nil {
				removeTree(filepath.Join(dir, root))
			}
		}
	})
	n := agent.NewAPIPods(t, binary, agent.WithConfig(fmt.Sprintf(`cgroupRoot: %s
cpuCFSQuota: false
podsPerCore: 1
kubeletCgroups: %s
featureGates: {QOSReserved: true}
qosReserved: {memory: 50%%}
`, root, self)))
	n.Up(t, "rescfg")
	node, err := n.NodeObject()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := node.Status.Capacity.Pods().Value(), int64(min(runtime.NumCPU(), 110)); got != want {
		t.Errorf("pods capacity %d, want %d (podsPerCore 1)", got, want)
	}
	procs, _ := os.ReadFile(filepath.Join(mem, self, "cgroup.procs"))
	if !strings.Contains(" "+strings.Join(strings.Fields(string(procs)), " ")+" ", fmt.Sprintf(" %d ", n.Proc.PID())) {
		t.Errorf("kubeletCgroups %s holds %q, not the agent (%d)", self, procs, n.Proc.PID())
	}

	c := n.Sleeper("c")
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("64Mi")}}
	p := n.Run(t, n.NewPod("guaranteed", nil, c))
	pod := filepath.Join(root, "kubepods", "pod"+string(p.UID))
	// The pod cgroup holds the sandbox's and the container's cgroups: each
	// without quota; the container's (the one with the memory limit) with
	// its memory+swap limit at it.
	var ctrs []string
	if entries, err := os.ReadDir(filepath.Join(cpu, pod)); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				ctrs = append(ctrs, filepath.Join(pod, e.Name()))
			}
		}
	}
	if len(ctrs) == 0 {
		t.Fatalf("no container cgroup below %s", pod)
	}
	want := map[string]int64{filepath.Join(cpu, pod, "cpu.cfs_quota_us"): -1}
	limited := 0
	for _, c := range ctrs {
		want[filepath.Join(cpu, c, "cpu.cfs_quota_us")] = -1
		if l, err := readInt(filepath.Join(mem, c, "memory.limit_in_bytes")); err == nil && l == 64<<20 {
			limited++
			if _, err := os.Stat(filepath.Join(mem, "memory.memsw.limit_in_bytes")); err == nil {
				want[filepath.Join(mem, c, "memory.memsw.limit_in_bytes")] = 64 << 20
			}
		}
	}
	if limited != 1 {
		t.Errorf("%d container cgroups below %s with the 64Mi memory limit, want 1", limited, pod)
	}
	// The burstable cgroup: allocatable (capacity here) less half the
	// Guaranteed pod's memory request, rounded down to pages.
	page := int64(os.Getpagesize())
	want[filepath.Join(mem, root, "kubepods", "burstable", "memory.limit_in_bytes")] = (node.Status.Capacity.Memory().Value() - 32<<20) / page * page
	agent.Eventually(t, "the resource fields in the cgroups", 10*time.Second, cgroupFiles(want))
}

// cgroupFiles checks that each cgroup file holds its number.
func cgroupFiles(want map[string]int64) func() error {
	return func() error {
		var bad []string
		for p, v := range want {
			got, err := readInt(p)
			if err != nil {
				bad = append(bad, err.Error())
			} else if got != v {
				bad = append(bad, fmt.Sprintf("%s = %d, want %d", p, got, v))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s", strings.Join(bad, "; "))
		}
		return nil
	}
}
