package podmanager

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ReasonAppArmor is upstream's AppArmorNotAdmittedReason.
const ReasonAppArmor = "AppArmor"

// errAppArmorNotPassed is why a host with AppArmor still cannot enforce a
// profile: actorlet does not hand AppArmor profiles to the runtime, and a
// pod asking for one is refused rather than run unconfined.
var errAppArmorNotPassed = errors.New("actorlet does not pass AppArmor profiles to the container runtime")

// AppArmorHost tells whether this host can enforce AppArmor profiles, as
// upstream's validateHost: nil when it can, else why not. The kernel must
// have AppArmor enabled (runc's check); actorlet must then also pass the
// profiles on, which it does not.
func AppArmorHost() error {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return errors.New("AppArmor is not enabled on the host")
	}
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err != nil || !bytes.HasPrefix(b, []byte("Y")) {
		return errors.New("AppArmor is not enabled on the host")
	}
	return errAppArmorNotPassed
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
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			p := appArmorProfile(pod, &cs[i])
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

// appArmorProfile is upstream's GetProfile: the container's, the
// deprecated annotation's, or the pod's.
func appArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
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
