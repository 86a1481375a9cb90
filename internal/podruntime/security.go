package podruntime

import (
	"context"
	"errors"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/userns"
)

// effectiveRunAs is the container's runAsNonRoot and runAsUser, each from
// the container's security context, else the pod's, as upstream's
// DetermineEffectiveSecurityContext.
func effectiveRunAs(pod *v1.Pod, c *v1.Container) (nonRoot bool, user *int64) {
	var nr *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		nr, user = psc.RunAsNonRoot, psc.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nr = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
	}
	return nr != nil && *nr, user
}

// needsImageUser reports whether VerifyRunAsNonRoot needs the image's
// user: runAsNonRoot is set and no runAsUser says who the container runs as.
func needsImageUser(pod *v1.Pod, c *v1.Container) bool {
	nonRoot, user := effectiveRunAs(pod, c)
	return nonRoot && user == nil
}

// ImageUser is the user an image runs as, as upstream's getImageUser reads
// it from ImageStatus: its numeric UID, else its user name; an image that
// names neither (or is unknown) runs as root.
func ImageUser(img *runtimeapi.Image) (uid *int64, username string) {
	if img != nil {
		if img.Uid != nil {
			v := img.Uid.Value
			return &v, ""
		}
		if img.Username != "" {
			return nil, img.Username
		}
	}
	return new(int64), ""
}

// VerifyRunAsNonRoot is upstream's verifyRunAsNonRoot: a container whose
// effective security context has runAsNonRoot must not run as UID 0,
// whether runAsUser says so or, without runAsUser, the image's user (uid,
// else username, from ImageUser) does; a user name cannot be verified and
// is refused. The messages are upstream's; the sync pass reports them as
// CreateContainerConfigError.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	nonRoot, runAsUser := effectiveRunAs(pod, c)
	if !nonRoot {
		return nil
	}
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podref.Desc(pod), c.Name)
		}
		return nil
	}
	switch {
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)",
			username, podref.Desc(pod), c.Name)
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podref.Desc(pod), c.Name)
	case uid != nil && (*uid < 0 || *uid > math.MaxInt32):
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*uid, math.MaxInt32, math.MaxInt32, podref.Desc(pod), c.Name)
	}
	return nil
}

// verifyRunAsNonRoot checks the container against runAsNonRoot before its
// creation, reading the image's user from the runtime only when the
// verification needs it and ensureImage did not already have it.
func (r *Runtime) verifyRunAsNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container, img *runtimeapi.Image) error {
	if !needsImageUser(pod, c) {
		return VerifyRunAsNonRoot(pod, c, nil, "")
	}
	if img == nil {
		// As upstream, the image as the pod names it, not the resolved
		// reference: both name the same image.
		sctx, cancel := r.callCtx(ctx)
		st, err := r.Img.ImageStatus(sctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}})
		cancel()
		if err != nil {
			return fmt.Errorf("read the user of image %q: %w", c.Image, err)
		}
		img = st.GetImage()
	}
	uid, username := ImageUser(img)
	return VerifyRunAsNonRoot(pod, c, uid, username)
}

// hostUsers reports whether the pod shares the host's user namespace: the
// default, unless it sets hostUsers: false.
func hostUsers(pod *v1.Pod) bool {
	return pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
}

// errUserNamespacesNotImplemented refuses a pod with hostUsers: false when
// the runtime was given no ranges to map (Options.UserNamespaces unset:
// tools and tests that build configurations alone).
var errUserNamespacesNotImplemented = errors.New("can't set `spec.hostUsers: false`: no user namespace ID ranges to allocate from")

// UserNamespaces gives each pod with hostUsers: false its range of host IDs
// (userns.Manager): the same range for as long as its directory lives.
type UserNamespaces interface {
	PodRange(uid types.UID) (userns.IDRange, error)
}

// UserNamespaceSupport is upstream's refusal of hostUsers: false when the
// runtime handler the pod's sandbox runs with (handler, "" for the
// default) does not support user namespaces, from the runtime's Status
// answer (containerd before 2.0 reports no handlers at all), with
// upstream's messages.
func UserNamespaceSupport(handlers []*runtimeapi.RuntimeHandler, handler string) error {
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	if len(handlers) == 0 {
		return errors.New(msg)
	}
	for _, h := range handlers {
		if h.Name != handler {
			continue
		}
		if !h.GetFeatures().GetUserNamespaces() {
			return errors.New(msg)
		}
		return nil
	}
	return fmt.Errorf("%s: the handler %q is not known", msg, handler)
}

// podUserNamespace is the user namespace of the pod's sandbox and
// containers, as upstream's GetOrCreateUserNamespaceMappings: the host's
// for a pod that shares it; for hostUsers: false, one of the pod's own
// whose container ID 0 is the first host ID of the pod's range, for users
// and groups alike. A hostUsers: false pod never gets the host's user
// namespace: without a range it does not run.
func podUserNamespace(pod *v1.Pod, opts Options) (*runtimeapi.UserNamespace, error) {
	if hostUsers(pod) {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if opts.UserNamespaces == nil {
		return nil, errUserNamespacesNotImplemented
	}
	r, err := opts.UserNamespaces.PodRange(pod.UID)
	if err != nil {
		return nil, err
	}
	mapping := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: r.First, ContainerId: 0, Length: r.Length}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping(), Gids: mapping()}, nil
}

// checkUserNamespaceSupport asks the runtime, for a pod with hostUsers:
// false, whether the handler of its sandbox supports user namespaces
// (UserNamespaceSupport). The runtime is asked at each sandbox creation of
// such a pod rather than once at start-up: a runtime replaced by one
// without the support must never be handed a user namespace it would
// silently ignore. The handler is resolved as createSandbox resolves it.
func (r *Runtime) checkUserNamespaceSupport(ctx context.Context, pod *v1.Pod) error {
	if hostUsers(pod) {
		return nil
	}
	handler := ""
	if rc := r.Opts.RuntimeClasses; rc != nil {
		h, err := rc.LookupRuntimeHandler(ctx, pod.Spec.RuntimeClassName)
		if err != nil {
			return err
		}
		handler = h
	}
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	st, err := r.RT.Status(sctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("ask the runtime whether it supports user namespaces: %w", err)
	}
	return UserNamespaceSupport(st.GetRuntimeHandlers(), handler)
}

// idMappedMounts maps the mounts of a container in a user namespace of
// the pod's own as the namespace does, as upstream does for every mount:
// files owned by host root are then the container's root's.
func idMappedMounts(mounts []*runtimeapi.Mount, ns *runtimeapi.UserNamespace) {
	if ns.GetMode() != runtimeapi.NamespaceMode_POD {
		return
	}
	for _, m := range mounts {
		m.UidMappings, m.GidMappings = ns.Uids, ns.Gids
	}
}

// sandboxInPodUserNamespace reports whether the runtime says the sandbox
// runs in a user namespace of its own. A runtime that does not report it
// (containerd before 2.0) says no.
func sandboxInPodUserNamespace(s *runtimeapi.PodSandboxStatus) bool {
	u := s.GetLinux().GetNamespaces().GetOptions().GetUsernsOptions()
	return u != nil && u.Mode == runtimeapi.NamespaceMode_POD
}

// procMountError refuses procMount: Unmasked outside a user namespace, with
// the API server's validation message: an unmasked /proc in the host's user
// namespace exposes the host's kernel interfaces to a root container. The
// API server refuses such pods; static pods are refused by the manifest
// validation; this guards whatever else reaches the runtime.
func procMountError(pod *v1.Pod, c *v1.Container) error {
	sc := c.SecurityContext
	if sc == nil || sc.ProcMount == nil || *sc.ProcMount != v1.UnmaskedProcMount || !hostUsers(pod) {
		return nil
	}
	return fmt.Errorf("container %s of pod %s/%s: securityContext.procMount: Invalid value: %q: `hostUsers` must be false to use `Unmasked`",
		c.Name, pod.Namespace, pod.Name, v1.UnmaskedProcMount)
}
