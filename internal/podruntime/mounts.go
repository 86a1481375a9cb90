package podruntime

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/expansion"
	"github.com/actorlet/actorlet/internal/volume"
)

// Subpaths prepares the bind mount of a subPath inside a pod's volume
// (volume.Host.PrepareSubpath): resolved safely, so that a symlink in the
// volume never leads a container outside it.
type Subpaths interface {
	PrepareSubpath(uid types.UID, volume, volPath, container string, index int, subPath string) (string, error)
}

// containerMounts are the CRI mounts of a container's volume mounts, as
// upstream's makeMounts: each volume's host path (a subPath of it bind
// mounted on its own), read-only when the mount or the volume says so,
// relabelled where SELinux is on and the volume allows, and the mount
// propagation asked (Bidirectional only for privileged containers); an
// image volume's pulled image (imageMount).
// lookup resolves the container's environment for subPathExpr. The pod's
// managed hosts file comes last, at /etc/hosts (see hostsMount), written
// for the pod's IPs podIPs.
func containerMounts(pod *v1.Pod, c *v1.Container, vols map[string]volume.Mounted, podIPs []string, lookup func(string) (string, bool), opts Options) ([]*runtimeapi.Mount, error) {
	// As upstream, a hostname or domain the kubelet cannot make fails every
	// container of the pod, whether or not it gets the hosts file.
	hostname, hostDomain, err := podHostnameAndDomain(pod, opts.ClusterDomain)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.Mount
	for i, m := range c.VolumeMounts {
		vol, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		hostPath := vol.Path
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			var err error
			if subPath, err = expandSubPath(m.SubPathExpr, lookup); err != nil {
				return nil, err
			}
		}
		if subPath != "" {
			if err := validateSubPath(subPath); err != nil {
				return nil, err
			}
		}
		if vol.Image != "" {
			im, err := imageMount(c, m, vol, subPath)
			if err != nil {
				return nil, err
			}
			out = append(out, im)
			continue
		}
		if subPath != "" {
			if opts.Subpaths == nil {
				return nil, fmt.Errorf("volume %q: subPath is not available on this node", m.Name)
			}
			p, err := opts.Subpaths.PrepareSubpath(pod.UID, m.Name, vol.Path, c.Name, i, subPath)
			if err != nil {
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: %w", m.Name, c.Name, err)
			}
			hostPath = p
		}
		propagation, err := mountPropagation(c, m.MountPropagation)
		if err != nil {
			return nil, err
		}
		readOnly := m.ReadOnly || vol.ReadOnly
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
			return nil, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the container runtime", m.Name)
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath:  m.MountPath,
			HostPath:       hostPath,
			Readonly:       readOnly,
			SelinuxRelabel: vol.SELinuxRelabel && selinuxEnabled(),
			Propagation:    propagation,
		})
	}
	hosts, err := hostsMount(pod, c, podIPs, hostname, hostDomain, opts)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		out = append(out, hosts)
	}
	return out, nil
}

// imageMount is the CRI mount of an image volume, as upstream's makeMounts
// makes it: the pulled image for the runtime to mount, its subPath a path
// inside the image (ImageSubPath: the runtime resolves it in the image's
// own files, not on the host), always read-only and never relabelled (the
// image plugin's attributes), with the propagation asked.
func imageMount(c *v1.Container, m v1.VolumeMount, vol volume.Mounted, subPath string) (*runtimeapi.Mount, error) {
	if vol.ImageRef == "" {
		// The sync pass pulls every image volume before it makes a
		// container's configuration, and creates no container whose
		// volume's pull failed.
		return nil, fmt.Errorf("image volume %q of container %q: image %q is not pulled", m.Name, c.Name, vol.Image)
	}
	propagation, err := mountPropagation(c, m.MountPropagation)
	if err != nil {
		return nil, err
	}
	if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
		return nil, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the container runtime", m.Name)
	}
	return &runtimeapi.Mount{
		ContainerPath: m.MountPath,
		Image:         &runtimeapi.ImageSpec{Image: vol.ImageRef, UserSpecifiedImage: vol.Image},
		ImageSubPath:  subPath,
		Readonly:      true,
		Propagation:   propagation,
	}, nil
}

// mountPropagation is upstream's translateMountPropagation.
func mountPropagation(c *v1.Container, mode *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	switch {
	case mode == nil, *mode == v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *mode == v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *mode == v1.MountPropagationBidirectional:
		if !privileged {
			//lint:ignore ST1005 upstream's wording, which users search for
			return 0, errors.New("Bidirectional mount propagation is available only to privileged containers")
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *mode)
}

// expandSubPath expands $(VAR) in a subPathExpr from the container's
// environment, as upstream's subpath.ExpandEnvVars.
func expandSubPath(expr string, lookup func(string) (string, bool)) (string, error) {
	out := expansion.Expand(expr, lookup)
	if strings.Contains(out, "$(") {
		return "", fmt.Errorf("failed to expand subPathExpr %q: an undefined variable remains", expr)
	}
	return out, nil
}

// validateSubPath refuses a subPath that is absolute or leaves its volume
// through "..", as upstream's kubelet does before preparing it.
func validateSubPath(p string) error {
	if path.IsAbs(p) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("error SubPath `%s` must not contain '..'", p)
		}
	}
	return nil
}

// selinuxEnabled reports whether the host runs SELinux: upstream asks the
// runtime to relabel only then.
func selinuxEnabled() bool {
	_, err := os.Stat("/sys/fs/selinux/enforce")
	return err == nil
}
