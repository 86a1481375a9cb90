package statusreporter

import (
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
)

// maxNamesPerImage bounds the names reported per image, as upstream's
// MaxNamesPerImageInNodeStatus.
const maxNamesPerImage = 5

// health is what makes the node ready or not, gathered by one probe.
type health struct {
	// Problems are the reasons the node is not ready, in upstream's words:
	// runtime, network, PLEG. Empty: ready.
	Problems []string
	Images   []v1.ContainerImage
	// ImagesKnown is false when the image list could not be read: the
	// Node's current list is kept rather than emptied.
	ImagesKnown bool
	// Pressure are the conditions under pressure, as the eviction actor
	// last said (NodePressure).
	Pressure []v1.NodeConditionType
	// Features are the runtime's features, as its Status answer gave
	// them; nil when it gave none (containerd before 2.0) or could not be
	// asked: the Node's status.features is then left as it is.
	Features *runtimeapi.RuntimeFeatures
	// VolumesInUse are the attachable volumes the volume-manager has
	// mounted; VolumesInUseKnown is false when it did not answer, and the
	// Node's list is then kept, never emptied under a mount.
	VolumesInUse      []v1.UniqueVolumeName
	VolumesInUseKnown bool
}

// runtimeProblems turns a CRI Status answer into upstream's runtime and
// network errors.
func runtimeProblems(st *runtimeapi.RuntimeStatus) []string {
	var out []string
	if st == nil {
		return []string{"container runtime status check may not have completed yet"}
	}
	find := func(t string) *runtimeapi.RuntimeCondition {
		for _, c := range st.Conditions {
			if c.Type == t {
				return c
			}
		}
		return nil
	}
	if c := find(runtimeapi.RuntimeReady); c == nil || !c.Status {
		out = append(out, "container runtime not ready: "+conditionText(runtimeapi.RuntimeReady, c))
	}
	if c := find(runtimeapi.NetworkReady); c == nil || !c.Status {
		out = append(out, "container runtime network not ready: "+conditionText(runtimeapi.NetworkReady, c))
	}
	return out
}

func conditionText(t string, c *runtimeapi.RuntimeCondition) string {
	if c == nil {
		return t + " condition missing"
	}
	return t + "=false reason:" + c.Reason + " message:" + c.Message
}

// nodeImages is node.status.images: the largest images first, at most max
// of them (max < 0: all), names from digests then tags, as upstream.
func nodeImages(images []*runtimeapi.Image, max int32) []v1.ContainerImage {
	sorted := append([]*runtimeapi.Image(nil), images...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Size > sorted[j].Size })
	var out []v1.ContainerImage
	for _, img := range sorted {
		if max >= 0 && len(out) >= int(max) {
			break
		}
		names := append(append([]string(nil), img.RepoDigests...), img.RepoTags...)
		if len(names) == 0 {
			continue
		}
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
	}
	return out
}

// pressureConditions are the conditions the eviction manager drives, with
// upstream's reasons and messages when under pressure and when not.
var pressureConditions = []struct {
	typ                     v1.NodeConditionType
	reason, message         string
	reasonTrue, messageTrue string
}{
	{v1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
	{v1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
		"KubeletHasDiskPressure", "kubelet has disk pressure"},
	{v1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available",
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
}

// pressureEvents are upstream's event reasons of the pressure conditions'
// transitions.
var pressureEvents = []struct {
	typ             v1.NodeConditionType
	onTrue, onFalse string
}{
	{v1.NodeMemoryPressure, events.NodeHasInsufficientMemory, events.NodeHasSufficientMemory},
	{v1.NodeDiskPressure, events.NodeHasDiskPressure, events.NodeHasNoDiskPressure},
	{v1.NodePIDPressure, events.NodeHasInsufficientPID, events.NodeHasSufficientPID},
}

// setConditions updates node's conditions as upstream's setters do: every
// heartbeat is now, a transition time changes only with the status, Ready is
// last. It returns the new Ready status when it changed from an earlier one.
func setConditions(node *v1.Node, h health, now time.Time) *v1.ConditionStatus {
	t := metav1.NewTime(now)
	for _, p := range pressureConditions {
		c := v1.NodeCondition{Type: p.typ, Status: v1.ConditionFalse, Reason: p.reason, Message: p.message, LastHeartbeatTime: t}
		if slices.Contains(h.Pressure, p.typ) {
			c.Status, c.Reason, c.Message = v1.ConditionTrue, p.reasonTrue, p.messageTrue
		}
		setCondition(node, c, t)
	}
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: t}
	if len(h.Problems) > 0 {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "KubeletNotReady", strings.Join(h.Problems, ", ")
	}
	// Ready must stay the last condition for old components (upstream
	// issue 16961): remove it and append it again.
	var prev *v1.NodeCondition
	conds := node.Status.Conditions[:0:0]
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			c := node.Status.Conditions[i]
			prev = &c
			continue
		}
		conds = append(conds, node.Status.Conditions[i])
	}
	ready.LastTransitionTime = t
	var transition *v1.ConditionStatus
	if prev != nil {
		if prev.Status == ready.Status {
			ready.LastTransitionTime = prev.LastTransitionTime
		} else {
			s := ready.Status
			transition = &s
		}
	}
	node.Status.Conditions = append(conds, ready)
	return transition
}

func setCondition(node *v1.Node, c v1.NodeCondition, now metav1.Time) {
	for i := range node.Status.Conditions {
		old := &node.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = now
		}
		*old = c
		return
	}
	c.LastTransitionTime = now
	node.Status.Conditions = append(node.Status.Conditions, c)
}

// nodeStatusChanged reports whether a status differs from the original in
// anything but the conditions' heartbeats, as upstream's
// nodeStatusHasChanged: only such changes are written before
// nodeStatusReportFrequency expires.
func nodeStatusChanged(original, status *v1.NodeStatus) bool {
	if len(original.Conditions) != len(status.Conditions) {
		return true
	}
	strip := func(cs []v1.NodeCondition) []v1.NodeCondition {
		out := append([]v1.NodeCondition(nil), cs...)
		for i := range out {
			out[i].LastHeartbeatTime = metav1.Time{}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
		return out
	}
	if !apiequality.Semantic.DeepEqual(strip(original.Conditions), strip(status.Conditions)) {
		return true
	}
	o, s := original.DeepCopy(), status.DeepCopy()
	o.Conditions, s.Conditions = nil, nil
	return !apiequality.Semantic.DeepEqual(o, s)
}
