package podmanager

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

func TestEnded(t *testing.T) {
	for _, tc := range []struct {
		phase v1.PodPhase
		want  bool
	}{
		{"", false},
		{v1.PodPending, false},
		{v1.PodRunning, false},
		{v1.PodUnknown, false},
		{v1.PodSucceeded, true},
		{v1.PodFailed, true},
	} {
		p := testPod("a", "")
		p.Status.Phase = tc.phase
		if got := ended(p); got != tc.want {
			t.Errorf("ended(phase %q) = %v, want %v", tc.phase, got, tc.want)
		}
	}
}

func withPhase(p *v1.Pod, phase v1.PodPhase, reason string) *v1.Pod {
	p.Status.Phase, p.Status.Reason = phase, reason
	return p
}

// TestEndedPodsAreNeverStarted: a pod whose API phase is Succeeded or
// Failed (one that ran to completion before a restart, or one rejected at
// admission) is never synced, and not admitted; what the runtime may hold
// of it is only stopped.
func TestEndedPodsAreNeverStarted(t *testing.T) {
	h := newHarness(t, 2)
	supervision.TellFromOutside(h.system.ActorSystem, h.pm, &messages.RuntimePodsListed{UIDs: map[types.UID]bool{"ended-in-runtime": true}})
	h.send(messages.SourceAPI,
		withPhase(testPod("ended-gone", ""), v1.PodSucceeded, ""),
		withPhase(testPod("ended-in-runtime", ""), v1.PodSucceeded, ""),
		withPhase(testPod("rejected", "100"), v1.PodFailed, "OutOfcpu"),
		testPod("new1", "1"), testPod("new2", "1"))
	h.eventually("the new pods run (the ended ones take no room), the ended one in the runtime is stopped", func(s map[types.UID]int, k map[types.UID]string) error {
		if s["new1"] == 0 || s["new2"] == 0 || k["ended-in-runtime"] != "30" {
			return fmt.Errorf("synced %v, killed %v", s, k)
		}
		return nil
	})
	// The API may send them again, and their remains may go meanwhile.
	h.send(messages.SourceAPI,
		withPhase(testPod("ended-gone", ""), v1.PodSucceeded, ""),
		withPhase(testPod("ended-in-runtime", ""), v1.PodSucceeded, ""),
		withPhase(testPod("rejected", "100"), v1.PodFailed, "OutOfcpu"),
		testPod("new1", "1"), testPod("new2", "1"))
	supervision.TellFromOutside(h.system.ActorSystem, h.pm, &messages.PodLifecycleEvents{Events: []messages.PodLifecycleEvent{
		{PodUID: "ended-in-runtime", PodName: "p-ended-in-runtime", PodNamespace: "default", Type: messages.SandboxRemoved, ID: "x"}}})
	time.Sleep(200 * time.Millisecond)
	synced, killed := h.rt.state()
	for _, uid := range []types.UID{"ended-gone", "ended-in-runtime", "rejected"} {
		if synced[uid] != 0 {
			t.Errorf("%s was synced %d times, want never", uid, synced[uid])
		}
	}
	if killed["ended-gone"] != "" || killed["rejected"] != "" {
		t.Errorf("killed %v: nothing of ended-gone or rejected was in the runtime", killed)
	}
	got := map[types.UID]string{}
	for _, p := range h.list() {
		got[p.UID] = string(p.Status.Phase) + "/" + p.Status.Reason
	}
	want := map[types.UID]string{"ended-gone": "Succeeded/", "ended-in-runtime": "Succeeded/", "rejected": "Failed/OutOfcpu", "new1": "Running/", "new2": "Running/"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("/pods %v, want %v", got, want)
	}
	h.reports.mu.Lock()
	defer h.reports.mu.Unlock()
	if len(h.reports.finished) != 0 {
		t.Errorf("finished reports %v: an ended pod's status is the API's already", h.reports.finished)
	}
}

// TestAPodEndedInTheAPIIsStopped: a running pod that something else
// ended (its API phase became Failed) is stopped and not synced again.
func TestAPodEndedInTheAPIIsStopped(t *testing.T) {
	h := newHarness(t, 10)
	p := testPod("a", "")
	h.send(messages.SourceAPI, p)
	h.eventually("synced", func(s map[types.UID]int, _ map[types.UID]string) error {
		if s["a"] == 0 {
			return fmt.Errorf("synced %v", s)
		}
		return nil
	})
	failed := withPhase(p.DeepCopy(), v1.PodFailed, "Evicted")
	failed.ResourceVersion = "2"
	h.send(messages.SourceAPI, failed)
	h.eventually("stopped with its grace period", func(_ map[types.UID]int, k map[types.UID]string) error {
		if k["a"] != "30" {
			return fmt.Errorf("killed %v", k)
		}
		return nil
	})
	before, _ := h.rt.state()
	h.send(messages.SourceAPI, failed)
	time.Sleep(200 * time.Millisecond)
	if after, _ := h.rt.state(); after["a"] != before["a"] {
		t.Errorf("synced again after it ended: %d → %d", before["a"], after["a"])
	}
	if pods := h.list(); len(pods) != 1 {
		t.Errorf("/pods lists %d pods, want the ended one", len(pods))
	}
}

func mirror(name, namespace string, uid types.UID, deleting bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: uid,
		Annotations: map[string]string{manifest.ConfigMirrorAnnotation: "hash", manifest.ConfigSourceAnnotation: messages.SourceAPI}}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestSplitMirrors(t *testing.T) {
	a, b := testPod("a", ""), testPod("b", "")
	m1, m2 := mirror("s1", "default", "m1", false), mirror("s2", "kube-system", "m2", true)
	regular, mirrors := splitMirrors([]*v1.Pod{m1, a, m2, b})
	if !reflect.DeepEqual(regular, []*v1.Pod{a, b}) || !reflect.DeepEqual(mirrors, []*v1.Pod{m1, m2}) {
		t.Errorf("regular %v, mirrors %v", regular, mirrors)
	}
	if regular, mirrors := splitMirrors(nil); len(regular) != 0 || len(mirrors) != 0 {
		t.Errorf("nothing split into %v and %v", regular, mirrors)
	}
}

func TestMirrorsGone(t *testing.T) {
	live := mirror("s", "default", "m1", false)
	deleting := mirror("s", "default", "m1", true)
	replaced := mirror("s", "default", "m2", false)
	set := func(pods ...*v1.Pod) map[string]*v1.Pod {
		out := map[string]*v1.Pod{}
		for _, p := range pods {
			out[fullName(p)] = p
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		old, cur map[string]*v1.Pod
		want     []string
	}{
		{"no mirrors", nil, nil, nil},
		{"a new mirror", nil, set(live), nil},
		{"unchanged", set(live), set(live), nil},
		{"deleted", set(live), nil, []string{"default/s"}},
		{"being deleted", set(live), set(deleting), []string{"default/s"}},
		{"still being deleted", set(deleting), set(deleting), nil},
		{"gone after its deletion was seen", set(deleting), nil, nil},
		{"replaced at once", set(live), set(replaced), nil},
		{"several, sorted", set(live, mirror("a", "kube-system", "m3", false), mirror("b", "default", "m4", false)),
			set(mirror("b", "default", "m4", false)), []string{"default/s", "kube-system/a"}},
	} {
		if got := mirrorsGone(tc.old, tc.cur); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: mirrorsGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// mirrorOf is the live mirror pod of a static pod, at resourceVersion rv,
// showing status.
func mirrorOf(static *v1.Pod, rv string, status v1.PodStatus) *v1.Pod {
	p := mirror(static.Name, static.Namespace, "m", false)
	p.Annotations[manifest.ConfigMirrorAnnotation] = manifest.ConfigHash(static)
	p.ResourceVersion = rv
	p.Status = *status.DeepCopy()
	return p
}

func TestMirrorStatusDiverged(t *testing.T) {
	static := testPod("s", "")
	static.Name = "web-node"
	readyStatus := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	pending := v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	v1Ready := mirrorOf(static, "1", readyStatus)
	v2Pending := mirrorOf(static, "2", pending)
	with := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod {
		p = p.DeepCopy()
		f(p)
		return p
	}
	for _, tc := range []struct {
		name     string
		old, cur *v1.Pod
		status   v1.PodStatus
		want     bool
	}{
		{"its status changed by someone else", v1Ready, v2Pending, readyStatus, true},
		{"by someone else, the phase alone", v1Ready, mirrorOf(static, "2", v1.PodStatus{Phase: v1.PodFailed, Conditions: readyStatus.Conditions}), readyStatus, true},
		{"a new version showing the node's status", v1Ready, mirrorOf(static, "2", readyStatus), readyStatus, false},
		{"the late echo of an earlier write (read anew before writing)", mirrorOf(static, "1", v1.PodStatus{}), mirrorOf(static, "2", pending), readyStatus, true},
		{"the same version", v2Pending, v2Pending, readyStatus, false},
		{"a mirror first seen", nil, v2Pending, readyStatus, false},
		{"another mirror pod of the same name", with(v1Ready, func(p *v1.Pod) { p.UID = "m0" }), v2Pending, readyStatus, false},
		{"a mirror being deleted", v1Ready, with(v2Pending, func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }), readyStatus, false},
		{"the mirror of another version of the static pod", v1Ready, with(v2Pending, func(p *v1.Pod) { p.Annotations[manifest.ConfigMirrorAnnotation] = "other" }), readyStatus, false},
		{"no status reported yet", v1Ready, v2Pending, v1.PodStatus{}, false},
	} {
		if got := mirrorStatusDiverged(tc.old, tc.cur, static, tc.status); got != tc.want {
			t.Errorf("%s: mirrorStatusDiverged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMirrorPodsAreNeverRun: the API server's mirror of a static pod is
// never synced; when it goes, the static pod's mirror is checked at once,
// and the static pod is left alone.
func TestMirrorPodsAreNeverRun(t *testing.T) {
	h := newHarness(t, 10)
	static := testPod("static", "")
	static.Name = "web-node"
	static.Annotations = map[string]string{manifest.ConfigSourceAnnotation: messages.SourceFile}
	m := mirror("web-node", "default", "mirror-uid", false)
	h.send(messages.SourceFile, static)
	h.send(messages.SourceAPI, m, testPod("api", ""))
	h.eventually("the static and the API pod synced", func(s map[types.UID]int, _ map[types.UID]string) error {
		if s["static"] == 0 || s["api"] == 0 {
			return fmt.Errorf("synced %v", s)
		}
		return nil
	})
	h.send(messages.SourceAPI, mirror("web-node", "default", "mirror-uid", true), testPod("api", ""))
	h.send(messages.SourceAPI, testPod("api", ""))
	h.send(messages.SourceAPI, mirror("web-node", "default", "mirror-uid-2", false), testPod("api", ""))
	h.eventually("the static pod's mirror checked once", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if len(h.reports.mirrorChecks) != 1 || h.reports.mirrorChecks[0] != "static" {
			return fmt.Errorf("mirror checks %v", h.reports.mirrorChecks)
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	synced, killed := h.rt.state()
	if synced["mirror-uid"]+synced["mirror-uid-2"] != 0 || len(killed) != 0 {
		t.Errorf("synced %v, killed %v: a mirror pod was run, or something stopped", synced, killed)
	}
	var names []string
	for _, p := range h.list() {
		names = append(names, string(p.UID))
	}
	if strings.Join(names, ",") != "api,static" {
		t.Errorf("/pods lists %v, want the API pod and the static pod only", names)
	}
}
