package podmanager

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

// ReasonAppArmor is upstream's AppArmorNotAdmittedReason.
const ReasonAppArmor = "AppArmor"

// errAppArmorDisabled is upstream's validateHost refusal.
var errAppArmorDisabled = errors.New("AppArmor is not enabled on the host")

// AppArmorHost tells whether this host can enforce AppArmor profiles, as
// upstream's validateHost (runc's IsEnabled): nil when it can, else why
// not. As upstream, it is read once at start-up: enabling or disabling
// AppArmor takes a restart of the kubelet. Where it can, the profiles go
// to the runtime with each container (podruntime's appArmorProfile).
func AppArmorHost() error {
	return appArmorHost("/sys")
}

// appArmorHost is AppArmorHost on the sysfs mounted at sys.
func appArmorHost(sys string) error {
	if _, err := os.Stat(filepath.Join(sys, "kernel/security/apparmor")); err != nil {
		return errAppArmorDisabled
	}
	b, err := os.ReadFile(filepath.Join(sys, "module/apparmor/parameters/enabled"))
	if err != nil || len(b) < 2 || b[0] != 'Y' {
		return errAppArmorDisabled
	}
	return nil
}

// admitAppArmor is upstream's AppArmor admit handler: a pending pod that
// asks for a profile other than unconfined (pod or container security
// context, or the deprecated annotations) is refused when the host cannot
// enforce it, or when a localhost profile has no name.
func admitAppArmor(pod *v1.Pod, host error) *Rejection {
	if pod.Status.Phase != "" && pod.Status.Phase != v1.PodPending {
		return nil
	}
	if !appArmorRequired(pod) {
		return nil
	}
	reject := func(err error) *Rejection {
		return &Rejection{Reason: ReasonAppArmor, Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
	}
	if host != nil {
		return reject(host)
	}
	// As upstream's VisitContainers over all containers: ephemeral ones too.
	all := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, ec := range pod.Spec.EphemeralContainers {
		all = append(all, v1.Container(ec.EphemeralContainerCommon))
	}
	for _, cs := range [][]v1.Container{all} {
		for i := range cs {
			p := podruntime.AppArmorProfile(pod, &cs[i])
			if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
				return reject(fmt.Errorf("invalid empty AppArmor profile name: %q", p))
			}
		}
	}
	return nil
}

// appArmorRequired is upstream's isRequired: some profile other than
// unconfined is asked for.
func appArmorRequired(pod *v1.Pod) bool {
	confined := func(p *v1.AppArmorProfile) bool { return p != nil && p.Type != v1.AppArmorProfileTypeUnconfined }
	if sc := pod.Spec.SecurityContext; sc != nil && confined(sc.AppArmorProfile) {
		return true
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			return value != v1.DeprecatedAppArmorBetaProfileNameUnconfined
		}
	}
	return false
}
