package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestQOSClass checks upstream's ComputePodQOS cases.
func TestQOSClass(t *testing.T) {
	c := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name string
		spec v1.PodSpec
		want v1.PodQOSClass
	}{
		{"none", v1.PodSpec{Containers: []v1.Container{c(nil, nil)}}, v1.PodQOSBestEffort},
		{"zero quantities", v1.PodSpec{Containers: []v1.Container{c(rl("0", "0"), nil)}}, v1.PodQOSBestEffort},
		{"equal", v1.PodSpec{Containers: []v1.Container{c(rl("1", "1Gi"), rl("1", "1Gi"))}}, v1.PodQOSGuaranteed},
		{"limits without requests (not defaulted)", v1.PodSpec{Containers: []v1.Container{c(nil, rl("1", "1Gi"))}}, v1.PodQOSBurstable},
		{"cpu only", v1.PodSpec{Containers: []v1.Container{c(rl("1", ""), rl("1", ""))}}, v1.PodQOSBurstable},
		{"guaranteed and best effort containers", v1.PodSpec{Containers: []v1.Container{c(rl("1", "1Gi"), rl("1", "1Gi")), c(nil, nil)}}, v1.PodQOSBurstable},
		{"burstable init container", v1.PodSpec{InitContainers: []v1.Container{c(rl("1", ""), nil)},
			Containers: []v1.Container{c(rl("1", "1Gi"), rl("1", "1Gi"))}}, v1.PodQOSBurstable},
		{"extended resources ignored", v1.PodSpec{Containers: []v1.Container{c(v1.ResourceList{"example.com/gpu": resource.MustParse("1")}, nil)}}, v1.PodQOSBestEffort},
		{"pod-level resources", v1.PodSpec{Resources: &v1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")},
			Containers: []v1.Container{c(nil, nil)}}, v1.PodQOSGuaranteed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QOSClass(&v1.Pod{Spec: tt.spec}); got != tt.want {
				t.Errorf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}
