package podruntime

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/testutil"
)

// sandboxStatusFailer fails the status call that follows each new sandbox.
type sandboxStatusFailer struct {
	*fakecri.Runtime
	mu   sync.Mutex
	fail bool
}

func (r *sandboxStatusFailer) RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	resp, err := r.Runtime.RunPodSandbox(ctx, in, opts...)
	r.mu.Lock()
	r.fail = err == nil
	r.mu.Unlock()
	return resp, err
}

func (r *sandboxStatusFailer) PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, opts ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	fail := r.fail
	r.fail = false
	r.mu.Unlock()
	if fail {
		return nil, status.Error(codes.Unavailable, "runtime gone")
	}
	return r.Runtime.PodSandboxStatus(ctx, in, opts...)
}

// TestSyncPodEvents checks the events of the sandbox's configuration and
// creation that the sync pass emits: MissingClusterDNS on the Node and
// the pod and DNSConfigForming as upstream's GetPodDNS, then
// FailedPodSandBoxStatus when the new sandbox's status cannot be read, as
// upstream's SyncPod.
func TestSyncPodEvents(t *testing.T) {
	const image = "registry.test/app:1"
	cri := &sandboxStatusFailer{Runtime: fakecri.New()}
	cri.AddImage(image)
	rec := &record.FakeRecorder{Events: make(chan string, 100), IncludeObject: true}
	rt := &Runtime{RT: cri, Img: cri, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: "192.0.2.1",
		NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second, Recorder: rec}}
	grace := int64(1)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node", RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			DNSPolicy: v1.DNSClusterFirst, DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"192.0.2.10", "192.0.2.11", "192.0.2.12"}},
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent}}}}
	res := rt.SyncNewPod(context.Background(), pod, nil, nil, nil)
	if res.Err == nil {
		t.Fatal("sync succeeded although the sandbox's status failed")
	}
	const node, onPod = " involvedObject{kind=Node,apiVersion=}", " involvedObject{kind=Pod,apiVersion=v1}"
	const missing = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	got := testutil.Events(rec)
	for _, want := range []string{
		"Warning MissingClusterDNS " + missing + node,
		`Warning MissingClusterDNS pod: "web_default(uid-web)". ` + missing + onPod,
		// Without resolvConf, Default's nameserver is the local one: four.
		"Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 127.0.0.1 192.0.2.10 192.0.2.11" + onPod,
		"Warning FailedPodSandBoxStatus Unable to get pod sandbox status: rpc error: code = Unavailable desc = runtime gone" + onPod,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no event %q in %q", want, got)
		}
	}

	// The next pass makes the sandbox and starts the container; one that
	// starts nothing says nothing of the DNS, as upstream's.
	if res := rt.SyncPod(context.Background(), pod, nil, nil, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := testutil.Events(rec); !slices.Contains(got, "Warning MissingClusterDNS "+missing+node) {
		t.Errorf("no MissingClusterDNS in %q", got)
	}
	if res := rt.SyncPod(context.Background(), pod, nil, nil, nil); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := testutil.Events(rec); len(got) != 0 {
		t.Errorf("events of a pass that starts nothing: %q", got)
	}
}
