package podruntime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func resList(cpu, mem string) v1.ResourceList {
	out := v1.ResourceList{}
	if cpu != "" {
		out[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

// TestOOMScoreAdj checks upstream's GetContainerOOMScoreAdjust, with its
// node-critical and sidecar rules, on a node of 10 GB.
func TestOOMScoreAdj(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	prio := int32(2000001000)
	ctr := func(name, mem string) v1.Container {
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: resList("100m", mem)}}
	}
	sidecar := ctr("side", "1G")
	sidecar.RestartPolicy = &always
	tests := []struct {
		name      string
		pod       v1.Pod
		container int // index in Containers, or -1 for the first init container
		want      int64
	}{
		{"burstable 10%", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", "1G")}}}, 0, 900},
		{"burstable tiny request", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", "1")}}}, 0, 999},
		{"burstable over capacity", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", "20G")}}}, 0, 3},
		{"sidecar no higher than the smallest container", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{sidecar},
			Containers: []v1.Container{ctr("a", "3G"), ctr("b", "2G")}}}, -1, 800},
		{"sidecar larger than the containers", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{func() v1.Container {
			s := sidecar
			s.Resources.Requests = resList("100m", "5G")
			return s
		}()}, Containers: []v1.Container{ctr("a", "2G")}}}, -1, 500},
		{"node-critical static pod", v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/config.source": "file"}},
			Spec: v1.PodSpec{PriorityClassName: "system-node-critical", Containers: []v1.Container{ctr("a", "1G")}}}, 0, -997},
		{"node-critical by priority", v1.Pod{Spec: v1.PodSpec{PriorityClassName: "system-node-critical", Priority: &prio,
			Containers: []v1.Container{ctr("a", "")}}}, 0, -997},
		{"system-node-critical class without critical priority", v1.Pod{Spec: v1.PodSpec{PriorityClassName: "system-node-critical",
			Containers: []v1.Container{ctr("a", "1G")}}}, 0, 900},
		{"pod-level request shared", v1.Pod{Spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: resList("1", "4G")},
			Containers: []v1.Container{ctr("a", "1G"), ctr("b", "1G")}}}, 0, 800},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *v1.Container
			if tt.container >= 0 {
				c = &tt.pod.Spec.Containers[tt.container]
			} else {
				c = &tt.pod.Spec.InitContainers[0]
			}
			got, err := oomScoreAdj(&tt.pod, c, Options{NodeMemoryCapacity: 10_000_000_000})
			if err != nil || got != tt.want {
				t.Errorf("oomScoreAdj = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestCFSQuota(t *testing.T) {
	for _, tc := range []struct {
		name                string
		limitMilli          int64
		noQuota             bool
		period              time.Duration
		wantPeriod, wantQuo int64
	}{
		{"limit, default period", 1500, false, 0, 100000, 150000},
		{"no limit: the period, no quota", 0, false, 0, 100000, 0},
		{"cpuCFSQuota false", 1500, true, 0, 0, 0},
		{"custom period", 500, false, 10 * time.Millisecond, 10000, 5000},
		{"at least 1 ms", 5, false, 0, 100000, 1000},
		{"at least 1 ms of a short period", 100, false, time.Millisecond, 1000, 1000},
	} {
		p, q := cfsQuota(tc.limitMilli, tc.noQuota, tc.period)
		if p != tc.wantPeriod || q != tc.wantQuo {
			t.Errorf("%s: cfsQuota = (%d, %d), want (%d, %d)", tc.name, p, q, tc.wantPeriod, tc.wantQuo)
		}
	}
}

func TestConfigureSwap(t *testing.T) {
	burstable := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
		Resources: v1.ResourceRequirements{Requests: resList("", "1Gi"), Limits: resList("", "2Gi")}}}}}
	guaranteed := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a",
		Resources: v1.ResourceRequirements{Requests: resList("1", "1Gi"), Limits: resList("1", "1Gi")}}}}}
	critical := burstable.DeepCopy()
	prio := int32(systemCriticalPriority)
	critical.Spec.Priority = &prio
	limited := Swap{Controller: true, Behavior: "LimitedSwap", Capacity: 2 << 30, MemoryCapacity: 8 << 30}
	for _, tc := range []struct {
		name          string
		pod           *v1.Pod
		swap          Swap
		v2            bool
		wantSwapLimit int64  // v1's MemorySwapLimitInBytes
		wantSwapMax   string // v2's memory.swap.max, "" unset
	}{
		{"no swap controller", burstable, Swap{Behavior: "LimitedSwap"}, true, 0, ""},
		{"v1: memory+swap limit = memory limit", burstable, limited, false, 2 << 30, ""},
		{"v2 NoSwap", burstable, Swap{Controller: true, Behavior: "NoSwap"}, true, 0, "0"},
		{"v2 default: none", burstable, Swap{Controller: true}, true, 0, "0"},
		{"v2 LimitedSwap: request's share of the node's swap", burstable, limited, true, 0, "268435456"},
		{"v2 LimitedSwap, Guaranteed: none", guaranteed, limited, true, 0, "0"},
		{"v2 LimitedSwap, critical: none", critical, limited, true, 0, "0"},
	} {
		r := &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: tc.pod.Spec.Containers[0].Resources.Limits.Memory().Value()}
		configureSwap(r, tc.pod, &tc.pod.Spec.Containers[0], tc.swap, tc.v2)
		if r.MemorySwapLimitInBytes != tc.wantSwapLimit || r.Unified["memory.swap.max"] != tc.wantSwapMax {
			t.Errorf("%s: swap limit %d, memory.swap.max %q; want %d, %q", tc.name, r.MemorySwapLimitInBytes, r.Unified["memory.swap.max"], tc.wantSwapLimit, tc.wantSwapMax)
		}
	}
}

func TestOOMGroup(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}
	for _, tc := range []struct {
		v2, single bool
		want       string
	}{{true, false, "1"}, {true, true, ""}, {false, false, ""}, {false, true, ""}} {
		r, err := containerResources(pod, &pod.Spec.Containers[0], Options{CgroupV2: tc.v2, SingleProcessOOMKill: tc.single})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Unified["memory.oom.group"]; got != tc.want {
			t.Errorf("v2 %v singleProcessOOMKill %v: memory.oom.group %q, want %q", tc.v2, tc.single, got, tc.want)
		}
	}
}
