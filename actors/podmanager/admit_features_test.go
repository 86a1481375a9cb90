package podmanager

import (
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestAdmitFeatures: pods that need DRA or per-container restart rules are
// refused with upstream's PodFeatureUnsupported, never run without them; a
// container's restart policy that changes nothing, and a sidecar's Always,
// are admitted.
func TestAdmitFeatures(t *testing.T) {
	always, onFailure, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyOnFailure, v1.ContainerRestartPolicyNever
	claim, template := "gpu-claim", "gpu-template"
	const (
		dra      = "Pod requires node features that are not available: DynamicResourceAllocation"
		rules    = "Pod requires node features that are not available: ContainerRestartRules"
		draRules = "Pod requires node features that are not available: DynamicResourceAllocation, ContainerRestartRules"
	)
	withPolicy := func(podPolicy v1.RestartPolicy, c *v1.ContainerRestartPolicy, init bool) *v1.Pod {
		return mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.RestartPolicy = podPolicy
			if init {
				p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: c}}
				return
			}
			p.Spec.Containers[0].RestartPolicy = c
		})
	}
	exitRule := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // the message; "" admits
	}{
		{name: "plain", pod: podWith("", "")},
		{name: "a claim by name", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
			p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
		}), want: dra},
		{name: "a claim from a template", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claim}}
		}), want: dra},
		{name: "a template's claim not made yet", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
		}), want: dra},
		{name: "a template that needs no claim", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu"}}
		})},
		{name: "an init container's claim", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}}
		}), want: dra},
		{name: "extended resources backed by a claim", pod: mutate(podWith("", ""), func(p *v1.Pod) {
			p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext"}
		}), want: dra},
		{name: "a container's policy as the pod's", pod: withPolicy(v1.RestartPolicyOnFailure, &onFailure, false)},
		{name: "a container's Always, pod Never", pod: withPolicy(v1.RestartPolicyNever, &always, false), want: rules},
		{name: "a container's Never, pod default (Always)", pod: withPolicy("", &never, false), want: rules},
		{name: "a container's restart rules", pod: mutate(withPolicy(v1.RestartPolicyNever, &never, false), func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicyRules = exitRule
		}), want: rules},
		{name: "a sidecar", pod: withPolicy(v1.RestartPolicyNever, &always, true)},
		{name: "an init container's OnFailure, pod Always", pod: withPolicy(v1.RestartPolicyAlways, &onFailure, true)},
		{name: "an init container's Never, pod Never", pod: withPolicy(v1.RestartPolicyNever, &never, true)},
		{name: "an init container's OnFailure, pod Never", pod: withPolicy(v1.RestartPolicyNever, &onFailure, true), want: rules},
		{name: "an init container's Never, pod OnFailure", pod: withPolicy(v1.RestartPolicyOnFailure, &never, true), want: rules},
		{name: "an init container's rules", pod: mutate(withPolicy(v1.RestartPolicyNever, &never, true), func(p *v1.Pod) {
			p.Spec.InitContainers[0].RestartPolicyRules = exitRule
		}), want: rules},
		{name: "both", pod: mutate(withPolicy(v1.RestartPolicyNever, &always, false), func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		}), want: draRules},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admitFeatures(tc.pod, nil, false)
			switch {
			case tc.want == "" && r != nil:
				t.Errorf("refused: %+v", r)
			case tc.want != "" && (r == nil || r.Reason != "PodFeatureUnsupported" || r.Message != tc.want):
				t.Errorf("got %+v, want PodFeatureUnsupported: %s", r, tc.want)
			}
			// admit asks the same, last.
			if got := admit(tc.pod, nil, Admission{MaxPods: 10}); (got == nil) != (tc.want == "") {
				t.Errorf("admit: %+v", got)
			}
			// With a dra-manager, claims are prepared rather than refused.
			if r := admitFeatures(tc.pod, nil, true); tc.want == dra && r != nil || tc.want == draRules && (r == nil || r.Message != rules) {
				t.Errorf("with a dra-manager: %+v", r)
			}
		})
	}
}

// TestAdmitImageVolumes: on a runtime that cannot mount image volumes, a
// pod with one is refused with PodFeatureUnsupported and the runtime's
// shortcoming, never run without its volume; elsewhere it is admitted.
func TestAdmitImageVolumes(t *testing.T) {
	old := errors.New("the container runtime containerd 1.6.20 cannot mount image volumes: that needs containerd 2.1 or later")
	withImage := mutate(podWith("", ""), func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "data:1"}}}}
	})
	claim := "gpu-claim"
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		runtime error
		want    string // the message; "" admits
	}{
		{name: "an image volume, a runtime that mounts it", pod: withImage},
		{name: "no image volume, an old runtime", pod: podWith("", ""), runtime: old},
		{name: "an image volume, an old runtime", pod: withImage, runtime: old,
			want: "Pod requires node features that are not available: ImageVolume; " + old.Error()},
		{name: "with a claim", pod: mutate(withImage, func(p *v1.Pod) {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
		}), runtime: old, want: "Pod requires node features that are not available: DynamicResourceAllocation, ImageVolume; " + old.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := admit(tc.pod, nil, Admission{MaxPods: 10, ImageVolumes: tc.runtime})
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %+v", got)
			case tc.want != "" && (got == nil || got.Reason != ReasonFeatureUnsupported || got.Message != tc.want):
				t.Errorf("got %+v, want PodFeatureUnsupported: %s", got, tc.want)
			}
		})
	}
}

// TestImageVolumeRuntime: containerd mounts image volumes from 2.1; other
// runtimes are trusted to.
func TestImageVolumeRuntime(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          string // the error; "" mounts
	}{
		{"containerd", "1.6.20~ds1", "the container runtime containerd 1.6.20~ds1 cannot mount image volumes: that needs containerd 2.1 or later"},
		{"containerd", "v1.7.24", "the container runtime containerd v1.7.24 cannot mount image volumes: that needs containerd 2.1 or later"},
		{"containerd", "v2.0.5", "the container runtime containerd v2.0.5 cannot mount image volumes: that needs containerd 2.1 or later"},
		{"containerd", "v2.1.0", ""},
		{"containerd", "2.1-rc.1", ""},
		{"containerd", "v2.4.2", ""},
		{"containerd", "v10.0.0", ""},
		{"containerd", "dev", "the container runtime containerd dev may not mount image volumes: its version does not parse"},
		{"containerd", "v2.x", "the container runtime containerd v2.x may not mount image volumes: its version does not parse"},
		{"cri-o", "1.34.0", ""},
	} {
		t.Run(tc.name+" "+tc.version, func(t *testing.T) {
			err := ImageVolumeRuntime(&runtimeapi.VersionResponse{RuntimeName: tc.name, RuntimeVersion: tc.version})
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
