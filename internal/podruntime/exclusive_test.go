package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/internal/cpumanager"
)

// TestExclusiveCPUsLiftQuota checks upstream's
// DisableCPUQuotaWithExclusiveCPUs (locked on): a container holding
// exclusive CPUs keeps its CFS period and gets an unlimited quota; one
// without them keeps its quota; with cpuCFSQuota false neither is set.
func TestExclusiveCPUsLiftQuota(t *testing.T) {
	view := &cpumanager.View{}
	view.Set(cpumanager.State{Policy: cpumanager.PolicyStatic, Default: cpuset.New(0),
		Entries: map[string]map[string]cpuset.CPUSet{"uid-1": {"pinned": cpuset.New(1)}}})
	for _, tc := range []struct {
		name                  string
		container             string
		noQuota               bool
		view                  *cpumanager.View
		wantPeriod, wantQuota int64
	}{
		{"exclusive CPUs", "pinned", false, view, 100000, -1},
		{"the shared pool", "shared", false, view, 100000, 100000},
		{"no CPU manager", "pinned", false, nil, 100000, 100000},
		{"cpuCFSQuota false", "pinned", true, view, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			c := &pod.Spec.Containers[0]
			c.Name = tc.container
			one := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("64Mi")}
			c.Resources = v1.ResourceRequirements{Requests: one, Limits: one}
			r, err := containerResources(pod, c, Options{NodeMemoryCapacity: 2 << 30, CPUSets: tc.view, NoCPUCFSQuota: tc.noQuota})
			if err != nil {
				t.Fatal(err)
			}
			if r.CpuPeriod != tc.wantPeriod || r.CpuQuota != tc.wantQuota {
				t.Errorf("period %d quota %d, want %d %d", r.CpuPeriod, r.CpuQuota, tc.wantPeriod, tc.wantQuota)
			}
		})
	}
}
