package podmanager

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/nodecapacity"
	"github.com/actorlet/actorlet/messages"
)

// Admission reasons, as upstream's (pkg/kubelet/lifecycle, eviction and
// sysctl, and the scheduler plugins' names the predicate handler reports).
const (
	ReasonOSSelector      = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported  = "PodOSNotSupported"
	ReasonSysctlForbidden = "SysctlForbidden"
	ReasonEvicted         = "Evicted"
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonNodePorts       = "NodePorts"
	ReasonTaintToleration = "TaintToleration"
	ReasonNodeShutdown    = "NodeShutdown"
	// ReasonSupplementalGroupsPolicy is upstream's
	// SupplementalGroupsPolicyNotSupported.
	ReasonSupplementalGroupsPolicy = "SupplementalGroupsPolicyNotSupported"
	// ReasonUnexpected is upstream's UnexpectedAdmissionError: a panic in
	// admission rejects the pod rather than killing the pod-manager.
	ReasonUnexpected = "UnexpectedAdmissionError"
	// insufficientPrefix makes OutOfcpu, OutOfmemory, OutOfpods,
	// OutOfephemeral-storage, OutOfhugepages-2Mi, OutOfexample.com/foo.
	insufficientPrefix = "OutOf"
)

// The descriptions of the scheduler's filters, which the kubelet's
// messages quote ("Predicate NodeAffinity failed: ...").
const (
	descNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	descNodeName     = "node(s) didn't match the requested node name"
	descNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	descTaints       = "node(s) had taints that the pod didn't tolerate"
)

// systemCriticalPriority is upstream's scheduling.SystemCriticalPriority:
// pods at or above it are critical.
const systemCriticalPriority = 2 * 1000000000

// Rejection is why a pod was not admitted, in upstream's words: the pod
// fails with Reason (OutOfpods, OutOfcpu, NodeAffinity, ...) and Message.
type Rejection struct {
	Reason, Message string
	// AffinityOnly: node affinity (or the nodeSelector) is all that
	// failed; as upstream, the Node is read again and the pod admitted
	// anew before it is rejected, since the cached Node may lag behind a
	// label just added.
	AffinityOnly bool
	// Short is the resource a pod lacks, and by how much, when the
	// rejection is OutOf<resource>.
	Short *Shortfall
	// Preempt: the pod is critical and resources are all it lacks (each
	// rejection is in Shortfalls): as upstream's CriticalPodAdmissionHandler,
	// the node stops lower-priority pods to admit it rather than reject it.
	Preempt bool
	// Shortfalls are what a critical pod lacks (Preempt).
	Shortfalls []Shortfall
}

// Shortfall is how much of a resource a pod lacks: upstream's
// InsufficientResourceError's insufficient amount (milli-CPU for cpu,
// units otherwise).
type Shortfall struct {
	Name   v1.ResourceName
	Amount int64
}

// Admission is what admission decides against, besides the pod and the
// pods already admitted.
type Admission struct {
	// Node gives the labels, taints and allocatable resources; nil: a Node
	// with none (allocatable then comes from Allocatable alone).
	Node *v1.Node
	// MaxPods caps the pods admitted.
	MaxPods int
	// Allocatable stands in for the resources the Node does not list.
	Allocatable v1.ResourceList
	// Sysctls are the sysctls pods may set; nil: the safe set of any
	// kernel.
	Sysctls *SysctlAllowlist
	// Pressure are the node conditions under pressure (eviction).
	Pressure []v1.NodeConditionType
	// AppArmor is why this node cannot enforce AppArmor profiles (see
	// AppArmorHost); nil: it can.
	AppArmor error
	// ImageVolumes is why the container runtime cannot mount image
	// volumes (see ImageVolumeRuntime); nil: it can.
	ImageVolumes error
	// DRA: a dra-manager prepares pods' ResourceClaims.
	DRA bool
	// Static: the pod comes from a manifest (file or URL), not the API:
	// taints do not apply, and it is critical.
	Static bool
	// Devices are the healthy devices of each device plugin resource.
	Devices map[v1.ResourceName]int64
	// DeviceHolders are the pods holding devices of each resource.
	DeviceHolders map[v1.ResourceName][]types.UID
	// ShuttingDown: the node is shutting down (the node-shutdown actor).
	ShuttingDown bool
	// AllocateResources is the resource managers' admission (the CPU and
	// memory managers under the topology manager): it allocates as it admits, and
	// the caller releases what a later refusal leaves; nil: none.
	AllocateResources func(*v1.Pod) *Rejection
}

// admit decides whether pod may run beside the admitted pods, as upstream's
// admit handlers in their order: the eviction manager's, the sysctls', the
// resource managers' allocation, then the predicate handler's (the OS label and field, the supplemental groups
// policy, then resources, node affinity, node name and host ports, then
// NoExecute taints), then AppArmor's, then the declared features' (what
// actorlet does not implement), then the node shutdown manager's. The
// first refusal is the pod's.
func admit(pod *v1.Pod, admitted []*v1.Pod, a Admission) *Rejection {
	if r := admitPredicates(pod, admitted, a); r != nil {
		return r
	}
	if r := admitAppArmor(pod, a.AppArmor); r != nil {
		return r
	}
	if r := admitFeatures(pod, a.ImageVolumes, a.DRA); r != nil {
		return r
	}
	if a.ShuttingDown {
		// Every pod, critical ones too, as upstream's shutdown manager.
		return &Rejection{Reason: ReasonNodeShutdown, Message: "Pod was rejected as the node is shutting down."}
	}
	return nil
}

func admitPredicates(pod *v1.Pod, admitted []*v1.Pod, a Admission) *Rejection {
	if r := admitPressure(pod, a); r != nil {
		return r
	}
	if r := a.Sysctls.admit(pod); r != nil {
		return r
	}
	// The resources allocated through DRA are not the node's to check.
	fit := withoutDRAExtended(pod)
	if r := admitDevices(fit, admitted, a.Devices, a.DeviceHolders); r != nil {
		return r
	}
	if a.AllocateResources != nil {
		if r := a.AllocateResources(pod); r != nil {
			return r
		}
	}
	node := a.Node
	if node == nil {
		node = &v1.Node{}
	}
	if osSelectorMismatch(pod, node) {
		return &Rejection{Reason: ReasonOSSelector, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return &Rejection{Reason: ReasonOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if strictGroupsUnsupported(pod, node) {
		return &Rejection{Reason: ReasonSupplementalGroupsPolicy,
			Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
	}
	var reasons []*Rejection
	alloc := allocatable(node, a.Allocatable)
	raiseHeldDevices(alloc, fit, admitted, a.DeviceHolders)
	reasons = append(reasons, fitsResources(fit, admitted, a.MaxPods, alloc)...)
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		reasons = append(reasons, predicate(ReasonNodeAffinity, descNodeAffinity))
	}
	if pod.Spec.NodeName != "" && node.Name != "" && pod.Spec.NodeName != node.Name {
		reasons = append(reasons, predicate(ReasonNodeName, descNodeName))
	}
	if !fitsPorts(pod, admitted) {
		reasons = append(reasons, predicate(ReasonNodePorts, descNodePorts))
	}
	if !a.Static {
		_, untolerated := schedulingcorev1.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations,
			func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false)
		if untolerated {
			reasons = append(reasons, predicate(ReasonTaintToleration, descTaints))
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	if isCritical(pod, a.Static) {
		// As upstream's CriticalPodAdmissionHandler: resources are no reason
		// to reject a critical pod; any other reason is.
		other := slices.DeleteFunc(slices.Clone(reasons), func(r *Rejection) bool { return r.Short != nil })
		if len(other) == 0 {
			r := &Rejection{Reason: reasons[0].Reason, Message: reasons[0].Message, Preempt: true}
			for _, short := range reasons {
				r.Shortfalls = append(r.Shortfalls, *short.Short)
			}
			return r
		}
		reasons = other
	}
	first := reasons[0]
	first.AffinityOnly = !slices.ContainsFunc(reasons, func(r *Rejection) bool { return r.Reason != ReasonNodeAffinity })
	return first
}

// admitDevices is upstream's resource allocation handler, for device
// plugin resources (it runs before the predicates): a pod asking for more
// devices of one than are healthy and not held by the pods admitted is
// refused with the device manager's error. Its resources are checked in
// the order of their names; the devices are picked when each container
// starts (the device-manager).
func admitDevices(pod *v1.Pod, admitted []*v1.Pod, devices map[v1.ResourceName]int64, holders map[v1.ResourceName][]types.UID) *Rejection {
	for _, name := range slices.Sorted(maps.Keys(devices)) {
		want := podRequest(pod, name)
		if want.IsZero() || slices.Contains(holders[name], pod.UID) {
			// A pod holding its devices keeps them (a restart admits
			// running pods again before their plugins are back).
			continue
		}
		healthy := devices[name]
		var msg string
		if healthy == 0 {
			msg = fmt.Sprintf("no healthy devices present; cannot allocate unhealthy devices %s", name)
		} else {
			var used int64
			for _, p := range admitted {
				q := podRequest(p, name)
				used += q.Value()
			}
			if free := max(healthy-used, 0); want.Value() > free {
				msg = fmt.Sprintf("requested number of devices unavailable for %s. Requested: %d, Available: %d", name, want.Value(), free)
			}
		}
		if msg != "" {
			return &Rejection{Reason: ReasonUnexpected, Message: fmt.Sprintf("Allocate failed due to %s, which is unexpected", msg)}
		}
	}
	return nil
}

// isCritical is upstream's IsCriticalPod: a static pod, or one of
// system-critical priority or above (mirror pods are never run).
func isCritical(pod *v1.Pod, static bool) bool {
	return static || (pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority)
}

func predicate(name, desc string) *Rejection {
	return &Rejection{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// admitPressure is upstream's eviction manager's admission: under memory
// pressure alone, BestEffort pods are refused unless they tolerate the
// memory-pressure taint; under any other pressure, every pod. Critical
// pods (static, or of system-critical priority) are always admitted.
func admitPressure(pod *v1.Pod, a Admission) *Rejection {
	if len(a.Pressure) == 0 || isCritical(pod, a.Static) {
		return nil
	}
	if len(a.Pressure) == 1 && a.Pressure[0] == v1.NodeMemoryPressure {
		if cgroups.QOSClass(pod) != v1.PodQOSBestEffort {
			return nil
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		if schedulingcorev1.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, taint, false) {
			return nil
		}
	}
	return &Rejection{Reason: ReasonEvicted, Message: fmt.Sprintf("The node had condition: %v. ", a.Pressure)}
}

// osSelectorMismatch is upstream's rejectPodAdmissionBasedOnOSSelector: a
// pod labelled kubernetes.io/os must name the node's OS (this binary's,
// whatever the Node's label says).
func osSelectorMismatch(pod *v1.Pod, node *v1.Node) bool {
	want, ok := pod.Labels[v1.LabelOSStable]
	if !ok {
		return false
	}
	have, ok := node.Labels[v1.LabelOSStable]
	if !ok || have != runtime.GOOS {
		have = runtime.GOOS
	}
	return want != have
}

// strictGroupsUnsupported is upstream's
// rejectPodAdmissionBasedOnSupplementalGroupsPolicy (the feature is GA): a
// pod asking for supplementalGroupsPolicy: Strict is refused unless the
// Node says the runtime honours it (status.features, which the status
// reporter copies from the runtime's Status answer). A runtime that does
// not report the feature (containerd before 2.0) would run the container
// with the image's groups merged in, silently.
func strictGroupsUnsupported(pod *v1.Pod, node *v1.Node) bool {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return false
	}
	f := node.Status.Features
	return f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy
}

// allocatable is the Node's allocatable resources over the configured ones.
func allocatable(node *v1.Node, base v1.ResourceList) v1.ResourceList {
	out := base.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for name, q := range node.Status.Allocatable {
		out[name] = q.DeepCopy()
	}
	return out
}

// raiseHeldDevices raises the allocatable of each device plugin resource
// to at least what its holders among pod and admitted request, as
// upstream's sanitizeNodeAllocatable: pods that hold devices pass the
// predicates after a restart, before their plugin is back (the Node then
// lists none of them).
func raiseHeldDevices(alloc v1.ResourceList, pod *v1.Pod, admitted []*v1.Pod, holders map[v1.ResourceName][]types.UID) {
	for name, uids := range holders {
		var held int64
		for _, p := range append([]*v1.Pod{pod}, admitted...) {
			if slices.Contains(uids, p.UID) {
				q := podRequest(p, name)
				held += q.Value()
			}
		}
		if q, ok := alloc[name]; held > 0 && (!ok || q.Value() < held) {
			alloc[name] = *resource.NewQuantity(held, resource.DecimalSI)
		}
	}
}

// fitsResources is the scheduler's noderesources fit as the kubelet uses
// it: the pod count against maxPods, then cpu, memory, ephemeral-storage,
// then the scalar resources (hugepages, extended and *kubernetes.io/
// resources), each of the pod's requests against allocatable less what the
// admitted pods request. An extended resource the node does not list at
// all is not checked (upstream leaves it to cluster-level resources).
func fitsResources(pod *v1.Pod, admitted []*v1.Pod, maxPods int, alloc v1.ResourceList) []*Rejection {
	var out []*Rejection
	if len(admitted)+1 > maxPods {
		out = append(out, insufficient(v1.ResourcePods, 1, int64(len(admitted)), int64(maxPods)))
	}
	requested := map[v1.ResourceName]bool{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for name := range c.Resources.Requests {
			requested[name] = true
		}
		for name := range c.Resources.Limits {
			requested[name] = true
		}
	}
	for name := range pod.Spec.Overhead {
		requested[name] = true
	}
	if r := pod.Spec.Resources; r != nil {
		for name := range r.Requests {
			requested[name] = true
		}
	}
	var scalar []v1.ResourceName
	for name := range requested {
		if isScalar(name) {
			if _, known := alloc[name]; !known && nodecapacity.IsExtended(name) {
				continue
			}
			scalar = append(scalar, name)
		}
	}
	slices.Sort(scalar)
	for _, name := range append([]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}, scalar...) {
		if !requested[name] {
			continue
		}
		want := podRequest(pod, name)
		if want.IsZero() {
			continue
		}
		used := resource.Quantity{}
		for _, p := range admitted {
			used.Add(podRequest(p, name))
		}
		capacity := alloc[name]
		total := used.DeepCopy()
		total.Add(want)
		if total.Cmp(capacity) > 0 {
			out = append(out, insufficient(name, amount(want, name), amount(used, name), amount(capacity, name)))
		}
	}
	return out
}

func insufficient(name v1.ResourceName, requested, used, capacity int64) *Rejection {
	return &Rejection{Reason: insufficientPrefix + string(name), Message: fmt.Sprintf(
		"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, used, capacity),
		Short: &Shortfall{Name: name, Amount: requested - (capacity - used)}}
}

// isScalar is the scheduler's IsScalarResourceName: extended resources,
// hugepages and prefixed native resources (attachable volumes included).
func isScalar(name v1.ResourceName) bool {
	return nodecapacity.IsExtended(name) || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) ||
		strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// hostPorts are the host ports a pod takes: those of its containers and of
// its sidecars (restartable init containers), which run beside them.
func hostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// fitsPorts is the scheduler's nodeports fit: no host port of the pod is
// taken by an admitted pod on the same protocol and address, 0.0.0.0 (or
// none) taking the port on every address.
func fitsPorts(pod *v1.Pod, admitted []*v1.Pod) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return true
	}
	norm := func(p v1.ContainerPort) (string, v1.Protocol) {
		ip, proto := p.HostIP, p.Protocol
		if ip == "" {
			ip = "0.0.0.0"
		}
		if proto == "" {
			proto = v1.ProtocolTCP
		}
		return ip, proto
	}
	for _, other := range admitted {
		for _, used := range hostPorts(other) {
			uip, uproto := norm(used)
			for _, w := range want {
				wip, wproto := norm(w)
				if w.HostPort == used.HostPort && wproto == uproto && (wip == "0.0.0.0" || uip == "0.0.0.0" || wip == uip) {
					return false
				}
			}
		}
	}
	return true
}

// amount is how upstream prints a quantity in admission messages: CPU in
// millicores, everything else in units.
func amount(q resource.Quantity, name v1.ResourceName) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// podRequest is the pod's effective request of a resource, as upstream's
// resource helpers compute it: the larger of the sum over app containers
// (plus restartable init containers, which run beside them) and the largest
// init container, plus the pod overhead.
func podRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	if r := pod.Spec.Resources; r != nil {
		// Pod-level resources, where set, stand for the containers'.
		if q, ok := r.Requests[name]; ok {
			q = q.DeepCopy()
			if o, ok := pod.Spec.Overhead[name]; ok {
				q.Add(o)
			}
			return q
		}
	}
	sum := resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		sum.Add(containerRequest(c, name))
	}
	sidecars := resource.Quantity{}
	maxInit := resource.Quantity{}
	for _, c := range pod.Spec.InitContainers {
		r := containerRequest(c, name)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.Add(r)
			continue
		}
		// A regular init container runs beside the sidecars started before it.
		r.Add(sidecars)
		if r.Cmp(maxInit) > 0 {
			maxInit = r
		}
	}
	sum.Add(sidecars)
	if maxInit.Cmp(sum) > 0 {
		sum = maxInit
	}
	if o, ok := pod.Spec.Overhead[name]; ok {
		sum.Add(o)
	}
	return sum
}

func containerRequest(c v1.Container, name v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.DeepCopy()
	}
	if q, ok := c.Resources.Limits[name]; ok {
		return q.DeepCopy()
	}
	return resource.Quantity{}
}

// isStaticSource tells the sources of static pods (file, URL).
func isStaticSource(source string) bool { return source != messages.SourceAPI }
