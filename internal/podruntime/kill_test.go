package podruntime

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
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

// TestKillForgetsActuatedResources runs a pod on the fake runtime with the
// actuated resources checkpointed, kills it and checks that nothing of it
// is left in the state or the checkpoint: a pod deleted while it runs,
// one deleted by its worker without its spec (an orphan), and one that
// ran to completion, whose containers stay for GC.
func TestKillForgetsActuatedResources(t *testing.T) {
	const image = "registry.test/app:1"
	for _, tc := range []struct {
		name string
		// exit makes the container exit with this code before the kill;
		// nil: it still runs.
		exit           *int32
		policy         v1.RestartPolicy
		orphan         bool
		wantContainers int // left in the runtime after the kill
	}{
		{name: "deleted while running", policy: v1.RestartPolicyAlways},
		{name: "an orphan", policy: v1.RestartPolicyAlways, orphan: true},
		{name: "ran to completion", policy: v1.RestartPolicyNever, exit: ptrTo(int32(0)), wantContainers: 1},
		{name: "failed for good", policy: v1.RestartPolicyNever, exit: ptrTo(int32(3)), wantContainers: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cri := fakecri.New()
			cri.AddImage(image)
			root := t.TempDir()
			actuated, err := NewActuatedResources(root)
			if err != nil {
				t.Fatal(err)
			}
			rt := &Runtime{RT: cri, Img: cri, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: "192.0.2.1",
				NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second, Actuated: actuated}}
			grace := int64(0)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
				Spec: v1.PodSpec{NodeName: "node", RestartPolicy: tc.policy, TerminationGracePeriodSeconds: &grace,
					Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}}}}}
			ctx := context.Background()
			res := rt.SyncNewPod(ctx, pod, nil, nil, nil)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			id := res.Status.FindContainer("app").ID
			if actuated.get(pod.UID, "app", id) == nil {
				t.Fatalf("no actuated resources recorded for %s", id)
			}
			if tc.exit != nil {
				cri.Exit(id, *tc.exit)
			}
			k := Kill{Pod: pod, UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, GracePeriod: &grace}
			if tc.orphan {
				k.Pod = nil
			}
			if err := rt.Kill(ctx, k); err != nil {
				t.Fatal(err)
			}
			if n := len(cri.Containers()); n != tc.wantContainers {
				t.Errorf("%d containers left after the kill, want %d", n, tc.wantContainers)
			}
			actuated.mu.Lock()
			left := len(actuated.pods)
			actuated.mu.Unlock()
			if left != 0 {
				t.Errorf("%d pods left in the actuated resources after the kill, want none", left)
			}
			reloaded, err := NewActuatedResources(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(reloaded.pods) != 0 {
				t.Errorf("the checkpoint holds %d pods after the kill, want none", len(reloaded.pods))
			}
		})
	}
}
