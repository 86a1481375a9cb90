package podruntime

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func rr(req, lim map[v1.ResourceName]string) v1.ResourceRequirements {
	out := v1.ResourceRequirements{}
	for n, q := range req {
		if out.Requests == nil {
			out.Requests = v1.ResourceList{}
		}
		out.Requests[n] = resource.MustParse(q)
	}
	for n, q := range lim {
		if out.Limits == nil {
			out.Limits = v1.ResourceList{}
		}
		out.Limits[n] = resource.MustParse(q)
	}
	return out
}

func cpuMem(cpu, mem string) map[v1.ResourceName]string {
	m := map[v1.ResourceName]string{}
	if cpu != "" {
		m[v1.ResourceCPU] = cpu
	}
	if mem != "" {
		m[v1.ResourceMemory] = mem
	}
	return m
}

func TestDecideContainerResize(t *testing.T) {
	restartCPU := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
	restartMem := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name    string
		applied *v1.ResourceRequirements
		desired v1.ResourceRequirements
		policy  []v1.ContainerResizePolicy
		want    resizeAction
	}{
		{"unknown applied resources: nothing", nil, rr(cpuMem("1", ""), nil), nil, resizeNone},
		{"same resources", ptrTo(rr(cpuMem("1", "1Gi"), nil)), rr(cpuMem("1", "1Gi"), nil), nil, resizeNone},
		{"equal quantities written differently", ptrTo(rr(cpuMem("1000m", ""), nil)), rr(cpuMem("1", ""), nil), nil, resizeNone},
		{"cpu request changed: update", ptrTo(rr(cpuMem("100m", ""), nil)), rr(cpuMem("200m", ""), nil), nil, resizeUpdate},
		{"cpu limit added: update", ptrTo(rr(cpuMem("100m", ""), nil)), rr(cpuMem("100m", ""), cpuMem("200m", "")), nil, resizeUpdate},
		{"memory limit added: update", ptrTo(rr(cpuMem("", "10Mi"), nil)), rr(cpuMem("", "10Mi"), cpuMem("", "50Mi")), nil, resizeUpdate},
		{"equivalent cpu 2m to 1m: update", ptrTo(rr(cpuMem("2m", ""), nil)), rr(cpuMem("1m", ""), nil), nil, resizeUpdate},
		{"cpu changed, cpu policy restart", ptrTo(rr(cpuMem("100m", ""), nil)), rr(cpuMem("200m", ""), nil), restartCPU, resizeRestart},
		{"cpu changed, memory policy restart: update", ptrTo(rr(cpuMem("100m", "1Gi"), nil)), rr(cpuMem("200m", "1Gi"), nil), restartMem, resizeUpdate},
		{"memory changed, memory policy restart", ptrTo(rr(cpuMem("100m", "1Gi"), nil)), rr(cpuMem("100m", "2Gi"), nil), restartMem, resizeRestart},
		{"zero request against none", ptrTo(rr(nil, nil)), rr(cpuMem("0", ""), nil), nil, resizeNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "c", Resources: tc.desired, ResizePolicy: tc.policy}
			if got := decideContainerResize(c, tc.applied); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func resizePod(generation int64, cs ...v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: cs}}
	p.UID, p.Name, p.Namespace, p.Generation = "u", "p", "ns", generation
	return p
}

func runningStatus(resources ...*v1.ResourceRequirements) *PodStatus {
	s := &PodStatus{UID: "u", SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY}}}
	for i, r := range resources {
		s.ContainerStatuses = append(s.ContainerStatuses, &ContainerStatus{ID: "id" + string(rune('a'+i)), Name: "c" + string(rune('a'+i)),
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, SandboxID: "sb", Resources: r})
	}
	return s
}

func TestComputePodActionsResize(t *testing.T) {
	now := time.Unix(1000, 0)
	desired := rr(cpuMem("200m", ""), nil)
	old := rr(cpuMem("100m", ""), nil)
	restart := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name                  string
		pod                   *v1.Pod
		status                *PodStatus
		wantResize, wantStart []int
		wantKill              int
	}{
		{"at its allocation: nothing", resizePod(1, v1.Container{Name: "ca", Resources: desired}), runningStatus(&desired), nil, nil, 0},
		{"differs: resized in place", resizePod(2, v1.Container{Name: "ca", Resources: desired}), runningStatus(&old), []int{0}, nil, 0},
		{"differs with RestartContainer: restarted", resizePod(2, v1.Container{Name: "ca", Resources: desired, ResizePolicy: restart}), runningStatus(&old), nil, []int{0}, 1},
		{"second of two differs", resizePod(2, v1.Container{Name: "ca", Resources: desired}, v1.Container{Name: "cb", Resources: desired}), runningStatus(&desired, &old), []int{1}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.Spec.RestartPolicy = v1.RestartPolicyAlways
			for i := range tc.pod.Spec.Containers {
				tc.status.ContainerStatuses[i].Hash = HashContainer(&tc.pod.Spec.Containers[i])
			}
			a := ComputePodActions(tc.pod, tc.status, nil, nil, now)
			if !slices.Equal(a.ContainersToResize, tc.wantResize) || !slices.Equal(a.ContainersToStart, tc.wantStart) || len(a.ContainersToKill) != tc.wantKill {
				t.Errorf("got resize %v start %v kill %v, want %v %v %d", a.ContainersToResize, a.ContainersToStart, a.ContainersToKill, tc.wantResize, tc.wantStart, tc.wantKill)
			}
			if tc.wantKill > 0 && a.ContainersToKill[0].Message != "Container ca resize requires restart" {
				t.Errorf("kill message %q", a.ContainersToKill[0].Message)
			}
			if got := a.none(); got != (tc.wantResize == nil && tc.wantStart == nil) {
				t.Errorf("none() = %v", got)
			}
		})
	}
}

func TestSetResizeInProgress(t *testing.T) {
	now := time.Unix(1000, 0)
	desired := rr(cpuMem("200m", ""), nil)
	old := rr(cpuMem("100m", ""), nil)
	pod := resizePod(3, v1.Container{Name: "ca", Resources: desired})
	for _, tc := range []struct {
		name       string
		status     *PodStatus
		err        error
		wantReason string
		want       bool
	}{
		{"applied", runningStatus(&desired), nil, "", false},
		{"not yet applied", runningStatus(&old), nil, "", true},
		{"failed", runningStatus(&old), errors.New("boom"), v1.PodReasonError, true},
		{"unknown applied resources", runningStatus(nil), nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady}, {Type: v1.PodResizeInProgress}}}
			setResizeInProgress(&out, pod, tc.status, tc.err, nil, now)
			var got *v1.PodCondition
			n := 0
			for i := range out.Conditions {
				if out.Conditions[i].Type == v1.PodResizeInProgress {
					got = &out.Conditions[i]
					n++
				}
			}
			if (got != nil) != tc.want || n > 1 {
				t.Fatalf("conditions %+v", out.Conditions)
			}
			if got != nil && (got.Reason != tc.wantReason || got.ObservedGeneration != 3 || got.Status != v1.ConditionTrue) {
				t.Errorf("condition %+v", got)
			}
		})
	}
}

func TestGrownPod(t *testing.T) {
	pod := resizePod(2, v1.Container{Name: "ca", Resources: rr(cpuMem("200m", "64Mi"), cpuMem("1", "64Mi"))})
	status := runningStatus(ptrTo(rr(cpuMem("100m", "128Mi"), cpuMem("", "128Mi"))))
	g := grownPod(pod, status, []*v1.Container{&pod.Spec.Containers[0]})
	r := g.Spec.Containers[0].Resources
	if q := r.Requests[v1.ResourceCPU]; q.MilliValue() != 200 {
		t.Errorf("cpu request %v", q.String())
	}
	if q := r.Requests[v1.ResourceMemory]; q.Value() != 128<<20 {
		t.Errorf("memory request %v", q.String())
	}
	if _, ok := r.Limits[v1.ResourceCPU]; ok {
		t.Errorf("cpu limit kept though the running container has none: %v", r.Limits)
	}
	if q := r.Limits[v1.ResourceMemory]; q.Value() != 128<<20 {
		t.Errorf("memory limit %v", q.String())
	}
}

func TestActuatedResourcesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	a, err := NewActuatedResources(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rr(cpuMem("100m", "1Gi"), cpuMem("", "1Gi"))
	r.Requests[v1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
	if err := a.set("u", "c", "id1", r); err != nil {
		t.Fatal(err)
	}
	b, err := NewActuatedResources(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := b.get("u", "c", "id1")
	if got == nil || len(got.Requests) != 2 {
		t.Fatalf("after reload: %+v", got)
	}
	// Upstream's format: its data and checksum, the containers' resources
	// where upstream's kubelet reads them.
	raw, err := os.ReadFile(filepath.Join(dir, ActuatedPodsStateFile))
	if err != nil {
		t.Fatal(err)
	}
	var cp Checkpoint
	var info struct {
		Entries map[string]struct {
			ContainerResources map[string]v1.ResourceRequirements
		} `json:"entries"`
	}
	if json.Unmarshal(raw, &cp) != nil || cp.Checksum != CheckpointChecksum(cp.Data) || json.Unmarshal([]byte(cp.Data), &info) != nil ||
		len(info.Entries["u"].ContainerResources["c"].Requests) != 2 {
		t.Errorf("not upstream's format: %s", raw)
	}
	// An earlier actorlet's file.
	legacy := `{"u":{"c":{"containerID":"id9","resources":{"requests":{"cpu":"1"}}}}}`
	if err := os.WriteFile(filepath.Join(dir, ActuatedPodsStateFile), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := NewActuatedResources(dir); err != nil || l.get("u", "c", "id9") == nil {
		t.Errorf("an earlier actorlet's checkpoint: %v", err)
	}
	if err := a.set("u", "c", "id1", r); err != nil {
		t.Fatal(err)
	}
	if b.get("u", "c", "id2") != nil {
		t.Error("another instance's record was returned")
	}
	if err := b.Forget("u"); err != nil {
		t.Fatal(err)
	}
	c, _ := NewActuatedResources(dir)
	if c.get("u", "c", "id1") != nil {
		t.Error("forgotten pod still recorded")
	}
	if _, err := NewActuatedResources(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing file: %v", err)
	}
	var none *ActuatedResources
	if none.get("u", "c", "id1") != nil || none.set("u", "c", "id", r) != nil || none.Forget("u") != nil {
		t.Error("a nil store must know nothing and fail nothing")
	}
}

func TestComputePodActionsSidecarResize(t *testing.T) {
	now := time.Unix(1000, 0)
	desired := rr(cpuMem("200m", ""), nil)
	old := rr(cpuMem("100m", ""), nil)
	always := v1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name        string
		policy      []v1.ContainerResizePolicy
		wantResize  []int
		wantRestart bool
	}{
		{"sidecar resized in place", nil, []int{0}, false},
		{"sidecar restarted by its policy", []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := resizePod(2, v1.Container{Name: "ca", Resources: desired})
			pod.Spec.RestartPolicy = v1.RestartPolicyAlways
			pod.Spec.InitContainers = []v1.Container{{Name: "side", Resources: desired, RestartPolicy: &always, ResizePolicy: tc.policy}}
			status := runningStatus(&desired)
			status.ContainerStatuses[0].Hash = HashContainer(&pod.Spec.Containers[0])
			status.ContainerStatuses = append(status.ContainerStatuses, &ContainerStatus{ID: "side1", Name: "side",
				State: runtimeapi.ContainerState_CONTAINER_RUNNING, SandboxID: "sb", Resources: &old,
				Hash: HashContainer(&pod.Spec.InitContainers[0])})
			a := ComputePodActions(pod, status, nil, nil, now)
			if !slices.Equal(a.InitContainersToResize, tc.wantResize) || len(a.ContainersToResize) != 0 {
				t.Errorf("resize init %v app %v", a.InitContainersToResize, a.ContainersToResize)
			}
			restarted := len(a.ContainersToKill) == 1 && a.ContainersToKill[0].Name == "side" && slices.Equal(a.InitContainersToStart, []int{0})
			if restarted != tc.wantRestart || a.UpdatePodResources != tc.wantRestart {
				t.Errorf("kill %v start %v updatePod %v", a.ContainersToKill, a.InitContainersToStart, a.UpdatePodResources)
			}
			if !resizeInProgress(pod, status) {
				t.Error("a sidecar off its allocation is no resize in progress")
			}
		})
	}
}
