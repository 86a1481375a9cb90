package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseQOSReserved(t *testing.T) {
	for _, tc := range []struct {
		in      map[string]string
		want    int64
		wantErr string
	}{
		{in: nil},
		{in: map[string]string{"memory": "50%"}, want: 50},
		{in: map[string]string{"memory": "0%"}, want: 0},
		{in: map[string]string{"memory": "100%"}, want: 100},
		{in: map[string]string{"cpu": "50%"}, wantErr: `cannot reserve "cpu" resource`},
		{in: map[string]string{"memory": "50"}, wantErr: `failed to parse percentage "50" for "memory" resource: percentage expected, got '50'`},
		{in: map[string]string{"memory": "x%"}, wantErr: `failed to parse percentage "x%" for "memory" resource: invalid number in percentage 'x%'`},
		{in: map[string]string{"memory": "150%"}, wantErr: `failed to parse percentage "150%" for "memory" resource: percentage must be between 0 and 100`},
	} {
		got, err := ParseQOSReserved(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v: err %v, want %s", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got[v1.ResourceMemory] != tc.want {
			t.Errorf("%v: %v %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestQoSMemoryLimits(t *testing.T) {
	pod := func(req, lim v1.ResourceList) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", req, lim)}}}
	}
	guaranteed := pod(rl("1", "1Gi"), rl("1", "1Gi"))
	burstable := pod(rl("100m", "512Mi"), nil)
	bestEffort := pod(nil, nil)
	for _, tc := range []struct {
		name                 string
		pods                 []*v1.Pod
		percent, allocatable int64
		wantB, wantBE        int64
		wantOK               bool
	}{
		{"no pods", nil, 50, 4 << 30, 4 << 30, 4 << 30, true},
		{"half of the better classes' requests", []*v1.Pod{guaranteed, burstable, bestEffort}, 50, 4 << 30, 4<<30 - 512<<20, 4<<30 - 512<<20 - 256<<20, true},
		{"all of them", []*v1.Pod{guaranteed, burstable}, 100, 4 << 30, 3 << 30, 3<<30 - 512<<20, true},
		{"0%: allocatable", []*v1.Pod{guaranteed, burstable}, 0, 4 << 30, 4 << 30, 4 << 30, true},
		{"allocatable unknown", []*v1.Pod{guaranteed}, 50, 0, 0, 0, false},
	} {
		b, be, ok := QoSMemoryLimits(tc.pods, tc.percent, tc.allocatable)
		if b != tc.wantB || be != tc.wantBE || ok != tc.wantOK {
			t.Errorf("%s: (%d, %d, %v), want (%d, %d, %v)", tc.name, b, be, ok, tc.wantB, tc.wantBE, tc.wantOK)
		}
	}
}
