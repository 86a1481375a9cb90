package evictionpolicy

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// rpod is a pod named name whose one container requests memory and
// ephemeral storage (empty: none), with priority prio.
func rpod(name, memReq, diskReq string, prio int32) *v1.Pod {
	req := v1.ResourceList{}
	if memReq != "" {
		req[v1.ResourceMemory] = resource.MustParse(memReq)
	}
	if diskReq != "" {
		req[v1.ResourceEphemeralStorage] = resource.MustParse(diskReq)
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

// rstats is a pod's statistics: its container's memory working set, its
// writable layer and logs, and its processes.
func rstats(name string, memMi, rootMi, logsMi uint64, procs uint64) statsapi.PodStats {
	mi := func(v uint64) *uint64 { return u64(v << 20) }
	return statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, UID: name},
		Memory:       &statsapi.MemoryStats{WorkingSetBytes: mi(memMi)},
		ProcessStats: &statsapi.ProcessStats{ProcessCount: &procs},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: mi(memMi)},
			Rootfs: &statsapi.FsStats{UsedBytes: mi(rootMi)}, Logs: &statsapi.FsStats{UsedBytes: mi(logsMi)}}}}
}

func names(pods []*v1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name)
	}
	return strings.Join(s, ",")
}

func TestRank(t *testing.T) {
	tests := []struct {
		name      string
		signal    Signal
		dedicated bool
		pods      []*v1.Pod
		stats     []statsapi.PodStats
		want      string
	}{
		{"memory: BestEffort over its request first, then priority, then usage above request", SignalMemoryAvailable, false,
			[]*v1.Pod{rpod("guaranteed", "1Gi", "", 0), rpod("besteffort", "", "", 0), rpod("burstable-over", "100Mi", "", 0), rpod("high-prio", "", "", 1000)},
			[]statsapi.PodStats{rstats("guaranteed", 500, 0, 0, 1), rstats("besteffort", 50, 0, 0, 1), rstats("burstable-over", 300, 0, 0, 1), rstats("high-prio", 900, 0, 0, 1)},
			"burstable-over,besteffort,high-prio,guaranteed"},
		{"memory: a pod without statistics first", SignalMemoryAvailable, false,
			[]*v1.Pod{rpod("a", "", "", 0), rpod("nostats", "1Gi", "", 10)},
			[]statsapi.PodStats{rstats("a", 50, 0, 0, 1)}, "nostats,a"},
		{"memory: lower priority before more usage when both exceed", SignalMemoryAvailable, false,
			[]*v1.Pod{rpod("big", "", "", 100), rpod("small", "", "", 0)},
			[]statsapi.PodStats{rstats("big", 900, 0, 0, 1), rstats("small", 10, 0, 0, 1)}, "small,big"},
		{"pid: priority, then processes", SignalPIDAvailable, false,
			[]*v1.Pod{rpod("few", "", "", 0), rpod("many", "", "", 0), rpod("prio", "", "", 5)},
			[]statsapi.PodStats{rstats("few", 0, 0, 0, 2), rstats("many", 0, 0, 0, 50), rstats("prio", 0, 0, 0, 500)}, "many,few,prio"},
		{"nodefs on one filesystem: writable layers and logs count", SignalNodeFsAvailable, false,
			[]*v1.Pod{rpod("logs", "", "1Gi", 0), rpod("layer", "", "", 0), rpod("quiet", "", "", 0)},
			[]statsapi.PodStats{rstats("logs", 0, 0, 900, 1), rstats("layer", 0, 300, 0, 1), rstats("quiet", 0, 1, 0, 1)}, "layer,quiet,logs"},
		{"nodefs with a dedicated imagefs: only logs and volumes count", SignalNodeFsAvailable, true,
			[]*v1.Pod{rpod("layer", "", "", 0), rpod("logs", "", "", 0)},
			[]statsapi.PodStats{rstats("layer", 0, 900, 1, 1), rstats("logs", 0, 0, 100, 1)}, "logs,layer"},
		{"imagefs with a dedicated imagefs: writable layers count", SignalImageFsAvailable, true,
			[]*v1.Pod{rpod("logs", "", "", 0), rpod("layer", "", "", 0)},
			[]statsapi.PodStats{rstats("logs", 0, 1, 900, 1), rstats("layer", 0, 100, 0, 1)}, "layer,logs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := append([]*v1.Pod(nil), tt.pods...)
			Rank(tt.signal, pods, StatsByUID(tt.stats), tt.dedicated)
			if got := names(pods); got != tt.want {
				t.Errorf("ranked %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	obs := Observations{SignalMemoryAvailable: {Available: *q("500Mi"), Capacity: *q("10Gi")},
		SignalNodeFsAvailable: {Available: *q("1Gi"), Capacity: *q("100Gi")}}
	memT := []Threshold{{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("1Gi")}}}
	diskT := []Threshold{{Signal: SignalNodeFsAvailable, Value: Value{Percentage: 0.1, text: "10%"}}}
	stats := StatsByUID([]statsapi.PodStats{rstats("p", 300, 20, 10, 1)})
	tests := []struct {
		name       string
		res        v1.ResourceName
		pod        *v1.Pod
		thresholds []Threshold
		want       string
	}{
		{"memory, container over its request", v1.ResourceMemory, rpod("p", "100Mi", "", 0), memT,
			"The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. Container c was using 300Mi, request is 100Mi, has larger consumption of memory. "},
		{"memory, container under its request", v1.ResourceMemory, rpod("p", "1Gi", "", 0), memT,
			"The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "},
		// 10% of 100Gi in float32, as upstream: a few bytes more.
		{"disk, BestEffort", v1.ResourceEphemeralStorage, rpod("p", "", "", 0), diskT,
			"The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 1Gi. Container c was using 30Mi, request is 0, has larger consumption of ephemeral-storage. "},
		{"no statistics", v1.ResourceMemory, rpod("other", "", "", 0), memT,
			"The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.res, tt.pod, stats, tt.thresholds, obs); got != tt.want {
				t.Errorf("message\n%q, want\n%q", got, tt.want)
			}
		})
	}
	if got := ConditionMessage([]v1.NodeConditionType{v1.NodeMemoryPressure}); got != "The node had condition: [MemoryPressure]. " {
		t.Errorf("condition message %q", got)
	}
}

func TestIsCritical(t *testing.T) {
	prio := int32(2000001000)
	tests := []struct {
		name string
		pod  v1.Pod
		want bool
	}{
		{"api pod", v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{configSourceAnnotation: "api"}}}, false},
		{"plain pod", v1.Pod{}, false},
		{"static pod", v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{configSourceAnnotation: "file"}}}, true},
		{"mirror pod", v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{configMirrorAnnotation: "x"}}}, true},
		{"system-node-critical", v1.Pod{Spec: v1.PodSpec{Priority: &prio}}, true},
	}
	for _, tt := range tests {
		if got := IsCritical(&tt.pod); got != tt.want {
			t.Errorf("%s: critical %v, want %v", tt.name, got, tt.want)
		}
	}
}
