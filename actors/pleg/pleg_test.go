package pleg

import (
	"reflect"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

var (
	web   = podRef{uid: "u1", name: "web", namespace: "default"}
	other = podRef{uid: "u2", name: "db", namespace: "prod"}
)

const (
	running = "CONTAINER_RUNNING"
	exited  = "CONTAINER_EXITED"
	created = "CONTAINER_CREATED"
	ready   = "SANDBOX_READY"
	notRdy  = "SANDBOX_NOTREADY"
)

func TestDiff(t *testing.T) {
	type ev struct {
		uid   types.UID
		t     messages.PodLifecycleEventType
		id    string
		state string // what a pod-worker compares with its observation
	}
	for _, tc := range []struct {
		name       string
		prev, curr map[string]record
		want       []ev
	}{
		{"nothing changed", map[string]record{"c1": {pod: web, state: running}}, map[string]record{"c1": {pod: web, state: running}}, nil},
		{"new running container started", nil, map[string]record{"c1": {pod: web, state: running}}, []ev{{"u1", messages.ContainerStarted, "c1", running}}},
		{"created container is not yet an event", nil, map[string]record{"c1": {pod: web, state: created}}, nil},
		{"created to running started", map[string]record{"c1": {pod: web, state: created}}, map[string]record{"c1": {pod: web, state: running}}, []ev{{"u1", messages.ContainerStarted, "c1", running}}},
		{"running to exited died", map[string]record{"c1": {pod: web, state: running}}, map[string]record{"c1": {pod: web, state: exited}}, []ev{{"u1", messages.ContainerDied, "c1", exited}}},
		{"a container that came and went between relists died", nil, map[string]record{"c1": {pod: web, state: exited}}, []ev{{"u1", messages.ContainerDied, "c1", exited}}},
		{"gone container removed", map[string]record{"c1": {pod: web, state: exited}}, nil, []ev{{"u1", messages.ContainerRemoved, "c1", ""}}},
		{"new sandbox", nil, map[string]record{"s1": {pod: web, sandbox: true, state: ready}}, []ev{{"u1", messages.SandboxChanged, "s1", ready}}},
		{"sandbox not ready", map[string]record{"s1": {pod: web, sandbox: true, state: ready}}, map[string]record{"s1": {pod: web, sandbox: true, state: notRdy}}, []ev{{"u1", messages.SandboxChanged, "s1", notRdy}}},
		{"sandbox removed", map[string]record{"s1": {pod: web, sandbox: true, state: notRdy}}, nil, []ev{{"u1", messages.SandboxRemoved, "s1", ""}}},
		{"objects without a pod UID are not ours", nil, map[string]record{"x": {state: running}}, nil},
		{"events of two pods", nil, map[string]record{"c1": {pod: web, state: running}, "c2": {pod: other, state: exited}},
			[]ev{{"u1", messages.ContainerStarted, "c1", running}, {"u2", messages.ContainerDied, "c2", exited}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []ev
			for _, e := range diff(tc.prev, tc.curr) {
				got = append(got, ev{e.PodUID, e.Type, e.ID, e.State})
			}
			sort.Slice(got, func(i, j int) bool { return got[i].id < got[j].id })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("diff = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		last    time.Time
		healthy bool
	}{
		{"before the first relist", time.Time{}, true},
		{"recent relist", now.Add(-2 * time.Second), true},
		{"stale relist", now.Add(-RelistThreshold - time.Second), false},
	} {
		a := &Actor{lastRelist: tc.last}
		if got := a.health(now); got.Healthy != tc.healthy {
			t.Errorf("%s: healthy = %v (%s), want %v", tc.name, got.Healthy, got.Detail, tc.healthy)
		}
	}
}
