package statusreporter

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages"
)

// nodeSpec is everything the Node is built from that does not change while
// the kubelet runs. It is read-only once the actor started, so that the
// goroutines doing API calls can share it.
type nodeSpec struct {
	Name                  string
	IP                    net.IP
	Labels                map[string]string
	Taints                []v1.Taint
	ProviderID            string
	Capacity, Allocatable v1.ResourceList
	Machine               machineInfo
	RuntimeVersion        string // containerd://1.6.20
	Port                  int32
	MaxImages             int32
	// ControllerAttachDetach is enableControllerAttachDetach: the Node
	// carries upstream's annotation that hands attach and detach of its
	// volumes to the attach-detach controller.
	ControllerAttachDetach bool
}

// updateNode is upstream's updateNode: a copy of original with the
// required labels, the static status, the images and the conditions set. It
// reports whether anything but heartbeats changed, and a Ready transition.
func (s *nodeSpec) updateNode(original *v1.Node, h health, now time.Time) (*v1.Node, bool, *v1.ConditionStatus) {
	node := original.DeepCopy()
	labelsChanged := false
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range map[string]string{v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH} {
		if node.Labels[k] != v {
			node.Labels[k] = v
			labelsChanged = true
		}
	}
	s.setStaticStatus(node)
	setFeatures(node, h.Features)
	if h.ImagesKnown {
		node.Status.Images = h.Images
	}
	if h.VolumesInUseKnown {
		// As upstream's VolumesInUse setter: the volume-manager's list,
		// sorted; nil when none.
		node.Status.VolumesInUse = h.VolumesInUse
	}
	transition := setConditions(node, h, now)
	return node, labelsChanged || nodeStatusChanged(&original.Status, &node.Status), transition
}

// setFeatures is upstream's NodeFeatures setter: status.features says
// whether the runtime honours supplementalGroupsPolicy: Strict, which
// admission reads. A runtime that reports no features leaves the Node's
// as they are (none, on a Node this kubelet registered), which admission
// reads as "not supported".
func setFeatures(node *v1.Node, f *runtimeapi.RuntimeFeatures) {
	if f == nil {
		return
	}
	node.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptrTo(f.GetSupplementalGroupsPolicy())}
}

func ptrTo[T any](v T) *T { return &v }

// nodeStatusPatch is upstream's PatchNodeStatus patch: a strategic merge
// patch from oldNode to newNode, leaving the spec alone, with the addresses
// replaced whole when they changed (their patch strategy is wrongly merge).
func nodeStatusPatch(oldNode, newNode *v1.Node) ([]byte, error) {
	oldData, err := json.Marshal(oldNode)
	if err != nil {
		return nil, fmt.Errorf("marshal node %s: %w", oldNode.Name, err)
	}
	replaceAddresses := len(oldNode.Status.Addresses) > 0 && !apiequality.Semantic.DeepEqual(oldNode.Status.Addresses, newNode.Status.Addresses)
	diff := newNode.DeepCopy()
	diff.Spec = oldNode.Spec
	if replaceAddresses {
		diff.Status.Addresses = oldNode.Status.Addresses
	}
	newData, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("marshal node %s: %w", newNode.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("node %s status patch: %w", newNode.Name, err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("node %s status patch: %w", newNode.Name, err)
	}
	status, _ := m["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		m["status"] = status
	}
	addrs := []any{}
	for _, a := range newNode.Status.Addresses {
		addrs = append(addrs, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = append(addrs, map[string]any{"$patch": "replace"})
	return json.Marshal(m)
}

func patchNodeStatus(ctx context.Context, kube kubernetes.Interface, oldNode, newNode *v1.Node) (*v1.Node, error) {
	patch, err := nodeStatusPatch(oldNode, newNode)
	if err != nil {
		return nil, err
	}
	node, err := kube.CoreV1().Nodes().Patch(ctx, newNode.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patch status of node %s: %w", newNode.Name, err)
	}
	return node, nil
}

// probe gathers the node's health outside the mailbox: the runtime's CRI
// status, its images, and PLEG's health report.
func probe(ctx context.Context, system *actor.ActorSystem, p *Params, maxImages int32) health {
	var h health
	if p.Runtime != nil {
		st, err := p.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			h.Problems = append(h.Problems, "container runtime is down: "+err.Error())
		} else {
			h.Problems = append(h.Problems, runtimeProblems(st.Status)...)
			h.Features = st.GetFeatures()
		}
	}
	if p.PLEG != nil {
		res, err := system.Root.RequestFuture(p.PLEG, &messages.HealthRequest{}, plegTimeout).Result()
		if r, ok := res.(*messages.HealthReport); err == nil && ok {
			if !r.Healthy {
				h.Problems = append(h.Problems, "PLEG is not healthy: "+r.Detail)
			}
		} else {
			h.Problems = append(h.Problems, fmt.Sprintf("PLEG is not healthy: no health report within %s", plegTimeout))
		}
	}
	if p.PluginManager != nil {
		// Unanswered (the plugin-manager restarting), storage does not
		// hold Ready: only a known storage error does, as upstream's.
		res, err := system.Root.RequestFuture(p.PluginManager, &messages.StorageStateRequest{}, plegTimeout).Result()
		if r, ok := res.(*messages.StorageState); err == nil && ok && r.Err != "" {
			h.Problems = append(h.Problems, r.Err)
		}
	}
	if p.VolumeManager != nil {
		res, err := system.Root.RequestFuture(p.VolumeManager, &messages.VolumesInUseRequest{}, plegTimeout).Result()
		if r, ok := res.(*messages.VolumesInUse); err == nil && ok {
			h.VolumesInUse, h.VolumesInUseKnown = r.Names, true
		}
	}
	if p.Images != nil {
		if imgs, err := p.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{}); err == nil {
			h.Images, h.ImagesKnown = nodeImages(imgs.Images, maxImages), true
		}
	}
	return h
}

// updateNodeStatus is one node status update: read the Node, compute its
// status, and patch it when it changed or reportDue.
func updateNodeStatus(ctx context.Context, kube kubernetes.Interface, spec *nodeSpec, h health, reportDue bool) *messages.NodeStatusUpdated {
	original, err := kube.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return &messages.NodeStatusUpdated{Err: fmt.Errorf("get node %s: %w", spec.Name, err)}
	}
	node, changed, transition := spec.updateNode(original, h, time.Now())
	previousBootID := original.Status.NodeInfo.BootID
	if !changed && !reportDue {
		return &messages.NodeStatusUpdated{Node: original, PreviousBootID: previousBootID}
	}
	updated, err := patchNodeStatus(ctx, kube, original, node)
	if err != nil {
		return &messages.NodeStatusUpdated{Err: err}
	}
	return &messages.NodeStatusUpdated{Node: updated, Patched: true, ReadyTransition: transition, PreviousBootID: previousBootID}
}
