package errorpaths

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// TestSyncWithoutStatus fails the listing that starts a running pod's
// pass: the pass reports the error and, as upstream's pod worker when it
// cannot determine the pod's status, a FailedSync event.
func TestSyncWithoutStatus(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	pod, sync := f.nextPass(t, true)
	f.cri.Inject("ListPodSandbox", 1, fakecri.Fault{Err: status.Error(codes.Unavailable, "connection refused")})
	res := sync(context.Background(), pod, nil)
	wantErr(t, res.Err, "connection refused")
	wantEvents(t, f.takeEvents(), []string{"Warning FailedSync error determining status: list sandboxes of pod default/web (uid-web)"})
}

// TestNetworkNotReady: a pod on the pod network waits for the runtime's
// network, with upstream's NetworkNotReady event, and runs once it is
// ready; a host-network pod does not wait.
func TestNetworkNotReady(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	f.cri.SetNetworkNotReady("NetworkPluginNotReady", "cni plugin not initialized")
	host := newPod()
	host.UID, host.Name, host.Spec.HostNetwork = "uid-host", "host", true
	if res := f.rt.SyncNewPod(context.Background(), host, nil, nil, nil); res.Err != nil {
		t.Fatalf("host-network pod: %v", res.Err)
	}
	f.takeEvents()
	pod, sync := f.nextPass(t, false)
	res := sync(context.Background(), pod, nil)
	wantErr(t, res.Err, "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized")
	wantEvents(t, f.takeEvents(), []string{"Warning NetworkNotReady network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"})
	if n := len(f.cri.Sandboxes()); n != 1 {
		t.Fatalf("%d sandboxes, want the host-network pod's alone", n)
	}
}
