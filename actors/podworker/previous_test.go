package podworker

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPreviousStatus(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cond := func(ty v1.PodConditionType, s v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: ty, Status: s}
	}
	for _, tt := range []struct {
		name        string
		api, synced v1.PodStatus
		want        []v1.PodCondition
	}{
		{
			name:   "the kubelet's conditions as reported, others' as the API has them",
			api:    v1.PodStatus{Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionFalse), cond("example.com/gate", v1.ConditionTrue)}},
			synced: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, Conditions: []v1.PodCondition{cond(v1.PodReady, v1.ConditionTrue), cond("example.com/gate", v1.ConditionFalse), cond(v1.PodScheduled, v1.ConditionTrue)}},
			want:   []v1.PodCondition{cond("example.com/gate", v1.ConditionTrue), cond(v1.PodReady, v1.ConditionTrue), cond(v1.PodScheduled, v1.ConditionTrue)},
		},
		{
			name:   "a gate's condition gone from the API is gone",
			api:    v1.PodStatus{},
			synced: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, Conditions: []v1.PodCondition{cond("example.com/gate", v1.ConditionTrue)}},
			want:   []v1.PodCondition{},
		},
		{
			name:   "a DisruptionTarget the API does not show yet is kept",
			api:    v1.PodStatus{},
			synced: v1.PodStatus{Phase: v1.PodFailed, StartTime: &start, Conditions: []v1.PodCondition{cond(v1.DisruptionTarget, v1.ConditionTrue)}},
			want:   []v1.PodCondition{cond(v1.DisruptionTarget, v1.ConditionTrue)},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := previousStatus(tt.api, &tt.synced)
			if !reflect.DeepEqual(got.Conditions, tt.want) {
				t.Errorf("conditions %+v, want %+v", got.Conditions, tt.want)
			}
			if got.Phase != tt.synced.Phase || got.StartTime != tt.synced.StartTime {
				t.Errorf("phase %s start %v: not the reported ones", got.Phase, got.StartTime)
			}
		})
	}
}
