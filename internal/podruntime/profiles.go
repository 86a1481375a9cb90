package podruntime

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SeccompProfileRoot is where a Localhost seccomp profile is looked for,
// as upstream: the kubelet's root directory's seccomp/.
func SeccompProfileRoot(rootDir string) string {
	return filepath.Join(rootDir, "seccomp")
}

// errLocalhostSeccompUnnamed is upstream's message for a Localhost seccomp
// profile without localhostProfile.
//
//lint:ignore ST1005 upstream's wording, which users search for
var errLocalhostSeccompUnnamed = errors.New("localhostProfile must be set if seccompProfile type is Localhost.")

// seccompProfile is the container's seccomp profile, as upstream's
// getSeccompProfile: the container's field, else the pod's, else
// Unconfined, or RuntimeDefault with the kubelet's seccompDefault
// (runtimeDefault). The
// deprecated seccomp annotations are not read, as upstream no longer does.
// A Localhost profile is the file localhostProfile names below root
// (SeccompProfileRoot), joined as upstream's filepath.Join does: never a
// path relative to the runtime's working directory, and an absolute name
// lands below root too. The API server and the manifest validation refuse
// names with ".." or a leading "/", so the join cannot climb out of root
// for any pod that reaches the node.
func seccompProfile(pod, container *v1.SeccompProfile, root string, runtimeDefault bool) (*runtimeapi.SecurityProfile, error) {
	p := pod
	if container != nil {
		p = container
	}
	if p == nil {
		if runtimeDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errLocalhostSeccompUnnamed
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(root, *p.LocalhostProfile)}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// AppArmorProfile is upstream's apparmor.GetProfile: the container's
// profile, else the one the deprecated annotation
// container.apparmor.security.beta.kubernetes.io/NAME gives (static pods
// may not have had their annotations turned into fields), else the pod's;
// nil when none is asked for. An annotation it cannot read counts as none.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if val, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil {
		return sc.AppArmorProfile
	}
	return nil
}

// appArmorProfile is upstream's getAppArmorProfile: the container's
// profile (AppArmorProfile) as CRI's SecurityProfile and as the deprecated
// apparmor_profile string older runtimes read (containerd before 2.0
// reads only the string). No profile asked for: neither, the runtime's
// default. A Localhost profile is the name of a profile loaded in the
// kernel, not a file: it is passed as given.
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// supplementalGroupsPolicy is the pod's supplementalGroupsPolicy as CRI's,
// for the sandbox and each container, as upstream: Merge when unset (the
// CRI's zero value), an unknown policy refused with upstream's message.
// Admission refuses Strict where the runtime does not report it can
// honour it, so a runtime that would ignore the field never gets it.
func supplementalGroupsPolicy(pod *v1.Pod) (runtimeapi.SupplementalGroupsPolicy, error) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*sc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *sc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// containerUser is upstream's toKubeContainerUser followed by
// convertContainerStatusUser: the identity the runtime reports the
// container's first process started with (containerStatuses[].user), nil
// when the runtime reports none (containerd before 2.0).
func containerUser(u *runtimeapi.ContainerUser) *v1.ContainerUser {
	if u == nil {
		return nil
	}
	out := &v1.ContainerUser{}
	if l := u.GetLinux(); l != nil {
		out.Linux = &v1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: l.GetSupplementalGroups()}
	}
	return out
}
