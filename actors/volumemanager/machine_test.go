package volumemanager

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/messages"
)

func testPod(uid string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec: v1.PodSpec{Volumes: vols}}
}

var (
	emptyDir = v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}
	cmVol    = v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
	projVol  = v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	podA  = testPod("a", emptyDir)
	podC  = testPod("c", cmVol)
	podP  = testPod("p", projVol)
	volsA = messages.PodVolumes{"scratch": {Name: "scratch", Path: "/pods/a/volumes/kubernetes.io~empty-dir/scratch"}}
	errNo = errors.New("configmap \"cm\" not found")

	csiVol        = v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	podV          = testPod("v", csiVol)
	volsAttached  = messages.PodVolumes{"data": {Name: "data", Path: "/m", UniqueName: "kubernetes.io/csi/d^h"}}
	volsRepublish = messages.PodVolumes{"data": {Name: "data", Path: "/m", CSIRepublish: true}}
	volsExpand    = messages.PodVolumes{"data": {Name: "data", Path: "/m", CSIExpandable: true}}
	errExpand     = &volume.SetUpError{Volume: "data", Err: &volume.ExpandError{Volume: "pv", Online: true, Err: errors.New("rpc error")}}

	vdh         = v1.UniqueVolumeName("kubernetes.io/csi/d^h")
	errNotInUse = errors.Join(&volume.SetUpError{Volume: "data", Err: &volume.NotInUseError{Name: vdh}})
	listed      = map[v1.UniqueVolumeName]bool{vdh: true}
)

func setUp(gen uint64, p *v1.Pod, first bool) CmdSetUp {
	return CmdSetUp{Gen: gen, Pod: p, First: first}
}

// TestStep drives the machine through events and checks the commands of the
// last one, and the phase of pod a (or c, p: the first pod named) after it.
func TestStep(t *testing.T) {
	const absent = Phase(-1)
	for _, tc := range []struct {
		name   string
		uid    types.UID
		events []Event
		want   []Command
		phase  Phase
	}{
		{"a new pod's volumes are set up", "a", []Event{EvMount{podA}},
			[]Command{setUp(1, podA, true)}, Mounting},
		{"set up: the pod-manager is told", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}},
			[]Command{CmdReady{UID: "a", Volumes: volsA}}, Ready},
		{"a failure is reported and retried", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}},
			[]Command{CmdFailed{Pod: podC, Err: errNo}, CmdScheduleRetry{UID: "c", Gen: 2, After: 500 * time.Millisecond}}, Mounting},
		{"later failures wait longer", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvRetry{UID: "c", Gen: 2}, EvSetUp{UID: "c", Gen: 3, Err: errNo}},
			[]Command{CmdFailed{Pod: podC, Err: errNo}, CmdScheduleRetry{UID: "c", Gen: 4, After: time.Second}}, Mounting},
		{"the retry sets up again", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvRetry{UID: "c", Gen: 2}},
			[]Command{setUp(3, podC, false)}, Mounting},
		{"a superseded retry does nothing", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvSourceChanged{"ConfigMap", "default", "cm"}, EvRetry{UID: "c", Gen: 2}},
			nil, Mounting},
		{"the object appearing sets up at once", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvSourceChanged{"ConfigMap", "default", "cm"}},
			[]Command{setUp(3, podC, false)}, Mounting},
		{"an object of another namespace does not", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvSourceChanged{"ConfigMap", "other", "cm"}},
			nil, Mounting},
		{"nor one of another kind", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvSourceChanged{"Secret", "default", "cm"}},
			nil, Mounting},
		{"a projected secret is read", "p", []Event{EvMount{podP}, EvSetUp{UID: "p", Gen: 1}, EvSourceChanged{"Secret", "default", "s"}},
			[]Command{setUp(2, podP, false)}, Ready},
		{"a change of the pod's own source refreshes it", "p", []Event{EvMount{podP}, EvSetUp{UID: "p", Gen: 1}, EvSourceChanged{KindPod, "default", "p-p"}},
			[]Command{setUp(2, podP, false)}, Ready},
		{"another pod's does not", "p", []Event{EvMount{podP}, EvSetUp{UID: "p", Gen: 1}, EvSourceChanged{KindPod, "default", "p-a"}},
			nil, Ready},
		{"a change during a set-up sets up again after it", "c", []Event{EvMount{podC}, EvSourceChanged{"ConfigMap", "default", "cm"}, EvSetUp{UID: "c", Gen: 1}},
			[]Command{CmdReady{UID: "c"}, setUp(2, podC, false)}, Ready},
		{"an update of a ready pod refreshes it", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}, EvMount{podA}},
			[]Command{setUp(2, podA, false)}, Ready},
		{"and a refresh does not tell the pod-manager again", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}, EvMount{podA}, EvSetUp{UID: "a", Gen: 2, Volumes: volsA}},
			nil, Ready},
		{"a stale outcome is dropped", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 7, Volumes: volsA}},
			nil, Mounting},
		{"resync refreshes ready content volumes", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1}, EvResync{}},
			[]Command{setUp(2, podC, false)}, Ready},
		{"but not an emptyDir", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}, EvResync{}},
			nil, Ready},
		{"nor a pod still mounting (its retry does)", "c", []Event{EvMount{podC}, EvResync{}},
			nil, Mounting},
		{"resync republishes a CSI volume whose driver asks", "v", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsRepublish}, EvResync{}},
			[]Command{setUp(2, podV, false)}, Ready},
		{"but not one whose driver does not", "v", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvResync{}},
			nil, Ready},
		{"resync checks the size of an expandable CSI PV", "v", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsExpand}, EvResync{}},
			[]Command{setUp(2, podV, false)}, Ready},
		{"a failed expansion of a running pod's volume is reported and retried; the pod stays ready", "v",
			[]Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsExpand}, EvResync{}, EvSetUp{UID: "v", Gen: 2, Err: errExpand}},
			[]Command{CmdFailed{Pod: podV, Err: errExpand}, CmdScheduleRetry{UID: "v", Gen: 3, After: 500 * time.Millisecond}}, Ready},
		{"and its retry checks again", "v",
			[]Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsExpand}, EvResync{}, EvSetUp{UID: "v", Gen: 2, Err: errExpand}, EvRetry{UID: "v", Gen: 3}},
			[]Command{setUp(4, podV, false)}, Ready},

		// Teardown.
		{"unmount tears down", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}, EvUnmount{UID: "a"}},
			[]Command{CmdTearDown{UID: "a", Pod: podA}}, TearingDown},
		{"torn down: forgotten, the pod-manager told", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}, EvUnmount{UID: "a"}, EvTornDown{UID: "a"}},
			[]Command{CmdUnmounted{UID: "a"}}, absent},
		{"unmount during a set-up waits for it", "a", []Event{EvMount{podA}, EvUnmount{UID: "a"}},
			nil, TearingDown},
		{"then tears down", "a", []Event{EvMount{podA}, EvUnmount{UID: "a"}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}},
			[]Command{CmdTearDown{UID: "a", Pod: podA}}, TearingDown},
		{"an unknown pod's leftovers are torn down", "a", []Event{EvUnmount{UID: "a"}},
			[]Command{CmdTearDown{UID: "a"}}, TearingDown},
		{"a second unmount does nothing", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1}, EvUnmount{UID: "a"}, EvUnmount{UID: "a"}},
			nil, TearingDown},
		{"a retry during teardown does nothing", "c", []Event{EvMount{podC}, EvSetUp{UID: "c", Gen: 1, Err: errNo}, EvUnmount{UID: "c"}, EvRetry{UID: "c", Gen: 2}},
			nil, TearingDown},
		{"a pod given back during teardown is set up after it", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1}, EvUnmount{UID: "a"}, EvMount{podA}, EvTornDown{UID: "a"}},
			[]Command{CmdUnmounted{UID: "a"}, setUp(1, podA, true)}, Mounting},
		{"a failed teardown is forgotten too (the orphan search retries)", "a", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1}, EvUnmount{UID: "a"}, EvTornDown{UID: "a", Err: errNo}},
			nil, absent},

		// Orphaned directories.
		{"orphaned directories are torn down", "a", []Event{EvOrphans{UIDs: []types.UID{"a"}}},
			[]Command{CmdTearDown{UID: "a"}}, TearingDown},
		{"never a tracked pod's", "a", []Event{EvMount{podA}, EvOrphans{UIDs: []types.UID{"a"}}},
			nil, Mounting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine()
			var got []Command
			for _, ev := range tc.events {
				got = m.Step(ev, time.Time{})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("commands:\n got %s\nwant %s", fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", tc.want))
			}
			phase, ok := m.Phase(tc.uid)
			if !ok {
				phase = absent
			}
			if phase != tc.phase {
				t.Errorf("phase %v, want %v", phase, tc.phase)
			}
		})
	}
}

// TestWaitForInUse: the set-up of an attachable volume waits until the
// Node lists it in use, as upstream's reconciler: the status-reporter is
// asked for an update, and the listing sets the pod up at once.
func TestWaitForInUse(t *testing.T) {
	waiting := []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNotInUse}}
	for _, tc := range []struct {
		name   string
		events []Event
		want   []Command
		phase  Phase
	}{
		{"a set-up waiting for the listing asks for a node status update, and retries as any failure", waiting,
			[]Command{CmdFailed{Pod: podV, Err: errNotInUse}, CmdReportInUse{}, CmdScheduleRetry{UID: "v", Gen: 2, After: 500 * time.Millisecond}}, Mounting},
		{"listed: set up at once, given the listing", append(waiting, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}),
			[]Command{CmdSetUp{Gen: 3, Pod: podV, Reported: listed}}, Mounting},
		{"and the backoff's retry is dropped", append(waiting, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}, EvRetry{UID: "v", Gen: 2}),
			nil, Mounting},
		{"a listing without the volume sets up nothing", append(waiting, EvReportedInUse{Names: []v1.UniqueVolumeName{"kubernetes.io/csi/d^other"}}),
			nil, Mounting},
		{"listed while the set-up ran: set up again at once", []Event{EvMount{podV}, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}},
			EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNotInUse}},
			[]Command{CmdFailed{Pod: podV, Err: errNotInUse}, CmdSetUp{Gen: 2, Pod: podV, Reported: listed}}, Mounting},
		{"a listing during a set-up waits for its end", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNotInUse},
			EvRetry{UID: "v", Gen: 2}, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}},
			nil, Mounting},
		{"another failure does not ask for an update", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNo}},
			[]Command{CmdFailed{Pod: podV, Err: errNo}, CmdScheduleRetry{UID: "v", Gen: 2, After: 500 * time.Millisecond}}, Mounting},
		{"nor is such a pod set up by a listing", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNo},
			EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}},
			nil, Mounting},
		{"a pod torn down meanwhile is not set up", append(waiting, EvUnmount{UID: "v"}, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}),
			nil, TearingDown},
		{"once set up, a listing does nothing", append(waiting, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}},
			EvSetUp{UID: "v", Gen: 3, Volumes: volsAttached, InUse: []v1.UniqueVolumeName{vdh}}, EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}),
			nil, Ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine()
			var got []Command
			for _, ev := range tc.events {
				got = m.Step(ev, time.Time{})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("commands:\n got %+v\nwant %+v", got, tc.want)
			}
			if phase, _ := m.Phase("v"); phase != tc.phase {
				t.Errorf("phase %v, want %v", phase, tc.phase)
			}
		})
	}
}

// TestVolumesInUse: the attachable volumes of the pods set up, each once,
// until their teardown ends.
func TestVolumesInUse(t *testing.T) {
	podW := testPod("w", csiVol)
	for _, tc := range []struct {
		name   string
		events []Event
		want   []v1.UniqueVolumeName
	}{
		{"none", []Event{EvMount{podA}, EvSetUp{UID: "a", Gen: 1, Volumes: volsA}}, nil},
		{"not before the set-up", []Event{EvMount{podV}}, nil},
		{"set up", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}}, []v1.UniqueVolumeName{"kubernetes.io/csi/d^h"}},
		{"two pods, once", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvMount{podW}, EvSetUp{UID: "w", Gen: 1, Volumes: volsAttached}},
			[]v1.UniqueVolumeName{"kubernetes.io/csi/d^h"}},
		{"during the teardown", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvUnmount{UID: "v"}},
			[]v1.UniqueVolumeName{"kubernetes.io/csi/d^h"}},
		{"not after it", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvUnmount{UID: "v"}, EvTornDown{UID: "v"}}, nil},
		{"still after a failed one", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvUnmount{UID: "v"}, EvTornDown{UID: "v", Err: errNo}},
			[]v1.UniqueVolumeName{"kubernetes.io/csi/d^h"}},
		{"from the set-up that resolved it, before it is set up", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNotInUse}},
			[]v1.UniqueVolumeName{vdh}},
		{"also when its set-up failed otherwise", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNo}},
			[]v1.UniqueVolumeName{vdh}},
		{"a failed teardown keeps the resolved ones", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, InUse: []v1.UniqueVolumeName{vdh}, Err: errNo},
			EvUnmount{UID: "v"}, EvTornDown{UID: "v", Err: errNo}}, []v1.UniqueVolumeName{vdh}},
		{"until the orphan search's succeeds", []Event{EvMount{podV}, EvSetUp{UID: "v", Gen: 1, Volumes: volsAttached}, EvUnmount{UID: "v"}, EvTornDown{UID: "v", Err: errNo},
			EvOrphans{UIDs: []types.UID{"v"}}, EvTornDown{UID: "v"}}, nil},
	} {
		m := NewMachine()
		for _, ev := range tc.events {
			m.Step(ev, time.Time{})
		}
		if got := m.VolumesInUse(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAtMostOneOperationPerPod drives random events and checks that a pod
// never has two set-ups or teardowns at once, and that nothing is set up
// while it is torn down.
func TestAtMostOneOperationPerPod(t *testing.T) {
	pods := []*v1.Pod{podA, podC, podP}
	for seed := range 500 {
		m := NewMachine()
		inFlight := map[types.UID]uint64{} // gen of the set-up in flight
		tearing := map[types.UID]bool{}
		r := uint64(seed)*2654435761 + 1
		next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % uint64(n)) }
		for range 40 {
			p := pods[next(len(pods))]
			var ev Event
			switch next(8) {
			case 0:
				ev = EvMount{p}
			case 1:
				ev = EvUnmount{p.UID}
			case 2:
				var err error
				switch next(3) {
				case 0:
					err = errNo
				case 1:
					err = errNotInUse
				}
				ev = EvSetUp{UID: p.UID, Gen: inFlight[p.UID], InUse: []v1.UniqueVolumeName{vdh}, Err: err}
				delete(inFlight, p.UID)
			case 3:
				if tearing[p.UID] {
					delete(tearing, p.UID)
					ev = EvTornDown{UID: p.UID}
				} else {
					ev = EvResync{}
				}
			case 4:
				ev = EvSourceChanged{"ConfigMap", "default", "cm"}
			case 5:
				en := m.pods[p.UID]
				if en == nil {
					continue
				}
				ev = EvRetry{UID: p.UID, Gen: en.retryGen}
			case 6:
				ev = EvReportedInUse{Names: []v1.UniqueVolumeName{vdh}}
			default:
				ev = EvOrphans{UIDs: []types.UID{p.UID}}
			}
			for _, c := range m.Step(ev, time.Time{}) {
				switch c := c.(type) {
				case CmdSetUp:
					if _, busy := inFlight[c.Pod.UID]; busy || tearing[c.Pod.UID] {
						t.Fatalf("seed %d: a second operation for %s", seed, c.Pod.UID)
					}
					inFlight[c.Pod.UID] = c.Gen
				case CmdTearDown:
					if _, busy := inFlight[c.UID]; busy || tearing[c.UID] {
						t.Fatalf("seed %d: teardown of %s during another operation", seed, c.UID)
					}
					tearing[c.UID] = true
				}
			}
		}
	}
}
