package podruntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
)

// SandboxConfig is the PodSandboxConfig for the pod's sandbox, as upstream's
// generatePodSandboxConfig. It reads opts.ResolvConf when the pod's DNS
// policy needs the host's resolver configuration. The events its DNS
// configuration calls for are left out: the sync pass emits them.
func SandboxConfig(pod *v1.Pod, attempt uint32, opts Options) (*runtimeapi.PodSandboxConfig, error) {
	cfg, _, err := sandboxConfig(pod, attempt, opts)
	return cfg, err
}

func sandboxConfig(pod *v1.Pod, attempt uint32, opts Options) (*runtimeapi.PodSandboxConfig, []dnsEvent, error) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       sandboxLabels(pod),
		Annotations:  sandboxAnnotations(pod),
		LogDirectory: logs.PodLogsDir(opts.PodLogsDir, pod.Namespace, pod.Name, pod.UID),
	}
	dns, evs, err := podDNSConfig(pod, opts)
	if err != nil {
		return nil, nil, err
	}
	cfg.DnsConfig = dns
	if !pod.Spec.HostNetwork {
		hostname, err := podHostname(pod, opts.ClusterDomain)
		if err != nil {
			return nil, evs, err
		}
		cfg.Hostname = hostname
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol:      toRuntimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	if cfg.Linux, err = sandboxLinuxConfig(pod, opts); err != nil {
		return nil, evs, err
	}
	return cfg, evs, nil
}

// CgroupParent is the pod's cgroup, the parent of its containers', in
// cgroupfs form whatever the driver (as upstream passes it to the runtime:
// containerd's systemd mode takes the slice from its base name).
// With opts.Cgroups, the pod's cgroup in the node's tree (below its QoS
// class's); without, pod<UID> below CgroupParentRoot.
func CgroupParent(opts Options, pod *v1.Pod) string {
	if opts.Cgroups != nil {
		return opts.Cgroups.CgroupParent(pod)
	}
	return cgroups.PodCgroupName(opts.cgroupParentRoot(), opts.CgroupDriver, pod.UID)
}

// sandboxLinuxConfig is upstream's generatePodSandboxLinuxConfig. The
// sandbox's own process runs under the runtime's default seccomp profile
// whatever the pod asks for, as upstream: the pod's profile is its
// containers', and a Localhost profile written for them need not allow
// what the sandbox's process does.
func sandboxLinuxConfig(pod *v1.Pod, opts Options) (*runtimeapi.LinuxPodSandboxConfig, error) {
	// The sync pass has checked that the runtime supports a user
	// namespace the pod asks for, with the runtime's answer.
	userns, err := podUserNamespace(pod, opts)
	if err != nil {
		return nil, err
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: CgroupParent(opts, pod),
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       anyPrivileged(pod),
			NamespaceOptions: namespaceOptions(pod, userns),
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		},
	}
	lc.Sysctls = sandboxSysctls(opts.DefaultPodSysctls, pod)
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return lc, nil
	}
	if sc.RunAsUser != nil {
		lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	lc.SecurityContext.SupplementalGroups = podSupplementalGroups(pod)
	if sc.SELinuxOptions != nil {
		lc.SecurityContext.SelinuxOptions = &runtimeapi.SELinuxOption{
			User: sc.SELinuxOptions.User, Role: sc.SELinuxOptions.Role,
			Type: sc.SELinuxOptions.Type, Level: sc.SELinuxOptions.Level,
		}
	}
	policy, err := supplementalGroupsPolicy(pod)
	if err != nil {
		return nil, err
	}
	lc.SecurityContext.SupplementalGroupsPolicy = policy
	return lc, nil
}

// podSupplementalGroups are the groups the pod's processes get besides
// their primary one, in upstream's order: fsGroup, then
// supplementalGroups.
func podSupplementalGroups(pod *v1.Pod) []int64 {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	var groups []int64
	if sc.FSGroup != nil {
		groups = append(groups, *sc.FSGroup)
	}
	return append(groups, sc.SupplementalGroups...)
}

// namespaceOptions are the namespaces of the pod's sandbox and containers,
// in the user namespace userns (podUserNamespace), as upstream's
// NamespacesForPod.
func namespaceOptions(pod *v1.Pod, userns *runtimeapi.UserNamespace) *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network:       networkNamespace(pod),
		Pid:           pidNamespace(pod),
		Ipc:           ipcNamespace(pod),
		UsernsOptions: userns,
	}
}

// anyPrivileged is upstream's HasPrivilegedContainer: ephemeral containers
// count, for a sandbox made again after a privileged one was added.
func anyPrivileged(pod *v1.Pod) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers, ephemeralContainers(pod)} {
		for _, c := range cs {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				return true
			}
		}
	}
	return false
}

// podHostname is the sandbox's hostname, as upstream's
// generatePodSandboxConfig: GeneratePodHostNameAndDomain followed by
// GetNodenameForKernel.
func podHostname(pod *v1.Pod, clusterDomain string) (string, error) {
	hostname, hostDomain, err := podHostnameAndDomain(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	return kernelHostname(hostname, hostDomain, pod.Spec.SetHostnameAsFQDN)
}

// podHostnameAndDomain is upstream's GeneratePodHostNameAndDomain: the
// pod's short hostname and its domain, which the sandbox's hostname and the
// hosts file's entry of the pod are made of. spec.hostnameOverride wins
// over everything and has no domain: the API refuses it with
// setHostnameAsFQDN or hostNetwork, and the hosts file then names the pod
// by it alone even with a subdomain. Otherwise the hostname is
// spec.hostname or the pod's name, and a subdomain gives the domain
// SUBDOMAIN.NAMESPACE.svc.CLUSTERDOMAIN, even with an empty cluster domain
// (upstream's default), which leaves a trailing dot. Names the API would
// have refused are refused again, with upstream's messages.
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, hostDomain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		hostname, err := truncatePodHostname(pod.Name, *o)
		return hostname, "", err
	}
	hostname = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, ";"))
		}
		hostname = h
	}
	if hostname, err = truncatePodHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if sub := pod.Spec.Subdomain; sub != "" {
		if msgs := validation.IsDNS1123Label(sub); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", sub, strings.Join(msgs, ";"))
		}
		hostDomain = fmt.Sprintf("%s.%s.svc.%s", sub, pod.Namespace, clusterDomain)
	}
	return hostname, hostDomain, nil
}

// maxHostnameLen is the longest hostname upstream gives a pod: the
// kernel's nodename holds 64 bytes with the terminating NUL.
const maxHostnameLen = 63

// maxFQDNLen is the longest FQDN upstream sets as a pod's hostname.
const maxFQDNLen = 64

// truncatePodHostname is upstream's truncatePodHostnameIfNeeded: a
// hostname longer than maxHostnameLen is cut there, without the '-' and
// '.' it would end with. A pod's name can be 253 characters long, so this
// happens to pods named by controllers.
func truncatePodHostname(podName, hostname string) (string, error) {
	if len(hostname) <= maxHostnameLen {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:maxHostnameLen], "-.")
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// kernelHostname is upstream's GetNodenameForKernel: the FQDN when the pod
// asks for it with setHostnameAsFQDN and has a domain, else the short
// hostname. An FQDN too long for the kernel fails the sandbox's creation
// with upstream's message, which its FailedCreatePodSandBox event quotes.
func kernelHostname(hostname, hostDomain string, setHostnameAsFQDN *bool) (string, error) {
	if hostDomain == "" || setHostnameAsFQDN == nil || !*setHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := hostname + "." + hostDomain
	if len(fqdn) > maxFQDNLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxFQDNLen, len(fqdn))
	}
	return fqdn, nil
}

func toRuntimeProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// ipcSysctls are the sysctls of the IPC namespace that have no common
// prefix, upstream's validSysctlMap (fs.mqueue.* is the rest).
var ipcSysctls = map[string]bool{
	"kernel.msgmax": true, "kernel.msgmnb": true, "kernel.msgmni": true, "kernel.sem": true,
	"kernel.shmall": true, "kernel.shmmax": true, "kernel.shmmni": true, "kernel.shm_rmid_forced": true,
}

// sandboxSysctls is upstream's: the node's default sysctls
// (applyPodSysctls), each only when the pod has the namespace it belongs to
// (IPC, network, user, or the UTS namespace's kernel.domainname), then the
// pod's own sysctls over them. Nil when there are none.
func sandboxSysctls(defaults map[string]string, pod *v1.Pod) map[string]string {
	out := map[string]string{}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for k, v := range defaults {
		k = utilsysctl.NormalizeName(k)
		switch {
		case ipcSysctls[k] || strings.HasPrefix(k, "fs.mqueue."):
			if !pod.Spec.HostIPC {
				out[k] = v
			}
		case strings.HasPrefix(k, "net."):
			if !pod.Spec.HostNetwork {
				out[k] = v
			}
		case strings.HasPrefix(k, "user."):
			if !hostUsers {
				out[k] = v
			}
		case k == "kernel.domainname":
			if !pod.Spec.HostNetwork {
				out[k] = v
			}
		}
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			out[s.Name] = s.Value
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
