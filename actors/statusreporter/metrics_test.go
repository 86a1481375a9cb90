package statusreporter

import (
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

func TestTerminations(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	exited := func(code int32, reason string) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
	cs := func(name string, s v1.ContainerState) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: s}
	}
	for _, tc := range []struct {
		name     string
		old, new v1.PodStatus
		want     containersTerminated
	}{
		{name: "nothing terminated",
			new: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", running)}}},
		{name: "a running container exits",
			old:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", running)}},
			new:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", exited(3, "Error"))}},
			want: containersTerminated{{metrics.ContainerTypeContainer, "3", "Error"}}},
		{name: "already terminated: counted once",
			old: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", exited(3, "Error"))}},
			new: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", exited(3, "Error"))}, Message: "other"}},
		{name: "first seen terminated, by type",
			new: v1.PodStatus{
				InitContainerStatuses:      []v1.ContainerStatus{cs("i", exited(0, "Completed"))},
				ContainerStatuses:          []v1.ContainerStatus{cs("a", running), cs("b", exited(137, "OOMKilled"))},
				EphemeralContainerStatuses: []v1.ContainerStatus{cs("e", exited(1, "Error"))}},
			want: containersTerminated{{metrics.ContainerTypeInit, "0", "Completed"}, {metrics.ContainerTypeContainer, "137", "OOMKilled"}, {metrics.ContainerTypeEphemeral, "1", "Error"}}},
		{name: "a restarted container runs again, then exits again",
			old:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", running)}},
			new:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{cs("a", exited(2, "Error"))}},
			want: containersTerminated{{metrics.ContainerTypeContainer, "2", "Error"}}},
	} {
		if got := terminations(&tc.old, &tc.new); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStatusWrittenTook: a write takes from the first report it carries to
// the API, over failed writes, and a report that comes while a write is in
// flight waits for the next.
func TestStatusWrittenTook(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	took := func(cmds []writeCommand) []time.Duration {
		var out []time.Duration
		for _, c := range cmds {
			if w, ok := c.(statusWritten); ok {
				out = append(out, w.took)
			}
		}
		return out
	}
	q := newWriteQueue(1)
	rep := func(st string, s float64) []writeCommand {
		return q.Step(evReport{testPod("a", false), status(st)}, at(s))
	}
	synced := func(version uint64, err error, s float64) []time.Duration {
		return took(q.Step(evSynced{&messages.PodStatusSynced{UID: "a", Version: version, Err: err}}, at(s)))
	}
	rep("pending", 0)   // v1, written at once
	rep("pending:b", 1) // v2, waits for v1's write
	rep("pending:c", 2) // v3, the same wait
	if got := synced(1, nil, 3); !reflect.DeepEqual(got, []time.Duration{3 * time.Second}) {
		t.Errorf("v1 took %v, want 3s", got)
	}
	if got := synced(3, errors.New("unreachable"), 4); got != nil {
		t.Errorf("a failed write took %v, want nothing", got)
	}
	q.Step(evRetry{uid: "a"}, at(5))
	if got := synced(3, nil, 6); !reflect.DeepEqual(got, []time.Duration{5 * time.Second}) {
		t.Errorf("v3, first reported as v2 at 1s, took %v, want 5s", got)
	}
	q.Step(evCheckMirrors{}, at(7))
	if got := took(q.Step(evReconcile{testPod("a", false), status("pending:c")}, at(7))); got != nil {
		t.Errorf("a reconcile is no change: %v", got)
	}
	if got := synced(4, nil, 8); got != nil {
		t.Errorf("a reconciling write took %v, want nothing", got)
	}
}
