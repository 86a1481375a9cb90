package kubeletapi

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/messages"
)

// TestPodByNameLooksAgainForAContainer checks that a pod found in the
// snapshot without the container a request names (an ephemeral container
// added since) is looked for again in a younger snapshot, and that a
// container the pod never has still finds the pod, so the handler answers
// with upstream's "not valid".
func TestPodByNameLooksAgainForAContainer(t *testing.T) {
	pod := func(ephemeral ...string) v1.Pod {
		p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
		for _, e := range ephemeral {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers,
				v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: e}})
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		container string
		fetches   int32
		want      bool // the pod found holds the container
	}{
		{"a container in the snapshot", "app", 1, true},
		{"an ephemeral container added since", "debugger", 2, true},
		{"no container named", "", 1, false},
		{"a container the pod never has", "nope", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fetches atomic.Int32
			a := &Actor{}
			a.state = &stateCache{fetch: func() *nodeState {
				p := pod()
				if fetches.Add(1) > 1 {
					p = pod("debugger")
				}
				return &nodeState{at: time.Now(), pods: &messages.PodList{Pods: []v1.Pod{p}}}
			}}
			// The first snapshot is older than missMaxAge when looked at again.
			if _, err := a.state.get(context.Background(), snapshotMaxAge); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * missMaxAge)
			got, err := a.podByName(context.Background(), "ns", "p", "", tc.container)
			if err != nil {
				t.Fatal(err)
			}
			if n := fetches.Load(); n != tc.fetches {
				t.Errorf("fetches = %d, want %d", n, tc.fetches)
			}
			if got == nil {
				t.Fatal("no pod found")
			}
			if has := podref.Container(got, tc.container) != nil; has != tc.want {
				t.Errorf("found %+v for %q, want the container present: %v", got.Spec, tc.container, tc.want)
			}
		})
	}
}
