package evictionpolicy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/internal/testutil"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		name                       string
		allocatable                []string
		hard, soft, grace, reclaim map[string]string
		want                       []string // Threshold.String()
		wantErr                    string
	}{
		{name: "upstream's defaults", hard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%",
			"nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"},
			want: []string{"imagefs.available<15%", "imagefs.inodesFree<5%", "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"}},
		{name: "0% and 100% are ignored", hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%"}},
		{name: "soft with grace and minimum reclaim",
			hard: map[string]string{"memory.available": "1Gi"}, soft: map[string]string{"memory.available": "2Gi", "pid.available": "10%"},
			grace:   map[string]string{"memory.available": "1m30s", "pid.available": "10s"},
			reclaim: map[string]string{"memory.available": "500Mi"},
			want: []string{"memory.available<1Gi (minimum reclaim 500Mi)", "memory.available<2Gi for 1m30s (minimum reclaim 500Mi)",
				"pid.available<10% for 10s"}},
		{name: "pods in enforceNodeAllocatable: allocatable memory too", allocatable: []string{"pods"},
			hard: map[string]string{"memory.available": "100Mi"},
			want: []string{"memory.available<100Mi", "allocatableMemory.available<100Mi"}},
		{name: "percentage minimum reclaim", hard: map[string]string{"nodefs.available": "10%"}, reclaim: map[string]string{"nodefs.available": "5%"},
			want: []string{"nodefs.available<10% (minimum reclaim 5%)"}},
		{name: "soft without grace period", soft: map[string]string{"memory.available": "1Gi"},
			wantErr: "grace period must be specified for the soft eviction threshold memory.available"},
		{name: "unknown signal", hard: map[string]string{"memory.free": "1Gi"}, wantErr: "evictionHard: unsupported eviction signal memory.free"},
		{name: "negative quantity", hard: map[string]string{"memory.available": "-1Gi"}, wantErr: "must be positive"},
		{name: "zero quantity", hard: map[string]string{"memory.available": "0"}, wantErr: "must be positive"},
		{name: "over 100%", hard: map[string]string{"nodefs.available": "150%"}, wantErr: "must be <= 100%"},
		{name: "bad percentage", hard: map[string]string{"nodefs.available": "x%"}, wantErr: "evictionHard nodefs.available"},
		{name: "negative grace", soft: map[string]string{"memory.available": "1Gi"}, grace: map[string]string{"memory.available": "-1s"}, wantErr: "must be a positive value"},
		{name: "negative reclaim", reclaim: map[string]string{"memory.available": "-1Gi"}, wantErr: "negative eviction minimum reclaim"},
		{name: "zero percent reclaim", reclaim: map[string]string{"memory.available": "0%"}, wantErr: "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseThresholds(tt.allocatable, tt.hard, tt.soft, tt.grace, tt.reclaim)
			if testutil.WantErr(t, err, tt.wantErr) {
				return
			}
			var s []string
			for _, th := range got {
				s = append(s, th.String())
			}
			if strings.Join(s, "|") != strings.Join(tt.want, "|") {
				t.Errorf("thresholds %q, want %q", s, tt.want)
			}
		})
	}
}

func TestValueOf(t *testing.T) {
	capacity := *q("1000Mi")
	for _, tt := range []struct {
		v    Value
		want int64
	}{
		{Value{Quantity: q("100Mi")}, 100 << 20},
		{Value{Percentage: 0.1}, 100<<20 + 1}, // float32, as upstream
		{Value{Percentage: 1}, 1000 << 20},
	} {
		got := tt.v.Of(capacity)
		if got.Value() != tt.want {
			t.Errorf("%s of %s = %d, want %d", tt.v, &capacity, got.Value(), tt.want)
		}
	}
}
