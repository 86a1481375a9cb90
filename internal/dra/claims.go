package dra

import (
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's errors of resourceclaim.Name (k8s.io/dynamic-resource-allocation).
var (
	ErrClaimNotFound  = errors.New("ResourceClaim not created yet")
	ErrAPIUnsupported = errors.New("unsupported API")
)

// ClaimName is the name of the ResourceClaim a pod claim refers to, as
// upstream's resourceclaim.Name: the claim named, or the one made from the
// template as the pod's status says (nil when the status says none was
// needed). mustCheckOwner: a claim made from a template must be the pod's
// own.
func ClaimName(pod *v1.Pod, pc *v1.PodResourceClaim) (name *string, mustCheckOwner bool, err error) {
	switch {
	case pc.ResourceClaimName != nil:
		return pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, s := range pod.Status.ResourceClaimStatuses {
			if s.Name == pc.Name {
				return s.ResourceClaimName, true, nil
			}
		}
		return nil, false, fmt.Errorf(`pod "%s/%s": %w`, pod.Namespace, pod.Name, ErrClaimNotFound)
	default:
		return nil, false, fmt.Errorf(`pod "%s/%s", spec.resourceClaim %q: %w`, pod.Namespace, pod.Name, pc.Name, ErrAPIUnsupported)
	}
}

// PodClaims are the pod's claims to prepare: its spec's resourceClaims,
// and the claim the scheduler made for its extended resources.
func PodClaims(pod *v1.Pod) []v1.PodResourceClaim {
	claims := pod.Spec.ResourceClaims
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		name := s.ResourceClaimName
		claims = append(slices.Clip(claims), v1.PodResourceClaim{ResourceClaimName: &name})
	}
	return claims
}

// IsForPod checks that a claim made from a template is the pod's own, as
// upstream's resourceclaim.IsForPod.
func IsForPod(pod *v1.Pod, claim *resourceapi.ResourceClaim) error {
	if claim.Namespace != pod.Namespace {
		return fmt.Errorf("ResourceClaim %s/%s is not in the same namespace as Pod %s/%s", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	if !metav1.IsControlledBy(claim, pod) {
		return fmt.Errorf("ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// IsReservedForPod tells whether the claim's status reserves it for the
// pod.
func IsReservedForPod(pod *v1.Pod, claim *resourceapi.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.UID == pod.UID {
			return true
		}
	}
	return false
}

// NewClaimInfo is the state of an allocated claim before it is prepared,
// as upstream's newClaimInfoFromClaim: one DriverState per driver with a
// result, with the node operations every result of that driver skips.
func NewClaimInfo(claim *resourceapi.ResourceClaim) (ClaimInfoState, error) {
	if claim.Status.Allocation == nil {
		return ClaimInfoState{}, errors.New("not allocated")
	}
	total := map[string]int{}
	skips := map[string]map[resourceapi.SkipNodeOperation]int{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		total[r.Driver]++
		if skips[r.Driver] == nil {
			skips[r.Driver] = map[resourceapi.SkipNodeOperation]int{}
		}
		if slices.Contains(r.SkipNodeOperations, resourceapi.SkipNodeOperationAll) {
			skips[r.Driver][resourceapi.SkipNodeOperationAll]++
			continue
		}
		for _, op := range r.SkipNodeOperations {
			skips[r.Driver][op]++
		}
	}
	states := make(map[string]DriverState, len(total))
	for driver, n := range total {
		var ops []resourceapi.SkipNodeOperation
		all := skips[driver][resourceapi.SkipNodeOperationAll]
		if all == n {
			ops = []resourceapi.SkipNodeOperation{resourceapi.SkipNodeOperationAll}
		} else {
			for op, count := range skips[driver] {
				if op != resourceapi.SkipNodeOperationAll && count+all == n {
					ops = append(ops, op)
				}
			}
			slices.Sort(ops)
		}
		states[driver] = DriverState{SkipNodeOperations: ops}
	}
	return ClaimInfoState{
		ClaimUID: claim.UID, ClaimName: claim.Name, Namespace: claim.Namespace,
		PodUIDs: map[string]struct{}{}, DriverState: states,
	}, nil
}

// ContainerClaims maps each claim name the container uses to the requests
// it asks of it, as upstream's GetResources: a container's
// resources.claims name the pod's claims (an empty request: every request
// of the claim). A pod claim with no ResourceClaim made is skipped.
func ContainerClaims(pod *v1.Pod, c *v1.Container) (map[string][]string, error) {
	byPodClaim := map[string][]string{}
	for _, rc := range c.Resources.Claims {
		byPodClaim[rc.Name] = append(byPodClaim[rc.Name], rc.Request)
	}
	out := map[string][]string{}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		requests, ok := byPodClaim[pc.Name]
		if !ok {
			continue
		}
		name, _, err := ClaimName(pod, pc)
		if err != nil {
			return nil, err
		}
		if name == nil {
			continue
		}
		out[*name] = append(out[*name], requests...)
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil {
		for _, m := range s.RequestMappings {
			if m.ContainerName != c.Name {
				continue
			}
			if q, ok := c.Resources.Requests[v1.ResourceName(m.ResourceName)]; ok && !q.IsZero() {
				out[s.ResourceClaimName] = append(out[s.ResourceClaimName], m.RequestName)
			}
		}
	}
	return out, nil
}

// CDIDevices are the CDI device IDs of the claim's devices for request,
// as upstream's cdiDevicesAsList: every device when request is empty, and
// a device that names no request belongs to every request. Drivers come in
// name order, so that a container's config is the same on each try.
func (c *ClaimInfoState) CDIDevices(request string) []string {
	var out []string
	drivers := make([]string, 0, len(c.DriverState))
	for d := range c.DriverState {
		drivers = append(drivers, d)
	}
	slices.Sort(drivers)
	for _, d := range drivers {
		for _, dev := range c.DriverState[d].Devices {
			if request == "" || len(dev.RequestNames) == 0 || slices.Contains(dev.RequestNames, request) {
				out = append(out, dev.CDIDeviceIDs...)
			}
		}
	}
	return out
}
