package podmanager

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// prio is pod p at priority n.
func prio(p *v1.Pod, n int32) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.Priority = &n
	return p
}

// guaranteed is a pod whose cpu and memory limits equal its requests.
func guaranteed(uid, cpu, mem string) *v1.Pod {
	p := testPod(uid, "")
	r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: r, Limits: r}
	return p
}

func TestPodsToPreempt(t *testing.T) {
	critical := prio(testPod("crit", "1"), systemCriticalPriority)
	cands := func(pods ...*v1.Pod) []candidate {
		var out []candidate
		for _, p := range pods {
			out = append(out, candidate{uid: p.UID, pod: p})
		}
		return out
	}
	cpu := func(milli int64) requirementList { return requirementList{{name: v1.ResourceCPU, amount: milli}} }
	for _, tc := range []struct {
		name    string
		pods    []candidate
		need    requirementList
		want    []types.UID
		wantErr string
	}{
		{name: "nothing lacking, nothing stopped", pods: cands(testPod("a", "1")), need: nil},
		{name: "the one pod that frees enough", pods: cands(testPod("a", "1")), need: cpu(500), want: []types.UID{"a"}},
		{name: "the closest of those that free enough, not the largest",
			pods: cands(testPod("big", "2"), testPod("fits", "600m")), need: cpu(500), want: []types.UID{"fits"}},
		{name: "the fewest pods", pods: cands(testPod("a", "300m"), testPod("b", "300m"), testPod("c", "1")),
			need: cpu(900), want: []types.UID{"c"}},
		{name: "several when none is enough alone", pods: cands(testPod("a", "300m"), testPod("b", "300m")),
			need: cpu(500), want: []types.UID{"b", "a"}}, // the later of equals, as upstream
		{name: "a Burstable pod before a Guaranteed one", pods: cands(guaranteed("g", "1", "1Gi"), testPod("b", "1")),
			need: cpu(1000), want: []types.UID{"b"}},
		{name: "a Guaranteed one when it alone frees enough beside all the others",
			pods: cands(guaranteed("g", "1", "1Gi"), testPod("b", "500m")), need: cpu(1200), want: []types.UID{"b", "g"}},
		{name: "never a critical pod", pods: cands(prio(testPod("sys", "2"), systemCriticalPriority)), need: cpu(500),
			wantErr: "no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]"},
		{name: "nor when all of them are not enough", pods: cands(testPod("a", "100m")), need: cpu(500),
			wantErr: "no set of running pods found to reclaim resources: [(res: cpu, q: 400), ]"},
		{name: "the pod count: any one pod", pods: cands(testPod("a", "1")),
			need: requirementList{{name: v1.ResourcePods, amount: 1}}, want: []types.UID{"a"}},
		{name: "extended resources", pods: cands(mutate(testPod("a", ""), func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"example.com/foo": resource.MustParse("2")}
		})), need: requirementList{{name: "example.com/foo", amount: 2}}, want: []types.UID{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podsToPreempt(critical, false, tc.pods, tc.need)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var uids []types.UID
			for _, c := range got {
				uids = append(uids, c.uid)
			}
			if !reflect.DeepEqual(uids, tc.want) {
				t.Errorf("preempted %v, want %v", uids, tc.want)
			}
		})
	}
}

func TestPreemptable(t *testing.T) {
	critical := prio(testPod("c", ""), systemCriticalPriority)
	for _, tc := range []struct {
		name      string
		preemptor *v1.Pod
		static    bool
		victim    candidate
		want      bool
	}{
		{"a critical pod preempts a pod of no priority", critical, false, candidate{pod: testPod("v", "")}, true},
		{"not another critical one", critical, false, candidate{pod: prio(testPod("v", ""), systemCriticalPriority)}, false},
		{"nor a static one", critical, false, candidate{pod: testPod("v", ""), static: true}, false},
		{"a static pod preempts a pod of no priority", testPod("s", ""), true, candidate{pod: testPod("v", "")}, true},
		{"higher priority preempts lower", prio(testPod("c", ""), 10), false, candidate{pod: prio(testPod("v", ""), 5)}, true},
		{"not equal", prio(testPod("c", ""), 5), false, candidate{pod: prio(testPod("v", ""), 5)}, false},
	} {
		if got := preemptable(tc.preemptor, tc.static, tc.victim); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}

// TestCriticalPodAdmission drives the machine through a critical pod's
// admission on a full node (2 CPUs, 3 pods).
func TestCriticalPodAdmission(t *testing.T) {
	critical := prio(testPod("crit", "1"), systemCriticalPriority)
	low := prio(testPod("low", "1500m"), 1)
	other := prio(testPod("other", "500m"), 1000)
	lowRuns := then(ready, at{0, set(messages.SourceAPI, low, other)}, at{0, EvWorkerStarted{UID: "low"}}, at{0, EvWorkerStarted{UID: "other"}})
	withCrit := func(pods ...*v1.Pod) at { return at{0, set(messages.SourceAPI, append(pods, critical)...)} }
	unexpected := "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: " +
		"no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]"
	for _, tc := range []struct {
		name  string
		steps []at
		// want is what the steps did past ready: pods told to end,
		// statuses Failed, events, crit spawned, and whether it waits.
		want string
	}{
		{"the lowest-priority pod that frees enough is preempted, and the critical pod waits",
			then(lowRuns, withCrit(low, other)),
			"event low Warning Preempting: Preempted in order to admit critical pod; end low; status low Failed/Preempting; count cpu; crit waits"},
		{"admitted once it stopped",
			then(lowRuns, withCrit(low, other), at{0, EvWorkerStopped{UID: "low"}}),
			"event low Warning Preempting: Preempted in order to admit critical pod; end low; status low Failed/Preempting; count cpu; spawn crit"},
		{"a pod being deleted is waited for, not preempted",
			then(lowRuns, at{0, set(messages.SourceAPI, deleting(low, 30), other)}, withCrit(deleting(low, 30), other)),
			"end low; crit waits"},
		{"and once it stopped the critical pod is admitted",
			then(lowRuns, at{0, set(messages.SourceAPI, deleting(low, 30), other)}, withCrit(deleting(low, 30), other), at{0, EvWorkerStopped{UID: "low"}}),
			"end low; spawn crit"},
		{"no pod of lower priority: rejected as upstream rejects it",
			then(ready, at{0, set(messages.SourceAPI, prio(low, systemCriticalPriority+1))}, withCrit(prio(low, systemCriticalPriority+1))),
			"event crit Warning UnexpectedAdmissionError: " + unexpected + "; status crit Failed/UnexpectedAdmissionError"},
		{"a reason other than resources rejects it",
			then(lowRuns, withCrit(low, other, mutate(critical, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }))),
			"event crit Warning NodeAffinity: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector; status crit Failed/NodeAffinity"},
		{"a pod that is not critical is rejected",
			then(lowRuns, at{0, set(messages.SourceAPI, low, other, prio(testPod("crit", "1"), 2000))}),
			"event crit Warning OutOfcpu: Node didn't have enough resource: cpu, requested: 1000, used: 2000, capacity: 2000; status crit Failed/OutOfcpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine()
			var got []string
			for _, s := range tc.steps {
				for _, c := range m.Step(s.ev, t0.Add(s.after)) {
					switch c := c.(type) {
					case CmdTell:
						if _, ok := c.Message.(*messages.TerminatePod); ok {
							got = append(got, "end "+string(c.UID))
						}
					case CmdSpawnWorker:
						if c.UID == "crit" {
							got = append(got, "spawn crit")
						}
					case CmdEvent:
						got = append(got, fmt.Sprintf("event %s %s %s: %s", c.Pod.UID, c.Type, c.Reason, c.Message))
					case CmdReportStatus:
						if c.Status.Phase == v1.PodFailed {
							got = append(got, fmt.Sprintf("status %s %s/%s", c.Pod.UID, c.Status.Phase, c.Status.Reason))
						}
					case CmdCountPreemption:
						got = append(got, "count "+string(c.Resource))
					}
				}
			}
			if _, ok := m.waiting["crit"]; ok {
				got = append(got, "crit waits")
			}
			// Repeated statuses of the same pod say nothing more.
			got = slices.Compact(got)
			if s := strings.Join(got, "; "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// TestPreemptedStatus: a pod preempted for a critical pod reports
// upstream's status: Failed, Preempting, and the DisruptionTarget condition
// saying why.
func TestPreemptedStatus(t *testing.T) {
	m := newTestMachine()
	low := prio(testPod("low", "2"), 1)
	for _, ev := range []Event{EvStarted{First: true}, set(messages.SourceFile), set(messages.SourceAPI, low), EvWorkerStarted{UID: "low"},
		set(messages.SourceAPI, low, prio(testPod("crit", "1"), systemCriticalPriority))} {
		m.Step(ev, t0)
	}
	p := m.Pod("low")
	if p.Phase != Ending || p.Status.Phase != v1.PodFailed || p.Status.Reason != ReasonPreempting || p.Status.Message != preemptMessage {
		t.Fatalf("low is %v with status %s/%s %q", p.Phase, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	i := slices.IndexFunc(p.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
	if i < 0 || p.Status.Conditions[i].Reason != v1.PodReasonTerminationByKubelet || p.Status.Conditions[i].Message != preemptedCondition {
		t.Errorf("conditions %+v", p.Status.Conditions)
	}
	if *p.End.GracePeriod != 30 {
		t.Errorf("killed with grace %d, want its own 30", *p.End.GracePeriod)
	}
}
