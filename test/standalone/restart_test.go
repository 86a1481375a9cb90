package standalone

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/faults/criproxy"
)

// TestRestartWithFailingSandboxListing: actorlet restarts while a pod whose
// manifest went meanwhile still runs, and the runtime fails every
// ListPodSandbox for a while (busy, restarting). The orphan must not be
// taken for a gone pod whose directory is left: its pod directory and its
// emptyDir stay, its container runs, until the runtime can be listed
// again; then it is terminated, and only then cleaned up. The volume
// manager looks for orphaned directories every syncFrequency (2 s here),
// many times within the failure window.
func TestRestartWithFailingSandboxListing(t *testing.T) {
	n := &node{agent.NewNode(t, binary, agent.NamePrefix("sa-"), agent.WithConfig("syncFrequency: 2s\n"))}
	proxy := criproxy.Start(t, n.RuntimeEndpoint)
	n.RuntimeEndpoint = proxy.Endpoint
	n.Start()
	n.WriteManifest("orphan.yaml", manifest("orphan", fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  volumes:
  - name: scratch
    emptyDir: {}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo kept > /scratch/file; exec sleep 3600"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
`, n.busybox())))
	pod := n.Running("orphan", 60*time.Second)
	uid := string(pod.UID)
	podDir := filepath.Join(n.RootDir, "pods", uid)
	file := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch", "file")
	n.Eventually("the container wrote to its emptyDir", 30*time.Second, func() error {
		_, err := os.Stat(file)
		return err
	})
	running := func() int {
		resp, err := n.RT.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{podruntime.LabelPodUID: uid}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Containers)
	}

	n.Stop(syscall.SIGKILL)
	n.RemoveManifest("orphan.yaml")
	failing := proxy.Add(criproxy.Rule{Methods: []string{"ListPodSandbox"}, Action: criproxy.Fail,
		Code: codes.Unavailable, Message: "injected: the runtime is busy"})
	n.Start()
	// A window of failures longer than several volume-manager periods.
	const window = 15 * time.Second
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("the orphan's emptyDir went while the runtime could not be listed (%d ListPodSandbox refused): %v", proxy.Hits(failing), err)
		}
		if c := running(); c != 1 {
			t.Fatalf("%d running containers of the orphan while the runtime could not be listed, want 1", c)
		}
	}
	if proxy.Hits(failing) == 0 {
		t.Fatal("no ListPodSandbox was refused: the test tested nothing")
	}
	proxy.Remove(failing)
	// Its directory may go only once nothing of it runs.
	n.Eventually("the orphan is terminated and its directory removed", 90*time.Second, func() error {
		c := running()
		_, err := os.Stat(podDir)
		switch {
		case os.IsNotExist(err) && c > 0:
			t.Fatalf("the orphan's directory went while %d of its containers still ran", c)
		case c > 0:
			return fmt.Errorf("%d containers still run", c)
		case err == nil:
			return fmt.Errorf("its directory %s is still there", podDir)
		}
		return nil
	})
}
