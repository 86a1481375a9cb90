package dra

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	"k8s.io/utils/ptr"
)

var t0 = time.Unix(1_700_000_000, 0)

func dev(pool, name string, h v1.ResourceHealthStatus, msg string) DeviceHealth {
	return DeviceHealth{PoolName: pool, DeviceName: name, Health: h, Message: msg, Timeout: DefaultHealthTimeout}
}

// TestHealthUpdate: a report merged into the cache, as upstream's
// updateHealthInfo: what changed, and what a later Get reads.
func TestHealthUpdate(t *testing.T) {
	healthy, unhealthy, unknown := v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusUnhealthy, v1.ResourceHealthStatusUnknown
	for _, tc := range []struct {
		name    string
		before  []DeviceHealth // reported at t0
		at      time.Duration  // the report's time, after t0
		report  []DeviceHealth
		changed []string
		get     time.Duration // Get's time, after t0
		want    map[string]v1.ResourceHealthStatus
	}{
		{name: "new devices change", report: []DeviceHealth{dev("p", "a", healthy, ""), dev("p", "b", unhealthy, "hot")},
			changed: []string{"p/a", "p/b"}, want: map[string]v1.ResourceHealthStatus{"p/a": healthy, "p/b": unhealthy}},
		{name: "the same again changes nothing", before: []DeviceHealth{dev("p", "a", healthy, "")}, at: time.Second,
			report: []DeviceHealth{dev("p", "a", healthy, "")}, want: map[string]v1.ResourceHealthStatus{"p/a": healthy}},
		{name: "health changes", before: []DeviceHealth{dev("p", "a", healthy, "")}, at: time.Second,
			report: []DeviceHealth{dev("p", "a", unhealthy, "")}, changed: []string{"p/a"}, want: map[string]v1.ResourceHealthStatus{"p/a": unhealthy}},
		{name: "a message alone changes", before: []DeviceHealth{dev("p", "a", unhealthy, "x")}, at: time.Second,
			report: []DeviceHealth{dev("p", "a", unhealthy, "y")}, changed: []string{"p/a"}},
		{name: "a device left out within its timeout stays", before: []DeviceHealth{dev("p", "a", unhealthy, ""), dev("p", "b", healthy, "")},
			at: 10 * time.Second, report: []DeviceHealth{dev("p", "b", healthy, "")},
			want: map[string]v1.ResourceHealthStatus{"p/a": unhealthy, "p/b": healthy}},
		{name: "a device left out past its timeout goes Unknown", before: []DeviceHealth{dev("p", "a", unhealthy, ""), dev("p", "b", healthy, "")},
			at: time.Minute, report: []DeviceHealth{dev("p", "b", healthy, "")}, changed: []string{"p/a"},
			want: map[string]v1.ResourceHealthStatus{"p/a": unknown, "p/b": healthy}},
		{name: "an Unknown device gone changes nothing", before: []DeviceHealth{dev("p", "a", unknown, "")},
			at: time.Minute, report: nil},
		{name: "a device not heard of for its timeout reads Unknown", report: []DeviceHealth{dev("p", "a", unhealthy, "x")},
			changed: []string{"p/a"}, get: 31 * time.Second, want: map[string]v1.ResourceHealthStatus{"p/a": unknown}},
		{name: "its own timeout", report: []DeviceHealth{{PoolName: "p", DeviceName: "a", Health: unhealthy, Timeout: 2 * time.Minute}},
			changed: []string{"p/a"}, get: time.Minute, want: map[string]v1.ResourceHealthStatus{"p/a": unhealthy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Health{}
			h.Update("drv", tc.before, t0)
			changed := h.Update("drv", tc.report, t0.Add(tc.at))
			if !reflect.DeepEqual(changed, tc.changed) {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			for k, want := range tc.want {
				pool, name, _ := strings.Cut(k, "/")
				if got := h.Get("drv", pool, name, t0.Add(tc.at+tc.get)); got.Health != want {
					t.Errorf("%s: %s, want %s", k, got.Health, want)
				}
			}
		})
	}
}

func TestHealthGetUnknownDriver(t *testing.T) {
	h := Health{}
	h.Update("drv", []DeviceHealth{dev("p", "a", v1.ResourceHealthStatusUnhealthy, "m")}, t0)
	if got := h.Get("drv", "p", "a", t0.Add(31*time.Second)); got.Message != "" {
		t.Errorf("a stale device keeps its message %q", got.Message)
	}
	h.ClearDriver("drv")
	if got := h.Get("drv", "p", "a", t0); got.Health != v1.ResourceHealthStatusUnknown {
		t.Errorf("a cleared driver's device: %s", got.Health)
	}
	if next := h.NextExpiry(t0); !next.IsZero() {
		t.Errorf("NextExpiry of nothing: %v", next)
	}
	h.Update("drv", []DeviceHealth{dev("p", "a", v1.ResourceHealthStatusHealthy, "")}, t0)
	if next := h.NextExpiry(t0); !next.Equal(t0.Add(DefaultHealthTimeout)) {
		t.Errorf("NextExpiry %v", next)
	}
}

func TestDeviceHealthFromProto(t *testing.T) {
	long := strings.Repeat("x", v1.ResourceHealthMessageMaxLength+10)
	for _, tc := range []struct {
		in   *drahealthv1.DeviceHealth
		want DeviceHealth
	}{
		{&drahealthv1.DeviceHealth{Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "d"}, Health: drahealthv1.HealthStatus_UNHEALTHY, Message: "ECC"},
			DeviceHealth{PoolName: "p", DeviceName: "d", Health: v1.ResourceHealthStatusUnhealthy, Message: "ECC", Timeout: DefaultHealthTimeout}},
		{&drahealthv1.DeviceHealth{Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "d"}, Health: drahealthv1.HealthStatus_HEALTHY, HealthCheckTimeoutSeconds: 90},
			DeviceHealth{PoolName: "p", DeviceName: "d", Health: v1.ResourceHealthStatusHealthy, Timeout: 90 * time.Second}},
		{&drahealthv1.DeviceHealth{Device: &drahealthv1.DeviceIdentifier{PoolName: "p", DeviceName: "d"}, HealthCheckTimeoutSeconds: -1, Message: long},
			DeviceHealth{PoolName: "p", DeviceName: "d", Health: v1.ResourceHealthStatusUnknown, Timeout: DefaultHealthTimeout,
				Message: long[:v1.ResourceHealthMessageMaxLength-3] + "..."}},
	} {
		if got := DeviceHealthFromProto(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestChooseHealthService(t *testing.T) {
	for _, tc := range []struct {
		supported []string
		want      string
	}{
		{[]string{"v1.DRAPlugin"}, ""},
		{[]string{"v1.DRAPlugin", drahealthv1alpha1.DRAResourceHealthService}, drahealthv1alpha1.DRAResourceHealthService},
		{[]string{drahealthv1alpha1.DRAResourceHealthService, drahealthv1.DRAResourceHealthService}, drahealthv1.DRAResourceHealthService},
	} {
		if got := ChooseHealthService(tc.supported); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.supported, got, tc.want)
		}
	}
}

// TestContainerResourceStatus: each container's allocatedResourcesStatus
// of its claims, as upstream's DRA manager builds it.
func TestContainerResourceStatus(t *testing.T) {
	healthy, unhealthy, unknown := v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusUnhealthy, v1.ResourceHealthStatusUnknown
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{
				{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")},
				{Name: "tmpl", ResourceClaimTemplateName: ptr.To("t")},
				{Name: "absent", ResourceClaimName: ptr.To("absent-claim")},
			},
			Containers: []v1.Container{
				{Name: "whole", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}},
				{Name: "req", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu", Request: "b"}, {Name: "tmpl"}}}},
				{Name: "none"},
				{Name: "gone", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "absent"}}}},
			},
		},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "tmpl", ResourceClaimName: ptr.To("pod-tmpl-xyz")}}},
	}
	claims := map[string]ClaimInfoState{
		"gpu-claim": {ClaimName: "gpu-claim", Namespace: "ns", DriverState: map[string]DriverState{"drv": {Devices: []Device{
			{PoolName: "p", DeviceName: "a", RequestNames: []string{"a"}, CDIDeviceIDs: []string{"vendor/gpu=a", "vendor/gpu=a2"}},
			{PoolName: "p", DeviceName: "b", RequestNames: []string{"b"}},
			{PoolName: "p", DeviceName: "b", RequestNames: []string{"b"}}, // the same device twice shows once
		}}}},
		"pod-tmpl-xyz": {ClaimName: "pod-tmpl-xyz", Namespace: "ns", DriverState: map[string]DriverState{"drv": {Devices: []Device{
			{PoolName: "p", DeviceName: "c", CDIDeviceIDs: []string{"vendor/gpu=c"}},
		}}}},
	}
	lookup := func(name string) (ClaimInfoState, bool) { c, ok := claims[name]; return c, ok }
	h := Health{}
	h.Update("drv", []DeviceHealth{dev("p", "a", healthy, ""), dev("p", "b", unhealthy, "ECC error")}, t0)

	for _, withMessage := range []bool{true, false} {
		var msg *string
		if withMessage {
			msg = ptr.To("ECC error")
		}
		want := map[string][]v1.ResourceStatus{
			"whole": {{Name: "claim:gpu", Resources: []v1.ResourceHealth{
				{ResourceID: "vendor/gpu=a", Health: healthy},
				{ResourceID: "drv/p/b", Health: unhealthy, Message: msg},
			}}},
			"req": {
				{Name: "claim:gpu/b", Resources: []v1.ResourceHealth{{ResourceID: "drv/p/b", Health: unhealthy, Message: msg}}},
				{Name: "claim:tmpl", Resources: []v1.ResourceHealth{{ResourceID: "vendor/gpu=c", Health: unknown}}},
			},
		}
		got := ContainerResourceStatus(pod, lookup, h, t0.Add(time.Second), withMessage)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("withMessage %v:\n got %+v\nwant %+v", withMessage, got, want)
		}
	}
}
