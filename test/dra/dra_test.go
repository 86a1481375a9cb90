// Package dra runs actorlet as the environment's node against the real
// kube-apiserver with a small DRA driver of the test's own (issue #37):
// its registration socket under ROOT/plugins_registry, its DRAPlugin
// service under ROOT/plugins, and a CDI spec it writes on
// NodePrepareResources. The test allocates the claim itself, as the
// scheduler would (there is no scheduler here). Upstream kubelet v1.37.2 is
// the reference:
//
//	DRA_KUBELET=/var/lib/actorlet-env/bin/v1.37.2/kubelet go test ./test/dra/
package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// DRA_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "DRA_KUBELET") }

const (
	driverName = "dra.actorlet.example.com"
	cdiKind    = driverName + "/gpu"
	cdiDir     = "/var/run/cdi"
)

// driver is the DRAPlugin service: each prepared claim gets a CDI device
// named after its UID that sets DRA_DEVICE in the container.
type driver struct {
	drapb.UnimplementedDRAPluginServer
	mu                   sync.Mutex
	prepared, unprepared []string
}

func (d *driver) specPath(uid string) string {
	return filepath.Join(cdiDir, "actorlet-test-"+uid+".json")
}

func (d *driver) NodePrepareResources(_ context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	resp := &drapb.NodePrepareResourcesResponse{Claims: map[string]*drapb.NodePrepareResourceResponse{}}
	for _, c := range req.Claims {
		spec := map[string]any{"cdiVersion": "0.5.0", "kind": cdiKind, "devices": []any{map[string]any{
			"name": c.Uid, "containerEdits": map[string]any{"env": []string{"DRA_DEVICE=gpu-0-" + c.Name}}}}}
		blob, _ := json.Marshal(spec)
		if err := os.MkdirAll(cdiDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(d.specPath(c.Uid), blob, 0o644); err != nil {
			return nil, err
		}
		resp.Claims[c.Uid] = &drapb.NodePrepareResourceResponse{Devices: []*drapb.Device{{
			RequestNames: []string{"gpu"}, PoolName: "pool", DeviceName: "gpu-0", CdiDeviceIds: []string{cdiKind + "=" + c.Uid}}}}
		d.mu.Lock()
		d.prepared = append(d.prepared, c.Uid)
		d.mu.Unlock()
	}
	return resp, nil
}

func (d *driver) NodeUnprepareResources(_ context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	resp := &drapb.NodeUnprepareResourcesResponse{Claims: map[string]*drapb.NodeUnprepareResourceResponse{}}
	for _, c := range req.Claims {
		_ = os.Remove(d.specPath(c.Uid))
		resp.Claims[c.Uid] = &drapb.NodeUnprepareResourceResponse{}
		d.mu.Lock()
		d.unprepared = append(d.unprepared, c.Uid)
		d.mu.Unlock()
	}
	return resp, nil
}

func (d *driver) calls() (prepared, unprepared []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.prepared), slices.Clone(d.unprepared)
}

// TestClaimPreparedAcrossRestart: a pod with a ResourceClaim allocated to
// the driver's device and reserved for it runs with the driver's CDI
// device (its env in the container); after a restart of the agent the pod
// still runs and the claim is not prepared again; deleting the pod
// unprepares the claim.
func TestClaimPreparedAcrossRestart(t *testing.T) {
	n := kubelet.NewAPIPods(t)
	n.Up(t, "dra")
	ctx := context.Background()
	d := &driver{}
	startDriver(t, n, d, nil)
	claim, pod := claimPod(t, n)

	// The pod may reach the node before its claim is reserved for it:
	// upstream's kubelet then tries again at its next sync, a
	// syncFrequency (1 min) later; actorlet's dra-manager within seconds.
	n.Running(t, pod.Name, 2*time.Minute)
	want := "DRA_DEVICE=gpu-0-gpu"
	n.Expect(t, pod.Name, "c", "echo DRA_DEVICE=$DRA_DEVICE", want)
	if p, _ := d.calls(); !slices.Equal(p, []string{string(claim.UID)}) {
		t.Fatalf("prepared %v, want the claim once", p)
	}
	checkMetrics(t, n)

	n.Stop(syscall.SIGTERM)
	n.Start()
	agent.Eventually(t, "node Ready again", 30*time.Second, n.Ready)
	n.Running(t, pod.Name, 60*time.Second)
	// A restarted kubelet may not know the pod yet when exec reaches it.
	n.EventuallySees(t, pod.Name, "c", "echo DRA_DEVICE=$DRA_DEVICE", want, 60*time.Second)
	if !kubelet.Upstream {
		if _, err := os.Stat(filepath.Join(n.RootDir, "dra_manager_state")); err != nil {
			t.Errorf("the checkpoint: %v", err)
		}
	}

	if err := n.Admin.CoreV1().Pods(n.NS).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "the claim unprepared", 60*time.Second, func() error {
		if _, u := d.calls(); !slices.Contains(u, string(claim.UID)) {
			return fmt.Errorf("unprepared %v", u)
		}
		return nil
	})
	if p, _ := d.calls(); len(p) != 1 && !kubelet.Upstream {
		t.Errorf("prepared %v: a restart prepared the claim again", p)
	}
}

// healthServer is the driver's DRAResourceHealth v1 service: each stream
// gets the health of gpu-0 at once and whenever set changes it, and again
// every few seconds, as a driver that keeps watching its devices.
type healthServer struct {
	drahealthv1.UnimplementedDRAResourceHealthServer
	mu      sync.Mutex
	health  drahealthv1.HealthStatus
	message string
	changed chan struct{}
}

func newHealthServer() *healthServer {
	return &healthServer{health: drahealthv1.HealthStatus_HEALTHY, changed: make(chan struct{})}
}

func (h *healthServer) set(health drahealthv1.HealthStatus, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.health, h.message = health, message
	close(h.changed)
	h.changed = make(chan struct{})
}

func (h *healthServer) NodeWatchResources(_ *drahealthv1.NodeWatchResourcesRequest, s grpc.ServerStreamingServer[drahealthv1.NodeWatchResourcesResponse]) error {
	for {
		h.mu.Lock()
		resp := &drahealthv1.NodeWatchResourcesResponse{Devices: []*drahealthv1.DeviceHealth{{
			Device: &drahealthv1.DeviceIdentifier{PoolName: "pool", DeviceName: "gpu-0"},
			Health: h.health, Message: h.message, LastUpdatedTime: time.Now().Unix(), HealthCheckTimeoutSeconds: 60,
		}}}
		changed := h.changed
		h.mu.Unlock()
		if err := s.Send(resp); err != nil {
			return err
		}
		select {
		case <-s.Context().Done():
			return nil
		case <-changed:
		case <-time.After(5 * time.Second):
		}
	}
}

// TestDeviceHealth: with the driver's DRAResourceHealth service, the
// container's allocatedResourcesStatus shows its claim's device, by its
// CDI device ID, Healthy; once the driver reports it Unhealthy with a
// message, the pod's status shows that, message and all, as upstream's
// ResourceHealthStatus and ResourceHealthStatusMessage gates (beta, on).
func TestDeviceHealth(t *testing.T) {
	n := kubelet.NewAPIPods(t)
	n.Up(t, "drahealth")
	health := newHealthServer()
	startDriver(t, n, &driver{}, health)
	claim, pod := claimPod(t, n)
	n.Running(t, pod.Name, 2*time.Minute)

	id := v1.ResourceID(cdiKind + "=" + string(claim.UID))
	expect := func(what string, want v1.ResourceHealth) {
		t.Helper()
		agent.Eventually(t, what, 90*time.Second, func() error {
			cs, err := n.ContainerState(pod.Name, "c")
			if err != nil {
				return err
			}
			wantStatus := []v1.ResourceStatus{{Name: "claim:gpu", Resources: []v1.ResourceHealth{want}}}
			if !apiequality.Semantic.DeepEqual(cs.AllocatedResourcesStatus, wantStatus) {
				blob, _ := json.Marshal(cs.AllocatedResourcesStatus)
				return fmt.Errorf("allocatedResourcesStatus %s", blob)
			}
			return nil
		})
	}
	expect("the device Healthy", v1.ResourceHealth{ResourceID: id, Health: v1.ResourceHealthStatusHealthy})
	msg := "ECC error: uncorrectable, device needs reset"
	health.set(drahealthv1.HealthStatus_UNHEALTHY, msg)
	expect("the device Unhealthy", v1.ResourceHealth{ResourceID: id, Health: v1.ResourceHealthStatusUnhealthy, Message: &msg})
}

// startDriver serves d (and health, when not nil: the DRAResourceHealth v1
// service beside it) under ROOT/plugins, then its registration socket, and
// waits for the node to register it.
func startDriver(t *testing.T, n *agent.APIPods, d *driver, health *healthServer) {
	t.Helper()
	dir := filepath.Join(n.RootDir, "plugins", driverName)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	endpoint := filepath.Join(dir, "dra.sock")
	l, err := net.Listen("unix", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	drapb.RegisterDRAPluginServer(s, d)
	versions := []string{drapb.DRAPluginService}
	if health != nil {
		drahealthv1.RegisterDRAResourceHealthServer(s, health)
		versions = append(versions, drahealthv1.DRAResourceHealthService)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	reg := &fakeplugin.Plugin{Type: registerapi.DRAPlugin, Name: driverName, Endpoint: endpoint, Versions: versions}
	reg.Serve(t, filepath.Join(n.RootDir, "plugins_registry", driverName+"-reg.sock"), "")
	agent.Eventually(t, "the driver registered", 30*time.Second, func() error {
		if s := reg.Statuses(); len(s) == 0 || !s[len(s)-1].PluginRegistered {
			return fmt.Errorf("told %v", s)
		}
		return nil
	})
}

// claimPod creates a DeviceClass, a ResourceClaim and a pod whose
// container "c" uses it, then allocates the claim to the driver's device
// gpu-0 of pool "pool" and reserves it for the pod, as the scheduler
// would.
func claimPod(t *testing.T, n *agent.APIPods) (*resourceapi.ResourceClaim, *v1.Pod) {
	t.Helper()
	ctx := context.Background()
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: n.NS + "-gpu"}}
	if _, err := n.Admin.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Admin.ResourceV1().DeviceClasses().Delete(ctx, class.Name, metav1.DeleteOptions{}) })
	claim, err := n.Admin.ResourceV1().ResourceClaims(n.NS).Create(ctx, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimName := claim.Name
	pod := n.NewPod("gpu", nil, n.Busybox("c", "echo DRA_DEVICE=$DRA_DEVICE; exec sleep 3600"))
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claimName}}
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	pod = n.Create(t, pod)

	claim.Status = resourceapi.ResourceClaimStatus{
		Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: driverName, Pool: "pool", Device: "gpu-0"}}}},
		ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
	}
	if claim, err = n.Admin.ResourceV1().ResourceClaims(n.NS).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return claim, pod
}

// checkMetrics holds the node's dra_* metrics against what preparing the
// claim made: one successful NodePrepareResources call of the driver, the
// pod's PrepareResources operation, the claim in use for the driver and in
// all, as upstream's kubelet counts them.
func checkMetrics(t *testing.T, n *agent.APIPods) {
	t.Helper()
	url := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(n.NodeIP, strconv.Itoa(n.ReadOnly)))
	code, page := agent.Get(t, &http.Client{Timeout: 30 * time.Second}, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, page)
	}
	mfs := agent.ParseMetrics(t, url, page)
	find := func(family string, labels map[string]string) *dto.Metric {
		for _, m := range mfs[family].GetMetric() {
			found := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
					found++
				}
			}
			if found == len(labels) {
				return m
			}
		}
		t.Errorf("%s: no series %v among %v", family, labels, mfs[family].GetMetric())
		return nil
	}
	for _, driver := range []string{"<any>", driverName} {
		if m := find("dra_resource_claims_in_use", map[string]string{"driver_name": driver}); m != nil && m.GetGauge().GetValue() != 1 {
			t.Errorf("dra_resource_claims_in_use{driver_name=%q} = %v, want 1", driver, m.GetGauge().GetValue())
		}
	}
	if m := find("dra_grpc_operations_duration_seconds", map[string]string{"driver_name": driverName,
		"method_name": drapb.DRAPlugin_NodePrepareResources_FullMethodName, "grpc_status_code": "OK"}); m != nil && m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("NodePrepareResources observed %d times, want 1", m.GetHistogram().GetSampleCount())
	}
	if m := find("dra_operations_duration_seconds", map[string]string{"operation_name": "PrepareResources", "is_error": "false"}); m != nil && m.GetHistogram().GetSampleCount() < 1 {
		t.Error("no PrepareResources operation observed")
	}
}
