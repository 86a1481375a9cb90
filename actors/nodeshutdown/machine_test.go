package nodeshutdown

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
)

func TestGroups(t *testing.T) {
	byPrio := []kubeletconfigv1beta1.ShutdownGracePeriodByPodPriority{
		{Priority: 100000, ShutdownGracePeriodSeconds: 10},
		{Priority: 0, ShutdownGracePeriodSeconds: 30},
		{Priority: 2000000000, ShutdownGracePeriodSeconds: 5},
	}
	for _, tc := range []struct {
		name            string
		grace, critical time.Duration
		byPrio          []kubeletconfigv1beta1.ShutdownGracePeriodByPodPriority
		gate            bool
		want            []Group
		requested       time.Duration
	}{
		{"off", 0, 0, nil, true, nil, 0},
		{"grace alone", 30 * time.Second, 0, nil, true, []Group{{0, 30}, {criticalPriority, 0}}, 30 * time.Second},
		{"grace and critical", 30 * time.Second, 10 * time.Second, nil, true, []Group{{0, 20}, {criticalPriority, 10}}, 30 * time.Second},
		{"critical over grace", 10 * time.Second, 20 * time.Second, nil, true, nil, 0},
		{"by priority, sorted", 0, 0, byPrio, true, []Group{{0, 30}, {100000, 10}, {2000000000, 5}}, 45 * time.Second},
		{"by priority without the gate", 30 * time.Second, 10 * time.Second, byPrio, false, []Group{{0, 20}, {criticalPriority, 10}}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Groups(tc.grace, tc.critical, tc.byPrio, tc.gate)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("groups %v, want %v", got, tc.want)
			}
			if r := Requested(got); r != tc.requested {
				t.Errorf("requested %v, want %v", r, tc.requested)
			}
		})
	}
}

func pod(uid string, prio *int32, grace *int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}, Spec: v1.PodSpec{Priority: prio, TerminationGracePeriodSeconds: grace}}
}

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

func TestGroupPodsAndGrace(t *testing.T) {
	groups := []Group{{-100, 5}, {0, 30}, {1000, 10}, {criticalPriority, 20}}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		group     int
		wantGrace int64
	}{
		{"no priority: the group of 0", pod("a", nil, nil), 1, 30},
		{"exactly a group's priority", pod("b", i32(1000), nil), 2, 10},
		{"between two groups: the lower", pod("c", i32(999), nil), 1, 30},
		{"below every group: the lowest", pod("d", i32(-1000), nil), 0, 5},
		{"above every group: the highest", pod("e", i32(criticalPriority+1000), nil), 3, 20},
		{"own grace shorter: its own", pod("f", nil, i64(3)), 1, 3},
		{"own grace longer: the group's", pod("g", nil, i64(60)), 1, 30},
		{"own grace zero", pod("h", i32(1000), i64(0)), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byGroup := groupPods(groups, []*v1.Pod{tc.pod})
			for i, ps := range byGroup {
				if (i == tc.group) != (len(ps) == 1) {
					t.Fatalf("groups %v, want the pod in group %d", byGroup, tc.group)
				}
			}
			if g := gracePeriod(tc.pod, groups[tc.group]); g != tc.wantGrace {
				t.Errorf("grace %d, want %d", g, tc.wantGrace)
			}
		})
	}
}

// list is the pod-manager's answer with pods, all active but those in
// gone.
func list(pods []*v1.Pod, gone ...string) *messages.PodList {
	l := &messages.PodList{}
	out := map[string]bool{}
	for _, g := range gone {
		out[g] = true
	}
	for _, p := range pods {
		l.Pods = append(l.Pods, *p)
		if !out[string(p.UID)] {
			l.Active = append(l.Active, p.UID)
		}
	}
	return l
}

// kills are the pods killed by cmds, with their grace.
func kills(cmds []Cmd) map[string]int64 {
	out := map[string]int64{}
	for _, c := range cmds {
		if k, ok := c.(CmdKill); ok {
			out[string(k.Pod.UID)] = k.GracePeriod
		}
	}
	return out
}

func has[C Cmd](cmds []Cmd) bool {
	for _, c := range cmds {
		if _, ok := c.(C); ok {
			return true
		}
	}
	return false
}

func lacks[C Cmd](cmds []Cmd) bool { return !has[C](cmds) }

// TestMachine drives a shutdown: the normal group first, each pod with
// its grace, the critical group once the first is gone or its grace is
// over, the lock released at the end, the cancellation after.
func TestMachine(t *testing.T) {
	normal, short := pod("normal", nil, nil), pod("short", i32(10), i64(2))
	critical := pod("critical", i32(criticalPriority), i64(60))
	finished := pod("finished", nil, nil)
	finished.Status.Phase = v1.PodSucceeded
	pods := []*v1.Pod{normal, short, critical, finished}
	now := time.Unix(1000, 0)

	type step struct {
		ev        Event
		wantKills map[string]int64
		want      []func([]Cmd) bool
		shutting  bool
		killing   bool
	}
	published := func(v bool) func([]Cmd) bool {
		return func(cmds []Cmd) bool {
			for _, c := range cmds {
				if p, ok := c.(CmdPublish); ok && p.ShuttingDown == v {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"groups in turn, each ended by its pods going", []step{
			{ev: EvPrepare{Active: true}, want: []func([]Cmd) bool{published(true), has[CmdListPods], has[CmdStoreState], has[CmdEvent]}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods)}, wantKills: map[string]int64{"normal": 20, "short": 2}, want: []func([]Cmd) bool{has[CmdGroupTimer], has[CmdPoll]}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods, "short")}, want: []func([]Cmd) bool{has[CmdPoll]}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods, "short", "normal")}, wantKills: map[string]int64{"critical": 10}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods, "short", "normal", "critical")}, want: []func([]Cmd) bool{has[CmdReleaseLock], has[CmdStoreState]}, shutting: true},
			{ev: EvPrepare{Active: false}, want: []func([]Cmd) bool{published(false), has[CmdTakeLock], has[CmdEvent]}},
		}},
		{"a group's grace over", []step{
			{ev: EvPrepare{Active: true}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods)}, wantKills: map[string]int64{"normal": 20, "short": 2}, shutting: true, killing: true},
			{ev: EvGroupDue{Gen: 0}, shutting: true, killing: true}, // a stale timer
			// The poll of the first group still pending serves the next:
			// one chain of polls.
			{ev: EvGroupDue{Gen: 1}, wantKills: map[string]int64{"critical": 10}, want: []func([]Cmd) bool{lacks[CmdPoll]}, shutting: true, killing: true},
			{ev: EvGroupDue{Gen: 2}, want: []func([]Cmd) bool{has[CmdReleaseLock]}, shutting: true},
		}},
		{"cancelled while killing: after the last group", []step{
			{ev: EvPrepare{Active: true}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods)}, wantKills: map[string]int64{"normal": 20, "short": 2}, shutting: true, killing: true},
			{ev: EvPrepare{Active: false}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods, "normal", "short")}, wantKills: map[string]int64{"critical": 10}, shutting: true, killing: true},
			{ev: EvPods{List: list(pods, "normal", "short", "critical")}, want: []func([]Cmd) bool{has[CmdReleaseLock], published(false), has[CmdTakeLock]}},
		}},
		{"no pods: the lock released at once", []step{
			{ev: EvPrepare{Active: true}, shutting: true, killing: true},
			{ev: EvPods{List: list([]*v1.Pod{finished})}, want: []func([]Cmd) bool{has[CmdReleaseLock]}, shutting: true},
			{ev: EvPrepare{Active: true}, shutting: true}, // again: nothing more
		}},
		{"no answer: ask again", []step{
			{ev: EvPrepare{Active: true}, shutting: true, killing: true},
			{ev: EvPods{}, want: []func([]Cmd) bool{has[CmdPoll]}, shutting: true, killing: true},
		}},
		{"cancelled with no shutdown: a new lock", []step{
			{ev: EvPrepare{Active: false}, want: []func([]Cmd) bool{published(false), has[CmdTakeLock]}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Groups(30*time.Second, 10*time.Second, nil, true))
			for i, s := range tc.steps {
				cmds := m.Step(s.ev, now)
				if got := kills(cmds); len(got) != len(s.wantKills) || (len(got) > 0 && !reflect.DeepEqual(got, s.wantKills)) {
					t.Errorf("step %d (%T): kills %v, want %v", i, s.ev, got, s.wantKills)
				}
				for j, w := range s.want {
					if !w(cmds) {
						t.Errorf("step %d (%T): commands %#v miss expectation %d", i, s.ev, cmds, j)
					}
				}
				if m.ShuttingDown != s.shutting || m.Killing != s.killing {
					t.Errorf("step %d (%T): shutting down %v killing %v, want %v %v", i, s.ev, m.ShuttingDown, m.Killing, s.shutting, s.killing)
				}
			}
		})
	}
}
