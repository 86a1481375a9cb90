package evictionpolicy

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestLocalStorageViolations(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	withLimit := func(name, limit string) *v1.Pod {
		p := rpod(name, "", "", 0)
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(limit)}
		return p
	}
	withEmptyDir := func(name, size string, medium v1.StorageMedium) *v1.Pod {
		p := rpod(name, "", "", 0)
		s := resource.MustParse(size)
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &s, Medium: medium}}}}
		return p
	}
	withSidecar := func(name, limit string) *v1.Pod {
		p := rpod(name, "", "", 0)
		p.Spec.InitContainers = []v1.Container{{Name: "side", RestartPolicy: &always,
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(limit)}}}}
		return p
	}
	mi := func(v uint64) *uint64 { return u64(v << 20) }
	st := func(name string, rootMi, logsMi, totalMi, volMi uint64) statsapi.PodStats {
		s := rstats(name, 0, rootMi, logsMi, 1)
		s.EphemeralStorage = &statsapi.FsStats{UsedBytes: mi(totalMi)}
		s.VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: mi(volMi)}}}
		return s
	}
	tests := []struct {
		name      string
		pod       *v1.Pod
		stats     statsapi.PodStats
		dedicated bool
		want      string // the message; "" for none
	}{
		{"under its limit", withLimit("p", "100Mi"), st("p", 10, 10, 20, 0), false, ""},
		{"the pod over its containers' limits", withLimit("p", "100Mi"), st("p", 10, 10, 150, 0), false,
			"Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. "},
		{"a container over its limit (writable layer and logs)", withLimit("p", "100Mi"), st("p", 60, 60, 90, 0), false,
			`Container c exceeded its local ephemeral storage limit "100Mi". `},
		{"dedicated imagefs: only the logs count for a container", withLimit("p", "100Mi"), st("p", 60, 60, 90, 0), true, ""},
		{"emptyDir over its sizeLimit", withEmptyDir("p", "10Mi", v1.StorageMediumDefault), st("p", 0, 0, 20, 20), false,
			`Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `},
		{"memory-backed emptyDir: the kernel's", withEmptyDir("p", "10Mi", v1.StorageMediumMemory), st("p", 0, 0, 20, 20), false, ""},
		{"restartable init container over its limit", withSidecar("p", "10Mi"), func() statsapi.PodStats {
			s := st("p", 0, 0, 0, 0)
			s.Containers = append(s.Containers, statsapi.ContainerStats{Name: "side", Logs: &statsapi.FsStats{UsedBytes: mi(20)}})
			return s
		}(), false, `Container side exceeded its local ephemeral storage limit "10Mi". `},
		{"no statistics", withLimit("p", "1Ki"), st("other", 10, 10, 20, 0), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := LocalStorageViolations([]*v1.Pod{tt.pod}, StatsByUID([]statsapi.PodStats{tt.stats}), tt.dedicated)
			var got []string
			for _, v := range vs {
				got = append(got, v.Message)
			}
			if strings.Join(got, "|") != tt.want {
				t.Errorf("violations %q, want %q", got, tt.want)
			}
		})
	}
}
