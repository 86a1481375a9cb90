package podruntime

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// envRecorder is the fake runtime, recording the environment each created
// container is given, by the container's name.
type envRecorder struct {
	*fakecri.Runtime
	mu   sync.Mutex
	envs map[string]map[string]string
}

func (r *envRecorder) CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	env := map[string]string{}
	for _, kv := range in.GetConfig().GetEnvs() {
		env[kv.Key] = string(kv.Value)
	}
	r.mu.Lock()
	r.envs[in.GetConfig().GetMetadata().GetName()] = env
	r.mu.Unlock()
	return r.Runtime.CreateContainer(ctx, in, opts...)
}

// TestHostNetworkPodIPs: a host-network pod's status.podIP(s) and its
// containers' downward-API variables for them are the node's IP, as
// upstream's generateAPIPodStatus; a pod on the pod network keeps its
// sandbox's; without a node IP there is nothing to show.
func TestHostNetworkPodIPs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		nodeIP      string
		want        string // podIP, "sandbox" for the sandbox's
	}{
		{name: "host network", hostNetwork: true, nodeIP: "192.0.2.1", want: "192.0.2.1"},
		{name: "host network, no node IP", hostNetwork: true, want: ""},
		{name: "pod network", nodeIP: "192.0.2.1", want: "sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cri := &envRecorder{Runtime: fakecri.New(), envs: map[string]map[string]string{}}
			cri.AddImage("registry.test/app:1")
			rt := &Runtime{RT: cri, Img: cri.Runtime, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: tc.nodeIP,
				NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second}}
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
				Spec: v1.PodSpec{NodeName: "node", HostNetwork: tc.hostNetwork, Containers: []v1.Container{{
					Name: "app", Image: "registry.test/app:1", ImagePullPolicy: v1.PullIfNotPresent,
					Env: []v1.EnvVar{
						{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
						{Name: "POD_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
					},
				}}},
			}
			res := rt.SyncPod(context.Background(), pod, nil, nil, nil)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			want := tc.want
			if want == "sandbox" {
				want = firstIP(res.Status.IPs)
				if want == "" {
					t.Fatal("the pod-network sandbox has no IP")
				}
			}
			api := res.APIStatus
			if api.PodIP != want || (want != "" && (len(api.PodIPs) != 1 || api.PodIPs[0].IP != want)) || (want == "" && len(api.PodIPs) != 0) {
				t.Errorf("podIP %q podIPs %v, want %q", api.PodIP, api.PodIPs, want)
			}
			env := cri.envs["app"]
			if env["POD_IP"] != want || env["POD_IPS"] != want {
				t.Errorf("POD_IP %q POD_IPS %q, want %q", env["POD_IP"], env["POD_IPS"], want)
			}
		})
	}
}
