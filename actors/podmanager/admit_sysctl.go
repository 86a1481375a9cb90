package podmanager

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// safeSysctls are upstream's safe sysctls (pkg/kubelet/sysctl), each with
// the kernel version from which it is namespaced ("" for any): a sysctl
// not namespaced in the running kernel would change the host's value.
var safeSysctls = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
	{"net.ipv4.tcp_slow_start_after_idle", "4.15"},
	{"net.ipv4.tcp_notsent_lowat", "4.6"},
}

// SafeSysctls returns upstream's safe sysctls that the kernel of release
// (uname -r, e.g. "6.1.0-18-amd64") namespaces; an unreadable release
// keeps only those namespaced in every kernel, as upstream.
func SafeSysctls(release string) []string {
	have, known := kernelVersion(release)
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" {
			out = append(out, s.name)
			continue
		}
		need, _ := kernelVersion(s.kernel)
		if known && (have[0] > need[0] || (have[0] == need[0] && have[1] >= need[1])) {
			out = append(out, s.name)
		}
	}
	return out
}

// kernelVersion is the major and minor version of a kernel release.
func kernelVersion(release string) ([2]int, bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorDigits := parts[1]
	if i := strings.IndexFunc(minorDigits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorDigits = minorDigits[:i]
	}
	minor, err2 := strconv.Atoi(minorDigits)
	return [2]int{major, minor}, err1 == nil && err2 == nil
}

// sysctlPattern is upstream's valid sysctl pattern (policy validation's
// SysctlContainSlashPatternFmt): dotted or slashed segments, the last of
// which may end in *.
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// sysctlMaxLength is the API's SysctlMaxLength.
const sysctlMaxLength = 253

// SysctlAllowlist is upstream's sysctl admission handler: the sysctls (and
// prefixes, from patterns ending in *) a pod may set, each with the
// namespace it lives in, since a pod sharing that namespace with the host
// may not set it.
type SysctlAllowlist struct {
	sysctls  map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewSysctlAllowlist builds the allowlist of the safe sysctls and the
// allowedUnsafeSysctls patterns; as upstream, a pattern that is invalid or
// not known to be namespaced is an error (the kubelet does not start).
func NewSysctlAllowlist(patterns []string) (*SysctlAllowlist, error) {
	w := &SysctlAllowlist{sysctls: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, s := range patterns {
		if len(s) > sysctlMaxLength || !sysctlPattern.MatchString(s) {
			return nil, fmt.Errorf("allowedUnsafeSysctls: sysctl %q must have at most %d characters and match regex %s",
				s, sysctlMaxLength, sysctlPattern.String())
		}
		ns, sysctlOrPrefix, prefixed := utilsysctl.GetNamespace(s)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("allowedUnsafeSysctls: the sysctls %q are not known to be namespaced", sysctlOrPrefix)
		}
		if prefixed {
			w.prefixes[sysctlOrPrefix] = ns
		} else {
			w.sysctls[sysctlOrPrefix] = ns
		}
	}
	return w, nil
}

// admit refuses a pod setting a sysctl not allowed, or one of a namespace
// it shares with the host, with upstream's reason and message.
func (w *SysctlAllowlist) admit(pod *v1.Pod) *Rejection {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	if w == nil {
		w, _ = NewSysctlAllowlist(SafeSysctls(""))
	}
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC, hostUsers); err != nil {
			return &Rejection{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return nil
}

func (w *SysctlAllowlist) validate(sysctl string, hostNet, hostIPC, hostUsers bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	check := func(ns utilsysctl.Namespace) error {
		if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) ||
			(ns == utilsysctl.UserNamespace && hostUsers) {
			return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
		}
		return nil
	}
	if ns, ok := w.sysctls[sysctl]; ok {
		return check(ns)
	}
	for p, ns := range w.prefixes {
		if strings.HasPrefix(sysctl, p) {
			return check(ns)
		}
	}
	return fmt.Errorf("%q not allowlisted", sysctl)
}

// NodeSysctlAllowlist is the allowlist of this node: the safe sysctls its
// kernel namespaces, and allowedUnsafe (the configuration's
// allowedUnsafeSysctls).
func NodeSysctlAllowlist(allowedUnsafe []string) (*SysctlAllowlist, error) {
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return NewSysctlAllowlist(append(SafeSysctls(strings.TrimSpace(string(release))), allowedUnsafe...))
}
