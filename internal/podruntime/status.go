package podruntime

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodStatus is the pod as observed in the runtime.
type PodStatus struct {
	UID             types.UID
	Name, Namespace string
	// SandboxStatuses are newest first.
	SandboxStatuses []*runtimeapi.PodSandboxStatus
	// ContainerStatuses are newest first, so the first of a name is the
	// container's current instance.
	ContainerStatuses []*ContainerStatus
	// IPs of the newest ready sandbox, the primary one first.
	IPs []string
}

// ContainerStatus is one container instance as observed in the runtime.
type ContainerStatus struct {
	ID, Name                         string
	State                            runtimeapi.ContainerState
	CreatedAt, StartedAt, FinishedAt time.Time
	ExitCode                         int32
	Reason, Message                  string
	Image, ImageRef                  string
	Hash                             uint64
	RestartCount                     int
	LogPath                          string
	// SandboxID is the sandbox the container runs in: init containers of an
	// older sandbox do not count for the current one.
	SandboxID string
	// Resources are the CPU and memory last applied to this instance (at
	// its creation or by an in-place resize); nil when not known.
	Resources *v1.ResourceRequirements
	// User is the identity the runtime reports the container's first
	// process started with; nil when it reports none.
	User *v1.ContainerUser

	// gracePeriod is the pod's grace period recorded on the container.
	gracePeriod *int64
}

// FindContainer returns the newest instance of the named container, nil if
// there is none.
func (s *PodStatus) FindContainer(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (s *PodStatus) findActiveContainer(name string) *ContainerStatus {
	c := s.FindContainer(name)
	if c == nil || len(s.SandboxStatuses) == 0 || c.SandboxID != s.SandboxStatuses[0].Id {
		return nil
	}
	return c
}

// States maps the runtime ID of each of the pod's sandboxes and containers to
// its CRI state name, as PLEG reports them.
func (s *PodStatus) States() map[string]string {
	out := make(map[string]string, len(s.SandboxStatuses)+len(s.ContainerStatuses))
	for _, sb := range s.SandboxStatuses {
		out[sb.Id] = sb.State.String()
	}
	for _, c := range s.ContainerStatuses {
		out[c.ID] = c.State.String()
	}
	return out
}

// GetPodStatus lists the pod's sandboxes and containers by the pod UID label.
func (r *Runtime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	sel := map[string]string{LabelPodUID: string(uid)}
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	sbs, err := r.RT.ListPodSandbox(sctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s/%s (%s): %w", namespace, name, uid, err)
	}
	// Each call has a timeout of its own, as Options says.
	sctx, cancel = r.callCtx(ctx)
	defer cancel()
	cs, err := r.RT.ListContainers(sctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s (%s): %w", namespace, name, uid, err)
	}
	return r.podStatus(ctx, podRef{UID: uid, Name: name, Namespace: namespace}, sbs.Items, cs.Containers)
}

// ListPods returns every pod that has sandboxes or containers with our
// labels in the runtime, grouped by UID, for adoption after a restart and
// for removing pods no source wants any more.
func (r *Runtime) ListPods(ctx context.Context) ([]*PodStatus, error) {
	groups, err := r.listGrouped(ctx)
	if err != nil {
		return nil, err
	}
	pods := make([]*PodStatus, 0, len(groups))
	for _, g := range groups {
		ps, err := r.podStatus(ctx, g.ref, g.sbs, g.cs)
		if err != nil {
			return nil, err
		}
		pods = append(pods, ps)
	}
	return pods, nil
}

// PodUIDs returns the UIDs of the pods that have sandboxes or containers
// with our labels in the runtime: the two listings alone, no status calls.
func (r *Runtime) PodUIDs(ctx context.Context) (map[types.UID]bool, error) {
	groups, err := r.listGrouped(ctx)
	if err != nil {
		return nil, err
	}
	uids := make(map[types.UID]bool, len(groups))
	for _, g := range groups {
		uids[g.ref.UID] = true
	}
	return uids, nil
}

// podObjects are one pod's sandboxes and containers in a listing.
type podObjects struct {
	ref podRef
	sbs []*runtimeapi.PodSandbox
	cs  []*runtimeapi.Container
}

// listGrouped lists every sandbox and container in the runtime and groups
// those with our pod UID label by pod, in the order first seen.
func (r *Runtime) listGrouped(ctx context.Context) ([]*podObjects, error) {
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	sbs, err := r.RT.ListPodSandbox(sctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	sctx, cancel = r.callCtx(ctx)
	defer cancel()
	cs, err := r.RT.ListContainers(sctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	byUID := map[types.UID]*podObjects{}
	var groups []*podObjects
	get := func(labels map[string]string) *podObjects {
		ref := podRefFromLabels(labels)
		if ref.UID == "" {
			return nil
		}
		g, ok := byUID[ref.UID]
		if !ok {
			g = &podObjects{ref: ref}
			byUID[ref.UID] = g
			groups = append(groups, g)
		}
		return g
	}
	for _, s := range sbs.Items {
		if g := get(s.Labels); g != nil {
			g.sbs = append(g.sbs, s)
		}
	}
	for _, c := range cs.Containers {
		if g := get(c.Labels); g != nil {
			g.cs = append(g.cs, c)
		}
	}
	return groups, nil
}

func (r *Runtime) podStatus(ctx context.Context, ref podRef, sbs []*runtimeapi.PodSandbox, cs []*runtimeapi.Container) (*PodStatus, error) {
	ps := &PodStatus{UID: ref.UID, Name: ref.Name, Namespace: ref.Namespace}
	for _, s := range sbs {
		sctx, cancel := r.callCtx(ctx)
		resp, err := r.RT.PodSandboxStatus(sctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.Id})
		cancel()
		if isNotFound(err) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %s of pod %s/%s: %w", s.Id, ref.Namespace, ref.Name, err)
		}
		ps.SandboxStatuses = append(ps.SandboxStatuses, resp.Status)
	}
	for _, c := range cs {
		sctx, cancel := r.callCtx(ctx)
		resp, err := r.RT.ContainerStatus(sctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		cancel()
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s (%s) of pod %s/%s: %w", c.Id, c.GetMetadata().GetName(), ref.Namespace, ref.Name, err)
		}
		cst := toContainerStatus(resp.Status)
		cst.Resources = r.Opts.Actuated.get(ref.UID, cst.Name, cst.ID)
		cst.SandboxID = c.PodSandboxId
		ps.ContainerStatuses = append(ps.ContainerStatuses, cst)
	}
	ps.order()
	return ps, nil
}

// order sorts the sandboxes and containers newest first and takes the IPs
// of the newest ready sandbox.
func (ps *PodStatus) order() {
	slices.SortStableFunc(ps.SandboxStatuses, func(a, b *runtimeapi.PodSandboxStatus) int {
		return -cmpInt64(a.CreatedAt, b.CreatedAt)
	})
	slices.SortStableFunc(ps.ContainerStatuses, func(a, b *ContainerStatus) int {
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	ps.IPs = nil
	for _, s := range ps.SandboxStatuses {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ps.IPs = sandboxIPs(s)
			break
		}
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sandboxIPs(s *runtimeapi.PodSandboxStatus) []string {
	if s.GetNetwork().GetIp() == "" {
		return nil
	}
	ips := []string{s.Network.Ip}
	for _, ip := range s.Network.AdditionalIps {
		ips = append(ips, ip.Ip)
	}
	return ips
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func toContainerStatus(s *runtimeapi.ContainerStatus) *ContainerStatus {
	cs := &ContainerStatus{
		ID:         s.Id,
		Name:       s.GetMetadata().GetName(),
		State:      s.State,
		CreatedAt:  unixNano(s.CreatedAt),
		StartedAt:  unixNano(s.StartedAt),
		FinishedAt: unixNano(s.FinishedAt),
		ExitCode:   s.ExitCode,
		Reason:     s.Reason,
		Message:    exitMessage(s),
		Image:      s.GetImage().GetUserSpecifiedImage(),
		ImageRef:   s.ImageRef,
		LogPath:    s.LogPath,
		User:       containerUser(s.GetUser()),
	}
	if cs.Image == "" {
		cs.Image = s.GetImage().GetImage()
	}
	if n := s.Labels[LabelContainerName]; n != "" {
		cs.Name = n
	}
	// Unparsable annotations (not written by us) read as 0: a restart count
	// of 0 and a hash that never matches, so such a container is replaced.
	cs.Hash, _ = strconv.ParseUint(s.Annotations[AnnotationContainerHash], 16, 64)
	cs.RestartCount, _ = strconv.Atoi(s.Annotations[AnnotationContainerRestartCount])
	cs.gracePeriod = parseGracePeriod(s.Annotations)
	return cs
}
