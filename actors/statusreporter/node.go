package statusreporter

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/internal/nodecapacity"
	"github.com/actorlet/actorlet/internal/version"
)

// Labels upstream's kubelet sets on its Node (k8s.io/kubelet/pkg/apis).
const (
	labelOSBeta   = "beta.kubernetes.io/os"
	labelArchBeta = "beta.kubernetes.io/arch"
)

// defaultLabels are the labels an existing Node is reconciled to, as
// upstream's updateDefaultLabels does; --node-labels and taints are only
// applied when the Node is created, as upstream does.
var defaultLabels = []string{v1.LabelHostname, v1.LabelOSStable, v1.LabelArchStable, labelOSBeta, labelArchBeta}

// machineInfo is what the node reports about the host; read once at start.
type machineInfo struct {
	MachineID, SystemUUID, BootID, KernelVersion, OSImage string
}

// readMachineInfo reads the host's identity from the files upstream's
// cadvisor reads. Missing files leave fields empty: a container without
// /sys/class/dmi still runs pods.
func readMachineInfo() machineInfo {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	mi := machineInfo{
		MachineID:  read("/etc/machine-id"),
		SystemUUID: read("/sys/class/dmi/id/product_uuid"),
		BootID:     read("/proc/sys/kernel/random/boot_id"),
		OSImage:    osImage(read("/etc/os-release")),
	}
	if mi.SystemUUID == "" {
		mi.SystemUUID = mi.MachineID
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		mi.KernelVersion = string(bytes.TrimRight(uts.Release[:], "\x00"))
	}
	return mi
}

// osImage is PRETTY_NAME of an os-release file, as upstream reports it.
func osImage(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

// storageResources adds ephemeral-storage (the filesystem of rootDir; in
// allocatable less its kubeReserved and systemReserved and the
// nodefs.available hard eviction threshold, as upstream does) to copies of
// capacity and allocatable, and takes the memory of the huge pages of
// capacity (hugepages-<size>, which the caller reads from the machine) off
// allocatable memory, as upstream's MachineInfo setter does.
func storageResources(capacity, allocatable v1.ResourceList, rootDir string, kubeReserved, systemReserved, evictionHard map[string]string) (v1.ResourceList, v1.ResourceList, error) {
	c, a := capacity.DeepCopy(), nodecapacity.StatusAllocatable(capacity, allocatable)
	if c == nil {
		c = v1.ResourceList{}
	}
	if a == nil {
		a = v1.ResourceList{}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(rootDir, &st); err != nil {
		return c, a, fmt.Errorf("statfs root directory %s: %w", rootDir, err)
	}
	storage := v1.ResourceList{v1.ResourceEphemeralStorage: *resource.NewQuantity(int64(st.Blocks)*st.Bsize, resource.BinarySI)}
	alloc, err := nodecapacity.Allocatable(storage, kubeReserved, systemReserved, evictionHard)
	if err != nil {
		return c, a, err
	}
	c[v1.ResourceEphemeralStorage] = storage[v1.ResourceEphemeralStorage]
	a[v1.ResourceEphemeralStorage] = alloc[v1.ResourceEphemeralStorage]
	return c, a, nil
}

// initialNode is the Node this kubelet registers, as upstream's initialNode
// builds it: labels, taints, addresses, resources, nodeInfo and endpoint.
func (s *nodeSpec) initialNode() *v1.Node {
	labels := map[string]string{
		v1.LabelHostname:   s.Name,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		labelOSBeta:        runtime.GOOS,
		labelArchBeta:      runtime.GOARCH,
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
		Spec:       v1.NodeSpec{Taints: append([]v1.Taint(nil), s.Taints...), ProviderID: s.ProviderID},
	}
	if s.ControllerAttachDetach {
		node.Annotations = map[string]string{AnnotationControllerManagedAttachDetach: "true"}
	}
	s.setStaticStatus(node)
	return node
}

// AnnotationControllerManagedAttachDetach is upstream's
// volumehelper.ControllerManagedAttachAnnotation: with it, the
// attach-detach controller attaches and detaches the node's volumes
// (for CSI, it makes their VolumeAttachments).
const AnnotationControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// NodeAddresses are the addresses the node reports in its status: its IP
// (when known) and its host name. The serving certificate's SANs are these.
func NodeAddresses(ip net.IP, name string) []v1.NodeAddress {
	var out []v1.NodeAddress
	if ip != nil {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip.String()})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: name})
}

// setStaticStatus sets the parts of the status that do not change while the
// kubelet runs.
func (s *nodeSpec) setStaticStatus(node *v1.Node) {
	st := &node.Status
	st.Addresses = NodeAddresses(s.IP, s.Name)
	st.Capacity, st.Allocatable = nodecapacity.StatusResources(*st, s.Capacity, s.Allocatable)
	st.NodeInfo = v1.NodeSystemInfo{
		MachineID:               s.Machine.MachineID,
		SystemUUID:              s.Machine.SystemUUID,
		BootID:                  s.Machine.BootID,
		KernelVersion:           s.Machine.KernelVersion,
		OSImage:                 s.Machine.OSImage,
		ContainerRuntimeVersion: s.RuntimeVersion,
		KubeletVersion:          version.NodeVersion(),
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
	st.DaemonEndpoints.KubeletEndpoint.Port = s.Port
}

// reconcileExisting brings an existing Node's default labels in line with
// the initial Node, never removing others, as upstream does. It reports
// whether existing changed.
func reconcileExisting(initial, existing *v1.Node) bool {
	changed := reconcileAttachDetachAnnotation(initial, existing)
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, l := range defaultLabels {
		want, ok := initial.Labels[l]
		if !ok {
			continue
		}
		if existing.Labels[l] != want {
			existing.Labels[l] = want
			changed = true
		}
		if existing.Labels[l] == "" {
			delete(existing.Labels, l)
		}
	}
	return changed
}

// reconcileAttachDetachAnnotation is upstream's
// reconcileCMADAnnotationWithExistingNode: the existing Node's annotation
// follows enableControllerAttachDetach, set or removed. It reports whether
// existing changed.
func reconcileAttachDetachAnnotation(initial, existing *v1.Node) bool {
	want, wanted := initial.Annotations[AnnotationControllerManagedAttachDetach]
	have, has := existing.Annotations[AnnotationControllerManagedAttachDetach]
	switch {
	case wanted && (!has || have != want):
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[AnnotationControllerManagedAttachDetach] = want
		return true
	case !wanted && has:
		delete(existing.Annotations, AnnotationControllerManagedAttachDetach)
		return true
	}
	return false
}

// register creates the Node, or reconciles the existing one, as upstream's
// tryRegisterWithAPIServer does, and returns the Node as the API has it
// and whether it created it.
func register(ctx context.Context, kube kubernetes.Interface, initial *v1.Node) (*v1.Node, bool, error) {
	created, err := kube.CoreV1().Nodes().Create(ctx, initial, metav1.CreateOptions{})
	if err == nil {
		return created, true, nil
	}
	if !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return nil, false, fmt.Errorf("create node %s: %w", initial.Name, err)
	}
	existing, err := kube.CoreV1().Nodes().Get(ctx, initial.Name, metav1.GetOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("get existing node %s: %w", initial.Name, err)
	}
	updated := existing.DeepCopy()
	if !reconcileExisting(initial, updated) {
		return existing, false, nil
	}
	node, err := patchNodeStatus(ctx, kube, existing, updated)
	return node, false, err
}

// getNode reads the Node when registerNode is false: someone else
// registers it, and this kubelet only needs it to exist.
func getNode(ctx context.Context, kube kubernetes.Interface, name string) (*v1.Node, error) {
	node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node %s: %w", name, err)
	}
	return node, nil
}
