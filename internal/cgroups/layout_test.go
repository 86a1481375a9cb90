package cgroups

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestLayout checks the cgroup names against upstream's
// (CgroupName.ToCgroupfs and ToSystemd of the QoS and pod cgroups).
func TestLayout(t *testing.T) {
	tests := []struct {
		name                        string
		l                           Layout
		pods, guaranteed, burst, be string
		parents                     []string
	}{
		{"cgroupfs", Layout{Driver: "cgroupfs", PerQOS: true}, "/kubepods",
			"/kubepods/pod12-ab", "/kubepods/burstable/pod12-ab", "/kubepods/besteffort/pod12-ab",
			[]string{"/kubepods", "/kubepods/burstable", "/kubepods/besteffort"}},
		{"cgroupfs below a root", Layout{CgroupRoot: "/test/node", Driver: "cgroupfs", PerQOS: true}, "/test/node/kubepods",
			"/test/node/kubepods/pod12-ab", "/test/node/kubepods/burstable/pod12-ab", "/test/node/kubepods/besteffort/pod12-ab", nil},
		{"systemd", Layout{CgroupRoot: "/", Driver: "systemd", PerQOS: true}, "/kubepods.slice",
			"/kubepods.slice/kubepods-pod12_ab.slice",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_ab.slice",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12_ab.slice", nil},
		{"without QoS cgroups", Layout{CgroupRoot: "/pods", Driver: "cgroupfs"}, "/pods", "/pods", "/pods", "/pods", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := tt.l.NodeAllocatable()
			if err != nil || pods != tt.pods {
				t.Fatalf("NodeAllocatable = %q, %v; want %q", pods, err, tt.pods)
			}
			for class, want := range map[v1.PodQOSClass]string{v1.PodQOSGuaranteed: tt.guaranteed, v1.PodQOSBurstable: tt.burst, v1.PodQOSBestEffort: tt.be} {
				if got := tt.l.Pod(pods, "12-ab", class); got != want {
					t.Errorf("%s pod cgroup %q, want %q", class, got, want)
				}
			}
			if tt.parents != nil && !reflect.DeepEqual(tt.l.PodParents(pods), tt.parents) {
				t.Errorf("PodParents = %q, want %q", tt.l.PodParents(pods), tt.parents)
			}
		})
	}
}
