package podmanager

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

func sourcedPod(uid, source string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid,
		Annotations: map[string]string{manifest.ConfigSourceAnnotation: source}}}
}

func TestRecordPodCounts(t *testing.T) {
	a := &Actor{m: &Machine{
		pods: map[types.UID]*PodState{
			"file-running": {Pod: sourcedPod("file-running", messages.SourceFile)},
			"api-running":  {Pod: sourcedPod("api-running", messages.SourceAPI)},
			"api-deleting": {Phase: Terminating, Pod: sourcedPod("api-deleting", messages.SourceAPI), Terminate: &messages.TerminatePod{}},
			"http-done":    {Phase: Finished, Pod: sourcedPod("http-done", messages.SourceHTTP)},
			"orphan":       {Phase: Orphaned, Terminate: &messages.TerminatePod{}},
		},
		rejected: map[types.UID]*v1.Pod{"api-rejected": sourcedPod("api-rejected", messages.SourceAPI)},
	}}
	a.recordPodCounts()
	for _, c := range []struct {
		name, static string
		want         float64
	}{
		{"kubelet_desired_pods", metrics.StaticTrue, 2},  // file-running, http-done
		{"kubelet_desired_pods", metrics.StaticFalse, 3}, // api-running, api-deleting, api-rejected
		{"kubelet_active_pods", metrics.StaticTrue, 1},   // file-running
		{"kubelet_active_pods", metrics.StaticFalse, 2},  // api-running, api-deleting (still being stopped)
	} {
		vec := metrics.DesiredPods
		if c.name == "kubelet_active_pods" {
			vec = metrics.ActivePods
		}
		var m dto.Metric
		if err := vec.WithLabelValues(c.static).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != c.want {
			t.Errorf("%s{static=%q} = %v, want %v", c.name, c.static, got, c.want)
		}
	}
}

func TestAdmissionCount(t *testing.T) {
	res := func(cpu string) v1.ResourceRequirements {
		if cpu == "" {
			return v1.ResourceRequirements{}
		}
		q := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
		return v1.ResourceRequirements{Requests: q, Limits: q}
	}
	pod := func(podLevel, container, init string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: res(container)}}}}
		if init != "" {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: res(init)}}
		}
		if podLevel != "" {
			r := res(podLevel)
			p.Spec.Resources = &r
		}
		return p
	}
	storageOnly := pod("", "", "")
	storageOnly.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}
	burstable := pod("", "", "")
	burstable.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want CmdCountAdmission
	}{
		{"no resources anywhere", pod("", "", ""), CmdCountAdmission{metrics.ConfigModeNone, "besteffort"}},
		{"container requests only", burstable, CmdCountAdmission{metrics.ConfigModeContainer, "burstable"}},
		{"container requests equal to limits", pod("", "1", ""), CmdCountAdmission{metrics.ConfigModeContainer, "guaranteed"}},
		{"an init container's resources are the containers'", pod("", "", "1"), CmdCountAdmission{metrics.ConfigModeContainer, "burstable"}},
		{"pod-level resources only", pod("1", "", ""), CmdCountAdmission{metrics.ConfigModePod, "guaranteed"}},
		{"both", pod("2", "1", ""), CmdCountAdmission{metrics.ConfigModePodAndContainer, "guaranteed"}},
		// Upstream's IsPodLevelResourcesSet counts only cpu, memory and hugepages.
		{"a pod-level resource not supported there is none", storageOnly, CmdCountAdmission{metrics.ConfigModeNone, "besteffort"}},
	} {
		if got := admissionCount(tc.pod); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestAdmissionCounted: an admitted pod is counted once, a rejected one not.
func TestAdmissionCounted(t *testing.T) {
	counted := func(cmds []Command) (n int) {
		for _, c := range cmds {
			if _, ok := c.(CmdCountAdmission); ok {
				n++
			}
		}
		return n
	}
	m := newTestMachine()
	m.Step(EvStarted{First: true}, t0)
	m.Step(EvSourceSet{Source: messages.SourceFile}, t0)
	if n := counted(m.Step(set(messages.SourceAPI, testPod("a", "")), t0)); n != 1 {
		t.Errorf("admitted pod counted %d times, want 1", n)
	}
	if n := counted(m.Step(set(messages.SourceAPI, testPod("a", ""), testPod("b", "8")), t0)); n != 0 {
		t.Errorf("pod rejected for lack of cpu counted %d times, want 0", n)
	}
	if _, ok := m.rejected["b"]; !ok {
		t.Errorf("pod b was not rejected: the test's premise")
	}
}
