package manifest

import (
	"fmt"
	gopath "path"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a static pod with a focused subset of upstream's
// ValidatePodCreate: enough to reject a clearly invalid spec before the
// kubelet tries to run it. Errors name the field, as the API server's do,
// e.g. "spec.containers[0].image: Required value"; all of them are reported
// at once, joined by "; ".
func Validate(pod *v1.Pod) error {
	errs := validateMeta(&pod.ObjectMeta)
	errs = append(errs, validateSpec(&pod.Spec, field.NewPath("spec"))...)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

func validateMeta(m *metav1.ObjectMeta) field.ErrorList {
	path := field.NewPath("metadata")
	var errs field.ErrorList
	errs = append(errs, validateName(m.Name, path.Child("name"), validation.IsDNS1123Subdomain)...)
	if m.GenerateName != "" {
		// A generated name appends random characters: the prefix may end
		// in a dash.
		for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(m.GenerateName, "-")) {
			errs = append(errs, field.Invalid(path.Child("generateName"), m.GenerateName, msg))
		}
	}
	errs = append(errs, validateName(m.Namespace, path.Child("namespace"), validation.IsDNS1123Label)...)
	errs = append(errs, metavalidation.ValidateLabels(m.Labels, path.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(m.Annotations, path.Child("annotations"))...)
	return errs
}

func validateName(name string, path *field.Path, rule func(string) []string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range rule(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

var (
	restartPolicies = sets.New(v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)
	dnsPolicies     = sets.New(v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)
	pullPolicies    = sets.New(v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)
	protocols       = sets.New(v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)
	messagePolicies = sets.New(v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)
)

func validateSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, volErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, volErrs...)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	// Container names are unique across init and app containers: the
	// runtime and the status report both key containers by name.
	names := sets.New[string]()
	for i := range spec.InitContainers {
		errs = append(errs, validateContainer(&spec.InitContainers[i], path.Child("initContainers").Index(i), names, volumes)...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateContainer(&spec.Containers[i], path.Child("containers").Index(i), names, volumes)...)
	}
	if !restartPolicies.Has(spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, sets.List(restartPolicies)))
	}
	if !dnsPolicies.Has(spec.DNSPolicy) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, sets.List(dnsPolicies)))
	}
	if spec.DNSPolicy == v1.DNSNone && (spec.DNSConfig == nil || len(spec.DNSConfig.Nameservers) == 0) {
		errs = append(errs, field.Required(path.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when dnsPolicy is None"))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	if sc := spec.SecurityContext; sc != nil {
		errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("securityContext", "seccompProfile"))...)
	}
	for _, cs := range []struct {
		name string
		list []v1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, c := range cs.list {
			if c.SecurityContext != nil {
				errs = append(errs, validateSeccompProfile(c.SecurityContext.SeccompProfile, path.Child(cs.name).Index(i).Child("securityContext", "seccompProfile"))...)
			}
		}
	}
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	for i := range spec.InitContainers {
		errs = append(errs, validateProcMount(spec.InitContainers[i].SecurityContext, hostUsers, path.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateProcMount(spec.Containers[i].SecurityContext, hostUsers, path.Child("containers").Index(i))...)
	}
	return errs
}

var seccompTypes = []v1.SeccompProfileType{v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}

// validateSeccompProfile is upstream's validateSeccompProfileField, with
// the API server's messages: a Localhost profile names a file below the
// node's seccomp root (ROOT/seccomp), so its name is a relative path
// without "..", as for pods from the API. The kubelet joins the name to
// its root without checking it again.
func validateSeccompProfile(sp *v1.SeccompProfile, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch {
	case sp.Type == "":
		errs = append(errs, field.Required(path.Child("type"), "type is required when seccompProfile is set"))
	case !slices.Contains(seccompTypes, sp.Type):
		errs = append(errs, field.NotSupported(path.Child("type"), sp.Type, seccompTypes))
	}
	p := path.Child("localhostProfile")
	if sp.Type != v1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(p, sp, "can only be set when seccomp type is Localhost"))
		}
		return errs
	}
	if sp.LocalhostProfile == nil {
		return append(errs, field.Required(p, "must be set when seccomp type is Localhost"))
	}
	name := *sp.LocalhostProfile
	if gopath.IsAbs(name) {
		errs = append(errs, field.Invalid(p, name, "must be a relative path"))
	}
	if slices.Contains(strings.Split(filepath.ToSlash(name), "/"), "..") {
		errs = append(errs, field.Invalid(p, name, "must not contain '..'"))
	}
	return errs
}

// validateHostUsers is upstream's validateHostUsers, with the API
// server's messages: a pod in a user namespace of its own shares no other
// namespace with the host, but for hostNetwork with the
// UserNamespacesHostNetworkSupport gate (hostNetwork). Pods from the API
// server were checked there, with its own gate.
func validateHostUsers(spec *v1.PodSpec, hostNetwork bool) error {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.HostNetwork && !hostNetwork {
		errs = append(errs, field.Forbidden(path.Child("hostNetwork"), "when `hostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(path.Child("HostPID"), "when `hostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(path.Child("HostIPC"), "when `hostUsers` is false"))
	}
	for i := range spec.InitContainers {
		if len(spec.InitContainers[i].VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(path.Child("initContainers").Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
		}
	}
	for i := range spec.Containers {
		if len(spec.Containers[i].VolumeDevices) > 0 {
			errs = append(errs, field.Forbidden(path.Child("containers").Index(i).Child("volumeDevices"), "when `hostUsers` is false"))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

var procMountTypes = sets.New(v1.DefaultProcMount, v1.UnmaskedProcMount)

// validateProcMount is upstream's: an unmasked /proc only in a user
// namespace of the pod's own (hostUsers: false), with the API server's
// messages.
func validateProcMount(sc *v1.SecurityContext, hostUsers bool, path *field.Path) field.ErrorList {
	if sc == nil || sc.ProcMount == nil {
		return nil
	}
	p := path.Child("securityContext", "procMount")
	if !procMountTypes.Has(*sc.ProcMount) {
		return field.ErrorList{field.NotSupported(p, *sc.ProcMount, sets.List(procMountTypes))}
	}
	if hostUsers && *sc.ProcMount == v1.UnmaskedProcMount {
		return field.ErrorList{field.Invalid(p, *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`")}
	}
	return nil
}

// validateVolumes checks volume names and returns the set of them, for
// volume mounts to refer to.
func validateVolumes(volumes []v1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	names := sets.New[string]()
	var errs field.ErrorList
	for i, v := range volumes {
		p := path.Index(i).Child("name")
		errs = append(errs, validateName(v.Name, p, validation.IsDNS1123Label)...)
		if names.Has(v.Name) {
			errs = append(errs, field.Duplicate(p, v.Name))
		}
		names.Insert(v.Name)
	}
	return names, errs
}

func validateContainer(c *v1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	errs := validateName(c.Name, path.Child("name"), validation.IsDNS1123Label)
	if c.Name != "" && names.Has(c.Name) {
		errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
	}
	names.Insert(c.Name)
	if strings.TrimSpace(c.Image) == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	if !pullPolicies.Has(c.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy, sets.List(pullPolicies)))
	}
	if !messagePolicies.Has(c.TerminationMessagePolicy) {
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, sets.List(messagePolicies)))
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, path.Child("env"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	for i, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
	}
	return errs
}

func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if !protocols.Has(port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, sets.List(protocols)))
		}
	}
	return errs
}

// validateEnv uses the relaxed rule for names (any printable ASCII but
// '='), GA and locked on upstream since 1.34.
func validateEnv(env []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		errs = append(errs, validateName(e.Name, path.Index(i).Child("name"), validation.IsRelaxedEnvVarName)...)
	}
	return errs
}

// validateResources checks that quantities are not negative and that a
// request does not exceed its limit; that they parse was checked when the
// manifest was decoded.
func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		rl   v1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sets.List(sets.KeySet(list.rl)) {
			if q := list.rl[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(list.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range sets.List(sets.KeySet(r.Requests)) {
		req := r.Requests[name]
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}
