package statusreporter

import (
	"encoding/json"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/version"
)

func testSpec() *nodeSpec {
	return &nodeSpec{
		Name: "n1", IP: net.ParseIP("10.0.0.1"), Labels: map[string]string{"role": "edge"},
		Taints:         []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}},
		Capacity:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		Allocatable:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		Machine:        machineInfo{MachineID: "m", SystemUUID: "s", BootID: "b", KernelVersion: "6.1", OSImage: "Debian"},
		RuntimeVersion: "containerd://1.6.20~ds1", Port: 10250, MaxImages: 50, ControllerAttachDetach: true,
	}
}

func TestInitialNode(t *testing.T) {
	n := testSpec().initialNode()
	for k, want := range map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux", "role": "edge"} {
		if n.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], want)
		}
	}
	if n.Labels["kubernetes.io/arch"] == "" || n.Labels["beta.kubernetes.io/arch"] == "" {
		t.Errorf("arch labels missing: %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "k" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	wantAddr := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "n1"}}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != wantAddr[0] || n.Status.Addresses[1] != wantAddr[1] {
		t.Errorf("addresses = %v", n.Status.Addresses)
	}
	info := n.Status.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20~ds1" || info.KubeletVersion != version.NodeVersion() ||
		info.MachineID != "m" || info.SystemUUID != "s" || info.BootID != "b" || info.OSImage != "Debian" || info.OperatingSystem != "linux" {
		t.Errorf("nodeInfo = %+v", info)
	}
	if n.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Errorf("annotations = %v", n.Annotations)
	}
	spec := testSpec()
	spec.ControllerAttachDetach = false
	if n := spec.initialNode(); len(n.Annotations) != 0 {
		t.Errorf("enableControllerAttachDetach false: annotations = %v", n.Annotations)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("port = %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
}

func TestReconcileExisting(t *testing.T) {
	initial := testSpec().initialNode()
	tests := []struct {
		name        string
		labels      map[string]string
		wantChanged bool
	}{
		{"up to date keeps others", map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux",
			"kubernetes.io/arch": initial.Labels["kubernetes.io/arch"], "beta.kubernetes.io/os": "linux",
			"beta.kubernetes.io/arch": initial.Labels["beta.kubernetes.io/arch"], "other": "x"}, false},
		{"missing defaults added", map[string]string{"other": "x"}, true},
		{"nil labels", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: tt.labels,
				Annotations: map[string]string{AnnotationControllerManagedAttachDetach: "true"}}}
			if got := reconcileExisting(initial, existing); got != tt.wantChanged {
				t.Errorf("changed = %v, want %v", got, tt.wantChanged)
			}
			if existing.Labels["kubernetes.io/hostname"] != "n1" {
				t.Errorf("hostname label not reconciled: %v", existing.Labels)
			}
			if tt.labels["other"] != "" && existing.Labels["other"] != "x" {
				t.Errorf("foreign label removed: %v", existing.Labels)
			}
			if _, ok := existing.Labels["role"]; ok {
				t.Errorf("--node-labels applied to an existing node: %v", existing.Labels)
			}
		})
	}
}

// TestReconcileAttachDetachAnnotation: an existing Node's annotation
// follows enableControllerAttachDetach, as upstream's
// reconcileCMADAnnotationWithExistingNode.
func TestReconcileAttachDetachAnnotation(t *testing.T) {
	const key = AnnotationControllerManagedAttachDetach
	for _, tt := range []struct {
		name        string
		enabled     bool
		existing    map[string]string
		want        map[string]string
		wantChanged bool
	}{
		{"added", true, nil, map[string]string{key: "true"}, true},
		{"kept", true, map[string]string{key: "true", "x": "y"}, map[string]string{key: "true", "x": "y"}, false},
		{"corrected", true, map[string]string{key: "false"}, map[string]string{key: "true"}, true},
		{"removed", false, map[string]string{key: "true", "x": "y"}, map[string]string{"x": "y"}, true},
		{"absent stays so", false, map[string]string{"x": "y"}, map[string]string{"x": "y"}, false},
	} {
		spec := testSpec()
		spec.ControllerAttachDetach = tt.enabled
		existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: tt.existing}}
		if got := reconcileAttachDetachAnnotation(spec.initialNode(), existing); got != tt.wantChanged || !reflect.DeepEqual(existing.Annotations, tt.want) {
			t.Errorf("%s: changed %v, annotations %v; want %v, %v", tt.name, got, existing.Annotations, tt.wantChanged, tt.want)
		}
	}
}

// TestVolumesInUse: the volume-manager's answer is the Node's list, a
// change of it a change of the status; without an answer the list stays.
func TestVolumesInUse(t *testing.T) {
	spec := testSpec()
	t0 := time.Now()
	original := spec.initialNode()
	setConditions(original, health{}, t0)
	inUse := []v1.UniqueVolumeName{"kubernetes.io/csi/d^h"}
	node, changed, _ := spec.updateNode(original, health{VolumesInUse: inUse, VolumesInUseKnown: true}, t0)
	if !changed || !reflect.DeepEqual(node.Status.VolumesInUse, inUse) {
		t.Fatalf("changed %v, volumesInUse %v", changed, node.Status.VolumesInUse)
	}
	kept, changed, _ := spec.updateNode(node, health{}, t0)
	if changed || !reflect.DeepEqual(kept.Status.VolumesInUse, inUse) {
		t.Fatalf("unknown: changed %v, volumesInUse %v", changed, kept.Status.VolumesInUse)
	}
	if none, changed, _ := spec.updateNode(node, health{VolumesInUseKnown: true}, t0); !changed || none.Status.VolumesInUse != nil {
		t.Fatalf("none: changed %v, volumesInUse %v", changed, none.Status.VolumesInUse)
	}
}

func TestRuntimeProblems(t *testing.T) {
	ok := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	netOK := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	netBad := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"}
	tests := []struct {
		name string
		st   *runtimeapi.RuntimeStatus
		want []string
	}{
		{"ready", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{ok, netOK}}, nil},
		{"network not ready", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{ok, netBad}},
			[]string{"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized"}},
		{"runtime condition missing", &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{netOK}},
			[]string{"container runtime not ready: RuntimeReady condition missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runtimeProblems(tt.st)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSetConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	tests := []struct {
		name           string
		before         []health // applied at t0 in order
		now            health   // applied at t1
		wantReady      v1.ConditionStatus
		wantReason     string
		wantTransition *v1.ConditionStatus
		wantLTT        time.Time
	}{
		{"first ready: no transition", nil, health{}, v1.ConditionTrue, "KubeletReady", nil, t1},
		{"stays ready: transition time kept", []health{{}}, health{}, v1.ConditionTrue, "KubeletReady", nil, t0},
		{"becomes not ready", []health{{}}, health{Problems: []string{"PLEG is not healthy: x"}}, v1.ConditionFalse, "KubeletNotReady", ptr(v1.ConditionFalse), t1},
		{"becomes ready", []health{{Problems: []string{"a"}}}, health{}, v1.ConditionTrue, "KubeletReady", ptr(v1.ConditionTrue), t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &v1.Node{}
			for _, h := range tt.before {
				setConditions(node, h, t0)
			}
			tr := setConditions(node, tt.now, t1)
			conds := node.Status.Conditions
			if len(conds) != 4 {
				t.Fatalf("conditions = %v", conds)
			}
			ready := conds[3]
			if ready.Type != v1.NodeReady || ready.Status != tt.wantReady || ready.Reason != tt.wantReason {
				t.Errorf("ready = %+v", ready)
			}
			if !ready.LastHeartbeatTime.Time.Equal(t1) || !ready.LastTransitionTime.Time.Equal(tt.wantLTT) {
				t.Errorf("heartbeat %v transition %v, want %v %v", ready.LastHeartbeatTime, ready.LastTransitionTime, t1, tt.wantLTT)
			}
			if (tr == nil) != (tt.wantTransition == nil) || (tr != nil && *tr != *tt.wantTransition) {
				t.Errorf("transition = %v, want %v", tr, tt.wantTransition)
			}
			for _, c := range conds[:3] {
				if c.Status != v1.ConditionFalse || !strings.HasPrefix(c.Reason, "KubeletHas") {
					t.Errorf("pressure condition %+v", c)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestPressureConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	type want struct {
		status v1.ConditionStatus
		reason string
		ltt    time.Time
	}
	tests := []struct {
		name          string
		before, now   []v1.NodeConditionType
		memory, disk  want
		pid           want
		wantMsgMemory string
	}{
		{"none", nil, nil,
			want{v1.ConditionFalse, "KubeletHasSufficientMemory", t0}, want{v1.ConditionFalse, "KubeletHasNoDiskPressure", t0},
			want{v1.ConditionFalse, "KubeletHasSufficientPID", t0}, "kubelet has sufficient memory available"},
		{"memory and disk pressure", nil, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure},
			want{v1.ConditionTrue, "KubeletHasInsufficientMemory", t1}, want{v1.ConditionTrue, "KubeletHasDiskPressure", t1},
			want{v1.ConditionFalse, "KubeletHasSufficientPID", t0}, "kubelet has insufficient memory available"},
		{"pid pressure kept", []v1.NodeConditionType{v1.NodePIDPressure}, []v1.NodeConditionType{v1.NodePIDPressure},
			want{v1.ConditionFalse, "KubeletHasSufficientMemory", t0}, want{v1.ConditionFalse, "KubeletHasNoDiskPressure", t0},
			want{v1.ConditionTrue, "KubeletHasInsufficientPID", t0}, "kubelet has sufficient memory available"},
		{"memory pressure over", []v1.NodeConditionType{v1.NodeMemoryPressure}, nil,
			want{v1.ConditionFalse, "KubeletHasSufficientMemory", t1}, want{v1.ConditionFalse, "KubeletHasNoDiskPressure", t0},
			want{v1.ConditionFalse, "KubeletHasSufficientPID", t0}, "kubelet has sufficient memory available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &v1.Node{}
			setConditions(node, health{Pressure: tt.before}, t0)
			setConditions(node, health{Pressure: tt.now}, t1)
			got := map[v1.NodeConditionType]v1.NodeCondition{}
			for _, c := range node.Status.Conditions {
				got[c.Type] = c
			}
			for typ, w := range map[v1.NodeConditionType]want{v1.NodeMemoryPressure: tt.memory, v1.NodeDiskPressure: tt.disk, v1.NodePIDPressure: tt.pid} {
				c := got[typ]
				if c.Status != w.status || c.Reason != w.reason || !c.LastTransitionTime.Time.Equal(w.ltt) {
					t.Errorf("%s = %s %s since %v, want %s %s since %v", typ, c.Status, c.Reason, c.LastTransitionTime, w.status, w.reason, w.ltt)
				}
			}
			if m := got[v1.NodeMemoryPressure].Message; m != tt.wantMsgMemory {
				t.Errorf("memory message %q, want %q", m, tt.wantMsgMemory)
			}
			if last := node.Status.Conditions[len(node.Status.Conditions)-1]; last.Type != v1.NodeReady {
				t.Errorf("last condition %s, want Ready", last.Type)
			}
		})
	}
}

func TestNodeStatusChangedIgnoresHeartbeats(t *testing.T) {
	spec := testSpec()
	t0 := time.Now()
	original := spec.initialNode()
	setConditions(original, health{}, t0)
	node, changed, _ := spec.updateNode(original, health{}, t0.Add(time.Minute))
	if changed {
		t.Errorf("heartbeat-only update reported as changed")
	}
	if node.Status.Conditions[3].LastHeartbeatTime.Equal(&original.Status.Conditions[3].LastHeartbeatTime) {
		t.Errorf("heartbeat not advanced")
	}
	if _, changed, _ := spec.updateNode(original, health{Problems: []string{"x"}}, t0.Add(time.Minute)); !changed {
		t.Errorf("Ready change not reported as changed")
	}
	if _, changed, _ := spec.updateNode(original, health{ImagesKnown: true, Images: []v1.ContainerImage{{Names: []string{"a"}}}}, t0); !changed {
		t.Errorf("images change not reported as changed")
	}
}

func TestNodeImages(t *testing.T) {
	imgs := []*runtimeapi.Image{
		{Id: "small", RepoTags: []string{"small:1"}, Size: 10},
		{Id: "big", RepoTags: []string{"big:1"}, RepoDigests: []string{"big@sha256:1"}, Size: 100},
		{Id: "unnamed", Size: 1000},
		{Id: "mid", RepoTags: []string{"a", "b", "c", "d", "e", "f"}, Size: 50},
	}
	got := nodeImages(imgs, 2)
	if len(got) != 2 || got[0].Names[0] != "big@sha256:1" || got[0].Names[1] != "big:1" || got[0].SizeBytes != 100 || len(got[1].Names) != 5 {
		t.Errorf("images = %+v", got)
	}
	if all := nodeImages(imgs, -1); len(all) != 3 {
		t.Errorf("unlimited: %d images, want 3", len(all))
	}
}

func TestNodeStatusPatchReplacesAddresses(t *testing.T) {
	old := testSpec().initialNode()
	spec := testSpec()
	spec.IP = net.ParseIP("10.0.0.2")
	patch, err := nodeStatusPatch(old, spec.initialNode())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), `"$patch":"replace"`) || !strings.Contains(string(patch), "10.0.0.2") {
		t.Errorf("patch = %s", patch)
	}
	if _, ok := m["spec"]; ok {
		t.Errorf("patch touches spec: %s", patch)
	}
}

func cond(t v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s}
}

func TestMergePodStatus(t *testing.T) {
	tests := []struct {
		name             string
		api, kubelet     v1.PodStatus
		couldRun         bool
		wantPhase        v1.PodPhase
		wantConds        map[v1.PodConditionType]v1.ConditionStatus
		wantClaimsKept   bool
		wantConditionLen int
	}{
		{
			name:      "others' condition kept, kubelet's (PodScheduled too, as upstream's) replaced",
			api:       v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{cond(v1.PodScheduled, v1.ConditionFalse), cond(v1.PodReady, v1.ConditionFalse), cond("example.com/gate", v1.ConditionTrue)}},
			kubelet:   v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond(v1.ContainersReady, v1.ConditionTrue), cond(v1.PodScheduled, v1.ConditionTrue)}},
			couldRun:  true,
			wantPhase: v1.PodRunning,
			wantConds: map[v1.PodConditionType]v1.ConditionStatus{v1.PodScheduled: v1.ConditionTrue, "example.com/gate": v1.ConditionTrue,
				v1.PodReady: v1.ConditionTrue, v1.ContainersReady: v1.ConditionTrue},
			wantConditionLen: 4,
		},
		{
			name:             "no terminal phase while containers could run",
			api:              v1.PodStatus{Phase: v1.PodRunning},
			kubelet:          v1.PodStatus{Phase: v1.PodSucceeded},
			couldRun:         true,
			wantPhase:        v1.PodRunning,
			wantConds:        map[v1.PodConditionType]v1.ConditionStatus{},
			wantConditionLen: 0,
		},
		{
			name:             "terminal phase once stopped, never ready",
			api:              v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "c"}}},
			kubelet:          v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue)}},
			wantPhase:        v1.PodFailed,
			wantConds:        map[v1.PodConditionType]v1.ConditionStatus{v1.PodReady: v1.ConditionFalse},
			wantClaimsKept:   true,
			wantConditionLen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergePodStatus(tt.api, tt.kubelet, tt.couldRun)
			if got.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", got.Phase, tt.wantPhase)
			}
			if len(got.Conditions) != tt.wantConditionLen {
				t.Errorf("conditions = %v", got.Conditions)
			}
			for _, c := range got.Conditions {
				if want, ok := tt.wantConds[c.Type]; !ok || want != c.Status {
					t.Errorf("condition %s=%s, want %v", c.Type, c.Status, tt.wantConds)
				}
			}
			if tt.wantClaimsKept && len(got.ResourceClaimStatuses) != 1 {
				t.Errorf("resource claim statuses dropped")
			}
		})
	}
}

func TestPodStatusPatch(t *testing.T) {
	st := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.2"}
	patch, unchanged, err := podStatusPatch("u1", st, st)
	if err != nil || !unchanged || string(patch) != `{"metadata":{"uid":"u1"}}` {
		t.Errorf("same status: %s unchanged=%v err=%v", patch, unchanged, err)
	}
	next := st
	next.Phase = v1.PodSucceeded
	patch, unchanged, err = podStatusPatch("u1", st, next)
	if err != nil || unchanged || !strings.Contains(string(patch), `"uid":"u1"`) || !strings.Contains(string(patch), `"phase":"Succeeded"`) {
		t.Errorf("changed status: %s unchanged=%v err=%v", patch, unchanged, err)
	}
}

func staticPod(hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default", UID: "static-uid", ResourceVersion: "7",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{manifest.ConfigHashAnnotation: hash, manifest.ConfigSourceAnnotation: manifest.SourceFile}},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestMirrorPod(t *testing.T) {
	static := staticPod("h1")
	m := mirrorPod(static, "n1", "node-uid")
	if m.UID != "" || m.ResourceVersion != "" || m.Status.Phase != "" {
		t.Errorf("server-owned fields copied: uid %q rv %q phase %q", m.UID, m.ResourceVersion, m.Status.Phase)
	}
	if m.Annotations[ConfigMirrorAnnotation] != "h1" || m.Annotations[manifest.ConfigSourceAnnotation] != "file" {
		t.Errorf("annotations = %v", m.Annotations)
	}
	if static.Annotations[ConfigMirrorAnnotation] != "" {
		t.Errorf("static pod's annotations modified")
	}
	ref := m.OwnerReferences
	if len(ref) != 1 || ref[0].Kind != "Node" || ref[0].Name != "n1" || ref[0].UID != "node-uid" || ref[0].APIVersion != "v1" || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("ownerReferences = %+v", ref)
	}
	if m.Spec.NodeName != "n1" || m.Name != "web-n1" || m.Labels["app"] != "web" {
		t.Errorf("mirror = %+v", m.ObjectMeta)
	}
	if !isMirrorOf(m, static) || isMirrorOf(m, staticPod("h2")) {
		t.Errorf("isMirrorOf wrong")
	}
	now := metav1.Now()
	m.DeletionTimestamp = &now
	if isMirrorOf(m, static) {
		t.Errorf("a mirror pod being deleted counts as current")
	}
}

func TestIsStatic(t *testing.T) {
	for src, want := range map[string]bool{"file": true, "http": true, "api": false, "": false} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if src != "" {
			p.Annotations[manifest.ConfigSourceAnnotation] = src
		}
		if got := isStatic(p); got != want {
			t.Errorf("source %q: static = %v", src, got)
		}
	}
}

func TestOSImage(t *testing.T) {
	if got := osImage("NAME=Debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("osImage = %q", got)
	}
}

func TestStorageResources(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("4Gi"),
		"hugepages-2Mi": resource.MustParse("1Gi"), "hugepages-1Gi": resource.MustParse("0")}
	allocatable := v1.ResourceList{v1.ResourceMemory: resource.MustParse("3Gi")}
	c, a, err := storageResources(capacity, allocatable, t.TempDir(), map[string]string{"ephemeral-storage": "1Ki"}, nil, map[string]string{"nodefs.available": "10%"})
	if err != nil {
		t.Fatal(err)
	}
	cs, as := c[v1.ResourceEphemeralStorage], a[v1.ResourceEphemeralStorage]
	if cs.Value() <= 0 || as.Value() >= cs.Value() || as.Value() <= 0 {
		t.Errorf("ephemeral-storage capacity %s allocatable %s", cs.String(), as.String())
	}
	if hp := c["hugepages-2Mi"]; hp.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("hugepages-2Mi capacity = %s, want 1Gi", hp.String())
	}
	// The huge pages' memory is not allocatable as memory, as upstream.
	if m := a[v1.ResourceMemory]; m.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("allocatable memory = %s, want 2Gi", m.String())
	}
	if _, ok := c[v1.ResourceCPU]; !ok {
		t.Errorf("cpu dropped")
	}
}

func TestBackoff(t *testing.T) {
	b := backoff{initial: 100 * time.Millisecond, max: 5 * time.Second}
	var got []time.Duration
	for range 8 {
		got = append(got, b.next())
	}
	if got[0] != 100*time.Millisecond || got[1] != 200*time.Millisecond || got[7] != 5*time.Second {
		t.Errorf("backoff = %v", got)
	}
	b.reset()
	if b.next() != 100*time.Millisecond {
		t.Errorf("reset did not restart")
	}
}

func TestMergePodStatusDisruptionTarget(t *testing.T) {
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: "evicted"}
	running := v1.PodStatus{Phase: v1.PodRunning}
	failed := v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Conditions: []v1.PodCondition{disruption}}
	tests := []struct {
		name                       string
		api, status                v1.PodStatus
		couldHaveRunningContainers bool
		want                       bool
	}{
		{"turning terminal, nothing running: written", running, failed, false, true},
		{"containers may still run: not yet", running, failed, true, false},
		{"not terminal: the API's kept", running, v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{disruption}}, false, false},
	}
	for _, tt := range tests {
		merged := mergePodStatus(tt.api, tt.status, tt.couldHaveRunningContainers)
		got := false
		for _, c := range merged.Conditions {
			got = got || c.Type == v1.DisruptionTarget && c.Reason == v1.PodReasonTerminationByKubelet
		}
		if got != tt.want {
			t.Errorf("%s: DisruptionTarget written %v, want %v (%+v)", tt.name, got, tt.want, merged.Conditions)
		}
	}
}

// TestNodeFeatures checks upstream's NodeFeatures setter: status.features
// follows the runtime's reported features, and a runtime that reports
// none (containerd before 2.0) leaves the Node's as they are.
func TestNodeFeatures(t *testing.T) {
	supported := &v1.NodeFeatures{SupplementalGroupsPolicy: new(true)}
	for _, tc := range []struct {
		name     string
		existing *v1.NodeFeatures
		runtime  *runtimeapi.RuntimeFeatures
		want     *v1.NodeFeatures
		changed  bool
	}{
		{name: "no features reported"},
		{name: "no features reported keeps the Node's", existing: supported, want: supported},
		{name: "supported", runtime: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}, want: supported, changed: true},
		{name: "not supported", runtime: &runtimeapi.RuntimeFeatures{}, want: &v1.NodeFeatures{SupplementalGroupsPolicy: new(false)}, changed: true},
		{name: "no longer supported", existing: supported, runtime: &runtimeapi.RuntimeFeatures{},
			want: &v1.NodeFeatures{SupplementalGroupsPolicy: new(false)}, changed: true},
		{name: "unchanged", existing: supported, runtime: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}, want: supported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			t0 := time.Now()
			original := spec.initialNode()
			setConditions(original, health{}, t0)
			original.Status.Features = tc.existing
			node, changed, _ := spec.updateNode(original, health{Features: tc.runtime}, t0)
			if !reflect.DeepEqual(node.Status.Features, tc.want) || changed != tc.changed {
				t.Errorf("features %v (changed %v), want %v (changed %v)", node.Status.Features, changed, tc.want, tc.changed)
			}
		})
	}
}

// TestNodeStatusKeepsOthersResources: an extended resource someone else
// put in the Node's status (as the e2e suite and operators do) stays
// through the node's own status updates, as upstream's MachineInfo setter
// keeps it: no change is reported and the patch does not remove it.
func TestNodeStatusKeepsOthersResources(t *testing.T) {
	spec := testSpec()
	t0 := time.Now()
	original := spec.initialNode()
	setConditions(original, health{}, t0)
	original.Status.Capacity["example.com/dongle"] = resource.MustParse("3")
	original.Status.Allocatable["example.com/dongle"] = resource.MustParse("3")
	node, changed, _ := spec.updateNode(original, health{}, t0.Add(time.Minute))
	if changed {
		t.Errorf("an update that kept the Node's resources reported as changed")
	}
	patch, err := nodeStatusPatch(original, node)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(patch), "dongle") || strings.Contains(string(patch), "capacity") {
		t.Errorf("patch %s touches the resources", patch)
	}
}
