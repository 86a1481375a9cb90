package podruntime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/expansion"
	"github.com/actorlet/actorlet/internal/volume"
)

// ContainerConfig is the ContainerConfig of the container's instance number
// restartCount, as upstream's generateContainerConfig. ctx bounds the
// reads of the objects its env refers to. image is the resolved
// image reference to run; podIPs are the sandbox's IPs (status.podIP(s)).
// vols are the pod's volumes as set up on the host.
func ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, podIPs []string, image string, vols map[string]volume.Mounted, opts Options) (*runtimeapi.ContainerConfig, error) {
	if err := procMountError(pod, c); err != nil {
		return nil, err
	}
	envs, err := containerEnv(ctx, pod, c, podIPs, vols, opts)
	if err != nil {
		return nil, err
	}
	lookup := func(name string) (string, bool) {
		for i := len(envs) - 1; i >= 0; i-- {
			if envs[i].Key == name {
				return string(envs[i].Value), true
			}
		}
		return "", false
	}
	annotations, err := containerAnnotations(pod, c, restartCount)
	if err != nil {
		return nil, fmt.Errorf("annotations of container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
	linux, err := containerLinuxConfig(pod, c, opts)
	if err != nil {
		return nil, err
	}
	mounts, err := containerMounts(pod, c, vols, podIPs, lookup, opts)
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, terminationMessageMounts(pod, c, opts)...)
	devices, err := containerDevices(c, vols)
	if err != nil {
		return nil, err
	}
	idMappedMounts(mounts, linux.SecurityContext.NamespaceOptions.UsernsOptions)
	pluginDevices, err := deviceOptions(ctx, pod, c, opts)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, lookup),
		Args:        expandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Devices:     devices,
		CDIDevices:  cdiDevices(ctx, c.Name),
		Labels:      containerLabels(pod, c),
		Annotations: annotations,
		LogPath:     ContainerLogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       linux,
	}
	applyDevices(cfg, pluginDevices)
	return cfg, nil
}

// ContainerLogPath is the log file of a container instance relative to the
// pod's log directory: NAME/RESTARTCOUNT.log.
func ContainerLogPath(name string, restartCount int) string {
	return filepath.Join(name, strconv.Itoa(restartCount)+".log")
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expansion.Expand(s, lookup)
	}
	return out
}

// Upstream's defaults for containers that are not privileged
// (pkg/securitycontext): without them containerd masks nothing.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

func containerLinuxConfig(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.LinuxContainerConfig, error) {
	res, err := containerResources(pod, c, opts)
	if err != nil {
		return nil, err
	}
	sc, err := containerSecurityContext(pod, c, opts)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.LinuxContainerConfig{Resources: res, SecurityContext: sc}, nil
}

// errNoSeccompRoot refuses a Localhost seccomp profile without the root
// directory it is looked for under: a bare name would resolve against the
// runtime's working directory.
var errNoSeccompRoot = errors.New("a Localhost seccomp profile needs the kubelet's root directory, which is not set")

// containerSecurityContext is upstream's determineEffectiveSecurityContext
// (the runAsUser of the image aside): the container's fields over the
// pod's, its seccomp and AppArmor profiles, and the pod's supplemental
// groups and their policy.
func containerSecurityContext(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.LinuxContainerSecurityContext, error) {
	userns, err := podUserNamespace(pod, opts)
	if err != nil {
		return nil, err
	}
	out := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   namespaceOptions(pod, userns),
		SupplementalGroups: podSupplementalGroups(pod),
		MaskedPaths:        defaultMaskedPaths,
		ReadonlyPaths:      defaultReadonlyPaths,
	}
	var podSeccomp, cSeccomp *v1.SeccompProfile
	if psc := pod.Spec.SecurityContext; psc != nil {
		podSeccomp = psc.SeccompProfile
		if psc.RunAsUser != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			out.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		if o := psc.SELinuxOptions; o != nil {
			out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
	}
	if sc := c.SecurityContext; sc != nil {
		cSeccomp = sc.SeccompProfile
		if sc.Privileged != nil && *sc.Privileged {
			out.Privileged = true
			out.MaskedPaths, out.ReadonlyPaths = nil, nil
		}
		// Unmasked only inside a user namespace: ContainerConfig refuses
		// it otherwise (procMountError), and it is never reached then.
		if sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount && !hostUsers(pod) {
			out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
		}
		if sc.RunAsUser != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		if sc.ReadOnlyRootFilesystem != nil {
			out.ReadonlyRootfs = *sc.ReadOnlyRootFilesystem
		}
		if sc.AllowPrivilegeEscalation != nil {
			out.NoNewPrivs = !*sc.AllowPrivilegeEscalation
		}
		if caps := sc.Capabilities; caps != nil {
			out.Capabilities = &runtimeapi.Capability{}
			for _, a := range caps.Add {
				out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(a))
			}
			for _, d := range caps.Drop {
				out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(d))
			}
		}
		if o := sc.SELinuxOptions; o != nil {
			out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
	}
	root := SeccompProfileRoot(opts.RootDir)
	if opts.RootDir == "" {
		root = ""
	}
	if out.Seccomp, err = seccompProfile(podSeccomp, cSeccomp, root, opts.SeccompDefault); err != nil {
		return nil, err
	}
	if out.Seccomp.ProfileType == runtimeapi.SecurityProfile_Localhost && root == "" {
		return nil, errNoSeccompRoot
	}
	//lint:ignore SA1019 upstream still sets the deprecated string, the only one containerd 1.x reads
	if out.Apparmor, out.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	if out.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod); err != nil {
		return nil, err
	}
	return out, nil
}

type cdiDevicesKey struct{}

// WithCDIDevices gives a sync pass the CDI device IDs of each container
// (by name) from the pod's prepared ResourceClaims. They ride on the
// pass's context because they belong to that one pass, the way its
// deadline does, and the sync's signature is shared by its many callers
// that have none.
func WithCDIDevices(ctx context.Context, devices map[string][]string) context.Context {
	if len(devices) == 0 {
		return ctx
	}
	return context.WithValue(ctx, cdiDevicesKey{}, devices)
}

// cdiDevices are the CDI devices the container gets, as upstream's
// generateContainerConfig sets them from the DRA manager's answer.
func cdiDevices(ctx context.Context, container string) []*runtimeapi.CDIDevice {
	devices, _ := ctx.Value(cdiDevicesKey{}).(map[string][]string)
	var out []*runtimeapi.CDIDevice
	for _, name := range devices[container] {
		out = append(out, &runtimeapi.CDIDevice{Name: name})
	}
	return out
}
