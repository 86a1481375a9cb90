package dra

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCheckpointUpstreamFormat: a checkpoint written by upstream's kubelet
// (its unit tests' fixture) reads back, and what Encode writes is the
// same bytes.
func TestCheckpointUpstreamFormat(t *testing.T) {
	const upstream = `{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":[{\"ClaimUID\":\"067798be-454e-4be4-9047-1aa06aea63f7\",\"ClaimName\":\"example\",\"Namespace\":\"default\",\"PodUIDs\":{\"139cdb46-f989-4f17-9561-ca10cfb509a6\":{}},\"DriverState\":{\"test-driver.cdi.k8s.io\":{\"Devices\":[{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-1\",\"ShareID\":null,\"RequestNames\":[\"test request\"],\"CDIDeviceIDs\":[\"example.com/example=cdi-example\"]}]}}}]}","Checksum":2570581864}`
	claims, err := Decode([]byte(upstream))
	if err != nil {
		t.Fatal(err)
	}
	want := []ClaimInfoState{{
		ClaimUID: "067798be-454e-4be4-9047-1aa06aea63f7", ClaimName: "example", Namespace: "default",
		PodUIDs: map[string]struct{}{"139cdb46-f989-4f17-9561-ca10cfb509a6": {}},
		DriverState: map[string]DriverState{"test-driver.cdi.k8s.io": {Devices: []Device{{
			PoolName: "worker-1", DeviceName: "dev-1", RequestNames: []string{"test request"},
			CDIDeviceIDs: []string{"example.com/example=cdi-example"}}}}},
	}}
	if !reflect.DeepEqual(claims, want) {
		t.Errorf("decoded %+v, want %+v", claims, want)
	}
	out, err := Encode(claims)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != upstream {
		t.Errorf("encoded\n%s\nwant\n%s", out, upstream)
	}
	corrupt := strings.Replace(upstream, "dev-1", "dev-2", 1)
	if _, err := Decode([]byte(corrupt)); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a corrupted checkpoint: %v", err)
	}
}

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), CheckpointName)
	if got, err := Load(path); err != nil || got != nil {
		t.Fatalf("no file: %v, %v", got, err)
	}
	s := []ClaimInfoState{{ClaimUID: "u", ClaimName: "c", Namespace: "ns", PodUIDs: map[string]struct{}{"p": {}}}}
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("Load = %+v, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a bad file: %v", err)
	}
}

func TestNewClaimInfo(t *testing.T) {
	result := func(driver string, skip ...resourceapi.SkipNodeOperation) resourceapi.DeviceRequestAllocationResult {
		return resourceapi.DeviceRequestAllocationResult{Driver: driver, Pool: "p", Device: "d", Request: "r", SkipNodeOperations: skip}
	}
	all, prep := resourceapi.SkipNodeOperationAll, resourceapi.SkipNodeOperationNodePrepareResources
	for _, tc := range []struct {
		name    string
		results []resourceapi.DeviceRequestAllocationResult
		want    map[string]DriverState
	}{
		{"one driver", []resourceapi.DeviceRequestAllocationResult{result("a")}, map[string]DriverState{"a": {}}},
		{"every result skips all", []resourceapi.DeviceRequestAllocationResult{result("a", all), result("a", all), result("b")},
			map[string]DriverState{"a": {SkipNodeOperations: []resourceapi.SkipNodeOperation{all}}, "b": {}}},
		{"one result does not skip", []resourceapi.DeviceRequestAllocationResult{result("a", prep), result("a")},
			map[string]DriverState{"a": {}}},
		{"prepare skipped by all and by name", []resourceapi.DeviceRequestAllocationResult{result("a", prep), result("a", all)},
			map[string]DriverState{"a": {SkipNodeOperations: []resourceapi.SkipNodeOperation{prep}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
					Devices: resourceapi.DeviceAllocationResult{Results: tc.results}}}}
			got, err := NewClaimInfo(claim)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.DriverState, tc.want) {
				t.Errorf("driver states %+v, want %+v", got.DriverState, tc.want)
			}
		})
	}
	if _, err := NewClaimInfo(&resourceapi.ResourceClaim{}); err == nil || err.Error() != "not allocated" {
		t.Errorf("unallocated: %v", err)
	}
}

func TestContainerClaimsAndCDIDevices(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pu"},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{
				{Name: "named", ResourceClaimName: ptr.To("claim-a")},
				{Name: "templ", ResourceClaimTemplateName: ptr.To("t")},
				{Name: "unneeded", ResourceClaimTemplateName: ptr.To("t")},
			},
			Containers: []v1.Container{
				{Name: "all", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "named"}, {Name: "unneeded"}}}},
				{Name: "one", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "templ", Request: "gpu"}}}},
				{Name: "none"},
			},
		},
		Status: v1.PodStatus{ResourceClaimStatuses: []v1.PodResourceClaimStatus{
			{Name: "templ", ResourceClaimName: ptr.To("p-templ-x")}, {Name: "unneeded"}}},
	}
	for _, tc := range []struct {
		container int
		want      map[string][]string
	}{
		{0, map[string][]string{"claim-a": {""}}},
		{1, map[string][]string{"p-templ-x": {"gpu"}}},
		{2, map[string][]string{}},
	} {
		got, err := ContainerClaims(pod, &pod.Spec.Containers[tc.container])
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("container %d: %v, %v; want %v", tc.container, got, err, tc.want)
		}
	}
	noStatus := pod.DeepCopy()
	noStatus.Status = v1.PodStatus{}
	if _, err := ContainerClaims(noStatus, &noStatus.Spec.Containers[1]); err == nil || !strings.Contains(err.Error(), "ResourceClaim not created yet") {
		t.Errorf("a template claim not made yet: %v", err)
	}

	c := ClaimInfoState{DriverState: map[string]DriverState{
		"b.example.com": {Devices: []Device{{RequestNames: []string{"gpu"}, CDIDeviceIDs: []string{"b/x=1"}}}},
		"a.example.com": {Devices: []Device{
			{RequestNames: []string{"nic"}, CDIDeviceIDs: []string{"a/x=1"}},
			{CDIDeviceIDs: []string{"a/x=every"}},
		}},
	}}
	for _, tc := range []struct {
		request string
		want    []string
	}{
		{"", []string{"a/x=1", "a/x=every", "b/x=1"}},
		{"gpu", []string{"a/x=every", "b/x=1"}},
		{"nic", []string{"a/x=1", "a/x=every"}},
	} {
		if got := c.CDIDevices(tc.request); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("CDIDevices(%q) = %v, want %v", tc.request, got, tc.want)
		}
	}
}

func TestChooseServiceAndRegistry(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     string
		err      string
	}{
		{[]string{"v1beta1.DRAPlugin", "v1.DRAPlugin"}, "v1beta1.DRAPlugin", ""},
		{[]string{"v1.DRAPlugin"}, "v1.DRAPlugin", ""},
		{nil, "", "empty list of supported gRPC services"},
		{[]string{"1.0.0"}, "", `none of services supported by the plugin (["1.0.0"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])`},
	} {
		got, err := ChooseService(tc.versions)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ChooseService(%q) = %q, %v; want %q, %q", tc.versions, got, err, tc.want, tc.err)
		}
	}
	r := NewRegistry()
	if _, err := r.Get("d"); err == nil || err.Error() != "DRA driver d is not registered" {
		t.Errorf("Get of nothing: %v", err)
	}
	r.Add(Driver{Name: "d", Endpoint: "/1"})
	r.Add(Driver{Name: "d", Endpoint: "/2"})
	if d, _ := r.Get("d"); d.Endpoint != "/2" {
		t.Errorf("the latest registered is used: %v", d)
	}
	if r.Remove("d", "/2") {
		t.Error("a driver with a socket left is gone")
	}
	if d, _ := r.Get("d"); d.Endpoint != "/1" {
		t.Errorf("after removing /2: %v", d)
	}
	if !r.Remove("d", "/1") {
		t.Error("the last socket went: the driver is gone")
	}
}
