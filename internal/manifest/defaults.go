package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SetDefaults applies to pod the defaults the API server applies to a v1 Pod
// (upstream's pkg/apis/core/v1 defaults.go and its generated defaulters), for
// the fields a pod uses. It leaves alone what admission plugins, not
// defaulting, set on the API server (priority, preemptionPolicy, the service
// account token volume): upstream's kubelet does not set those on static
// pods either.
func SetDefaults(pod *v1.Pod) {
	spec := &pod.Spec
	// A negative grace period is forced to 1 on a Pod, not rejected.
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		spec.TerminationGracePeriodSeconds = ptr[int64](1)
	}
	setPodSpecDefaults(spec)
	for i := range spec.InitContainers {
		setContainerDefaults(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		setContainerDefaults(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.EphemeralContainers {
		// Ephemeral containers take no requests from limits and no host ports.
		c := (*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		setCommonContainerDefaults(c)
	}
	for i := range spec.Volumes {
		setVolumeDefaults(&spec.Volumes[i])
	}
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

func setPodSpecDefaults(spec *v1.PodSpec) {
	// serviceAccount is the deprecated alias of serviceAccountName.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr[int64](v1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr(v1.DefaultEnableServiceLinks)
	}
}

// setContainerDefaults defaults an init or app container: what every
// container gets, plus requests from limits and, on the host network, host
// ports from container ports.
func setContainerDefaults(c *v1.Container, hostNetwork bool) {
	setCommonContainerDefaults(c)
	// Limits without requests mean requests equal to the limits; this is
	// done on a Pod only, not on a pod template.
	if c.Resources.Limits != nil {
		if c.Resources.Requests == nil {
			c.Resources.Requests = v1.ResourceList{}
		}
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = q.DeepCopy()
			}
		}
	}
	if hostNetwork {
		for i := range c.Ports {
			if c.Ports[i].HostPort == 0 {
				c.Ports[i].HostPort = c.Ports[i].ContainerPort
			}
		}
	}
}

func setCommonContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil {
			if vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
				vf.FieldRef.APIVersion = "v1"
			}
			if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
				vf.FileKeyRef.Optional = ptr(false)
			}
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setProbeDefaults(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				setHTTPGetDefaults(h.HTTPGet)
			}
		}
	}
}

// defaultPullPolicy is Always for an image whose tag is latest, stated or
// implied (no tag and no digest), and IfNotPresent otherwise.
func defaultPullPolicy(image string) v1.PullPolicy {
	if imageTag(image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag is the tag of an image reference as upstream's ParseImageName
// sees it: "latest" when neither tag nor digest is given, "" when only a
// digest is.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	// A colon before the last slash belongs to a registry host:port.
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func setProbeDefaults(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setHTTPGetDefaults(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr("")
	}
}

func setHTTPGetDefaults(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

func setVolumeDefaults(v *v1.Volume) {
	src := &v.VolumeSource
	if *src == (v1.VolumeSource{}) {
		// A volume that names no source is an emptyDir.
		src.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	switch {
	case src.Image != nil && src.Image.PullPolicy == "":
		src.Image.PullPolicy = defaultPullPolicy(src.Image.Reference)
	case src.HostPath != nil && src.HostPath.Type == nil:
		src.HostPath.Type = ptr(v1.HostPathUnset)
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = ptr(v1.SecretVolumeSourceDefaultMode)
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = ptr(v1.ConfigMapVolumeSourceDefaultMode)
	case src.DownwardAPI != nil:
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr(v1.DownwardAPIVolumeSourceDefaultMode)
		}
		setFieldRefDefaults(src.DownwardAPI.Items)
	case src.Projected != nil:
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptr(v1.ProjectedVolumeSourceDefaultMode)
		}
		for _, p := range src.Projected.Sources {
			if p.DownwardAPI != nil {
				setFieldRefDefaults(p.DownwardAPI.Items)
			}
			if t := p.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr[int64](3600)
			}
		}
	}
}

func setFieldRefDefaults(items []v1.DownwardAPIVolumeFile) {
	for i := range items {
		if f := items[i].FieldRef; f != nil && f.APIVersion == "" {
			f.APIVersion = "v1"
		}
	}
}

// roundUp rounds quantities up to milli-units, as the API server does to
// keep values representable.
func roundUp(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func ptr[T any](v T) *T { return &v }
