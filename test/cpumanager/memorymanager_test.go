package cpumanager

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/test/agent"
)

// TestMemoryManagerStatic runs the node with memoryManagerPolicy Static on
// this machine's one NUMA node, reservedMemory matching the default hard
// eviction threshold (memory.available 100Mi): a Guaranteed pod's
// container is created with memory node 0 (its spec, its cgroup's
// cpuset.mems), a BestEffort pod's with none,
// the state file (read with our reader, whichever kubelet wrote it) keeps
// the assignment across a restart, and drops it once the pod is gone.
func TestMemoryManagerStatic(t *testing.T) {
	n := kubelet.NewAPIPods(t, agent.WithConfig(`memoryManagerPolicy: Static
reservedMemory:
- numaNode: 0
  limits:
    memory: 100Mi
`))
	n.Up(t, "memorymanager")

	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")}
	c := n.Sleeper("c")
	c.Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	g := n.Run(t, n.NewPod("guaranteed", nil, c))
	be := n.Run(t, n.NewPod("besteffort", nil, n.Sleeper("c")))

	// mems checks the memory nodes a pod's container was created with
	// (its OCI spec) and, when it has some, its cgroup's cpuset.mems (on
	// one NUMA node, a container without any has the parent's "0" too).
	mems := func(t *testing.T, p *v1.Pod, want string) {
		t.Helper()
		agent.Eventually(t, fmt.Sprintf("%s's container with cpuset.mems %q", p.Name, want), 15*time.Second, func() error {
			st, err := n.ContainerState(p.Name, "c")
			if err != nil {
				return err
			}
			if st == nil || st.ContainerID == "" {
				return fmt.Errorf("no container yet")
			}
			id := strings.TrimPrefix(st.ContainerID, "containerd://")
			spec, err := agent.ContainerSpecCPUSetMems(n.RT, id)
			if err != nil {
				return err
			}
			if spec != want {
				return fmt.Errorf("mems %q in its spec", spec)
			}
			if want == "" {
				return nil
			}
			host, err := agent.ContainerCPUSetMems(n.RT, id)
			if err != nil {
				return err
			}
			if host != want {
				return fmt.Errorf("cpuset.mems %q on the host", host)
			}
			return nil
		})
	}
	// state checks the state file: the one pod holding memory, its
	// container's block on node 0.
	state := func(t *testing.T, g *v1.Pod) {
		t.Helper()
		agent.Eventually(t, "the memory manager's state file", 15*time.Second, func() error {
			st, err := memorymanager.Load(n.RootDir)
			if err != nil || st == nil {
				return fmt.Errorf("%s: %v", memorymanager.StateFile, err)
			}
			blocks := st.Entries[string(g.UID)]["c"]
			if st.Policy != memorymanager.PolicyStatic || len(st.Machine) != 1 {
				return fmt.Errorf("policy %q, %d NUMA nodes", st.Policy, len(st.Machine))
			}
			if len(st.Entries) != 1 {
				return fmt.Errorf("entries %v, want %s's alone", st.Entries, g.Name)
			}
			if len(blocks) != 1 || blocks[0].Type != v1.ResourceMemory || blocks[0].Size != 64<<20 || fmt.Sprint(blocks[0].NUMAAffinity) != "[0]" {
				return fmt.Errorf("guaranteed pod's blocks %+v", blocks)
			}
			if r := st.Machine[0].MemoryMap[v1.ResourceMemory]; r.Reserved != 64<<20 || r.SystemReserved != 100<<20 {
				return fmt.Errorf("node 0 memory %+v", *r)
			}
			return nil
		})
	}

	t.Run("pinned to NUMA node 0", func(t *testing.T) {
		mems(t, g, "0")
		mems(t, be, "")
		state(t, g)
	})

	t.Run("the assignment survives a restart", func(t *testing.T) {
		n.Stop(syscall.SIGTERM)
		n.Start()
		agent.Eventually(t, "node Ready again", 30*time.Second, n.Ready)
		state(t, g)
		mems(t, g, "0")
	})

	// Released: here once the pod is gone, upstream's at the latest when
	// the next pod is admitted (its removeStaleState).
	t.Run("released once the pod is gone", func(t *testing.T) {
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), g.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		agent.Eventually(t, "the pod gone", 30*time.Second, func() error {
			if _, err := n.Get(g.Name); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		c := n.Sleeper("c")
		c.Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
		next := n.Run(t, n.NewPod("next", nil, c))
		state(t, next)
		mems(t, next, "0")
	})
}
