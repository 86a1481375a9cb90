package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/actorlet/actorlet/test/agent"
)

// TestMirrorPodStatusIsRestored: a static pod's mirror pod whose status
// someone else overwrites (pods/status, as the admin: phase Pending, Ready
// and ContainersReady False) gets the node's status back, and no write
// loop follows. actorlet reacts to the mirror pod's new version; its
// periodic mirror check (every nodeStatusUpdateFrequency, here 1 min)
// cannot be what restores it in time. Upstream's status manager
// reconciles at its next 10 s sync: CLUSTER_KUBELET runs the test against
// it with a bound of 3x that.
func TestMirrorPodStatusIsRestored(t *testing.T) {
	cfg := "nodeStatusUpdateFrequency: 1m\n"
	within := 10 * time.Second
	if kubelet.Upstream {
		cfg += agent.UpstreamKubeletConfig
		within = 30 * time.Second
	}
	// APIPods, for its cleanup of upstream's bind mount of its root
	// directory.
	n := &clusterNode{agent.NewAPIPods(t, kubelet.Binary, withConfig(cfg)).ClusterNode}
	n.Start()
	eventually(t, "node Ready", 30*time.Second, n.Ready)
	n.WriteManifest("restored.yaml", agent.Manifest("restored", agent.SleepSpec("c", n.Env.BusyboxImage, 1)))
	name := "restored-" + n.Name
	var containerID string
	// restored is a check for eventually: nil once the mirror pod shows
	// the static pod Running and Ready (with the container seen first).
	restored := func() error {
		p, err := n.get("default", name)
		if err != nil {
			return err
		}
		cs := p.Status.ContainerStatuses
		if p.Status.Phase != v1.PodRunning || !agent.PodReady(p) || len(cs) != 1 || cs[0].State.Running == nil {
			return fmt.Errorf("phase %s, ready %v, containers %+v", p.Status.Phase, agent.PodReady(p), cs)
		}
		if containerID == "" {
			containerID = cs[0].ContainerID
		} else if cs[0].ContainerID != containerID || cs[0].RestartCount != 0 {
			return fmt.Errorf("container %s (restarts %d), want %s not restarted", cs[0].ContainerID, cs[0].RestartCount, containerID)
		}
		return nil
	}
	eventually(t, "mirror pod Running and Ready", 60*time.Second, restored)

	pods := n.Admin.CoreV1().Pods("default")
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = v1.PodPending
		for i, c := range p.Status.Conditions {
			if c.Type == v1.PodReady || c.Type == v1.ContainersReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].Reason = v1.ConditionFalse, "OverwrittenByTest"
			}
		}
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("overwrite the mirror pod's status: %v", err)
	}
	overwritten := time.Now()
	eventually(t, "the mirror pod's status restored", within, restored)
	t.Logf("the mirror pod's status restored %v after it was overwritten", time.Since(overwritten).Round(10*time.Millisecond))

	// The restored status stays, and nothing keeps writing it.
	p, err := n.get("default", name)
	if err != nil {
		t.Fatal(err)
	}
	agent.Consistently(t, "the mirror pod unchanged", 3*time.Second, 500*time.Millisecond, func() error {
		cur, err := n.get("default", name)
		if err != nil {
			return err
		}
		if cur.ResourceVersion != p.ResourceVersion {
			return fmt.Errorf("resourceVersion %s, then %s: written again (phase %s, ready %v)", p.ResourceVersion, cur.ResourceVersion, cur.Status.Phase, agent.PodReady(cur))
		}
		return nil
	})
}
