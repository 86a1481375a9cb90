package bootstrap

import (
	"reflect"
	"testing"

	"github.com/actorlet/actorlet/actors/statusreporter"
)

func TestStartWarnings(t *testing.T) {
	swap := statusreporter.StartWarning{Reason: "PossibleMemoryBackedVolumesOnDisk",
		Message: "The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be swapped to disk and should no longer be considered secure."}
	v1 := statusreporter.StartWarning{Reason: "CgroupV1", Message: cgroupV1Warning}
	resolv := statusreporter.StartWarning{Reason: "CheckLimitsForResolvConf", Message: "Resolv.conf file '/r' contains search line consisting of more than 29 domains!"}
	tests := []struct {
		name  string
		facts hostFacts
		want  []statusreporter.StartWarning
	}{
		{"nothing to say", hostFacts{}, nil},
		{"cgroup v1", hostFacts{cgroupV1: true}, []statusreporter.StartWarning{v1}},
		{"all, in upstream's order", hostFacts{memoryMaySwap: true, cgroupV1: true, resolvConf: resolv.Message},
			[]statusreporter.StartWarning{swap, v1, resolv}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := startWarnings(tt.facts); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
