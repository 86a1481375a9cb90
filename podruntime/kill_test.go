package podruntime

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// created is a container that was created and never started.
const created = runtimeapi.ContainerState_CONTAINER_CREATED

func TestRanToCompletion(t *testing.T) {
	instance := func(name string, state runtimeapi.ContainerState, code int32) *ContainerStatus {
		return &ContainerStatus{ID: name + "-id", Name: name, State: state, ExitCode: code}
	}
	spec := func(policy v1.RestartPolicy, names ...string) *v1.Pod {
		pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy}}
		for _, n := range names {
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n})
		}
		return pod
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		instances []*ContainerStatus
		want      bool
	}{
		{"Never, every container exited", spec(v1.RestartPolicyNever, "a", "b"),
			[]*ContainerStatus{instance("a", exited, 0), instance("b", exited, 2)}, true},
		{"Never, one still running", spec(v1.RestartPolicyNever, "a", "b"),
			[]*ContainerStatus{instance("a", exited, 0), instance("b", running, 0)}, false},
		{"Never, one never created", spec(v1.RestartPolicyNever, "a", "b"),
			[]*ContainerStatus{instance("a", exited, 0)}, false},
		{"OnFailure, every container succeeded", spec(v1.RestartPolicyOnFailure, "a"),
			[]*ContainerStatus{instance("a", exited, 0)}, true},
		{"OnFailure, a failure restarts", spec(v1.RestartPolicyOnFailure, "a"),
			[]*ContainerStatus{instance("a", exited, 1)}, false},
		{"Always never completes", spec(v1.RestartPolicyAlways, "a"),
			[]*ContainerStatus{instance("a", exited, 0)}, false},
		{"Never, created but not started", spec(v1.RestartPolicyNever, "a"),
			[]*ContainerStatus{instance("a", created, 0)}, false},
		{"an orphan (no spec)", metaPod("u", "p", "ns"),
			[]*ContainerStatus{instance("a", exited, 0)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ranToCompletion(tc.pod, &PodStatus{ContainerStatuses: tc.instances}); got != tc.want {
				t.Errorf("ranToCompletion = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeadInstancesBeyond(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Newest first, as GetPodStatus sorts them.
	status := &PodStatus{ContainerStatuses: []*ContainerStatus{
		{ID: "a4", Name: "a", State: running, CreatedAt: base.Add(4 * time.Minute)},
		{ID: "a3", Name: "a", State: exited, CreatedAt: base.Add(3 * time.Minute)},
		{ID: "b2", Name: "b", State: exited, CreatedAt: base.Add(2 * time.Minute)},
		{ID: "a2", Name: "a", State: exited, CreatedAt: base.Add(2 * time.Minute)},
		{ID: "a1", Name: "a", State: exited, CreatedAt: base.Add(time.Minute)},
		{ID: "c1", Name: "c", State: created, CreatedAt: base},
	}}
	for _, tc := range []struct {
		keep int
		want []string
	}{
		{1, []string{"a2", "a1"}},
		{2, []string{"a1"}},
		{3, nil},
		{0, []string{"a3", "b2", "a2", "a1"}},
	} {
		var got []string
		for _, cs := range deadInstancesBeyond(status, tc.keep) {
			got = append(got, cs.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("keep %d: %v, want %v", tc.keep, got, tc.want)
		}
	}
}
