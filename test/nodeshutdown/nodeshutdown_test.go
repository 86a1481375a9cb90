// Package nodeshutdown runs the node as the environment's node with a
// shutdown grace period, against a logind stand-in on a private
// dbus-daemon (internal/logind/fakelogind; DBUS_SYSTEM_BUS_ADDRESS points
// the agent at it), and has the stand-in announce a shutdown and then its
// cancellation (issue #37). Upstream kubelet v1.37.2 is the reference for
// every expectation; NODESHUTDOWN_KUBELET runs it in actorlet's place.
package nodeshutdown

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/logind/fakelogind"
	"github.com/actorlet/actorlet/test/agent"
)

var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "NODESHUTDOWN_KUBELET") }

const (
	// The normal pods' group has 4 s, the critical pods' 6 s.
	config = "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 6s\n"
	// within bounds each wait: a node status update, a controller-manager
	// pass, the groups' grace periods; 3x slack.
	within = 60 * time.Second

	message = "Pod was terminated in response to imminent node shutdown."
)

// terminated returns the pod once the API shows it Failed as upstream's
// shutdown manager marks it, with its container's end.
func terminated(n *agent.APIPods, name string) (time.Time, error) {
	p, err := n.Get(name)
	if err != nil {
		return time.Time{}, err
	}
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Terminated" || p.Status.Message != message {
		return time.Time{}, fmt.Errorf("%s: phase %s reason %q message %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	found := false
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			found = c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet && c.Message == message
			if !found {
				return time.Time{}, fmt.Errorf("%s: DisruptionTarget %+v", name, c)
			}
		}
	}
	if !found {
		return time.Time{}, fmt.Errorf("%s: no DisruptionTarget condition", name)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		return time.Time{}, fmt.Errorf("%s: container not terminated: %+v", name, p.Status.ContainerStatuses)
	}
	return p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time, nil
}

// ready returns nil once the Node's Ready condition has status, and, when
// false, says the node is shutting down.
func ready(n *agent.APIPods, status v1.ConditionStatus) func() error {
	return func() error {
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type != v1.NodeReady {
				continue
			}
			if c.Status != status || (status == v1.ConditionFalse && (c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "node is shutting down"))) {
				return fmt.Errorf("Ready=%s (%s: %s), want %s", c.Status, c.Reason, c.Message, status)
			}
			return nil
		}
		return fmt.Errorf("no Ready condition")
	}
}

// TestShutdown: the delay lock taken at the start; on PrepareForShutdown
// (true) the node not Ready and tainted by the controller-manager, a new
// pod refused, the normal pod terminated first within its own grace (its
// container ignores SIGTERM), the critical one next within its group's,
// both Failed as upstream marks them, the lock released; on
// PrepareForShutdown(false) the node Ready again and a new lock taken.
func TestShutdown(t *testing.T) {
	// logind's delay is already more than the 10 s asked: nothing is
	// written to /etc/systemd (internal/logind's tests cover raising it).
	fake := fakelogind.Start(t, time.Minute)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", fake.Address)
	// WithConfig, not Configure, which would drop the configuration
	// upstream's kubelet needs here.
	n := kubelet.NewAPIPods(t, agent.WithConfig(config))
	n.Up(t, "shutdown")
	agent.Eventually(t, "the delay lock taken", within, func() error {
		if l := fake.Locks(); len(l) != 1 || l[0].Released || l[0].Mode != "delay" || l[0].What != "shutdown" || l[0].Who != "kubelet" {
			return fmt.Errorf("locks %+v", l)
		}
		return nil
	})

	// PID 1 ignores SIGTERM: each pod runs out its grace.
	normal := n.NewPod("normal", nil, n.Sleeper("c"))
	normal.Spec.TerminationGracePeriodSeconds = new(int64(2))
	critical := n.NewPod("critical", nil, n.Sleeper("c"))
	critical.Spec.TerminationGracePeriodSeconds = new(int64(300))
	critical.Spec.PriorityClassName = "system-node-critical"
	n.Run(t, normal)
	n.Run(t, critical)

	t.Log("PrepareForShutdown(true)")
	start := time.Now().Truncate(time.Second)
	if err := fake.PrepareForShutdown(true); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "the node not Ready", within, ready(n, v1.ConditionFalse))
	late := n.NewPod("late", nil, n.Sleeper("c"))
	n.Create(t, late)
	agent.Eventually(t, "a new pod refused", within, func() error {
		p, err := n.Get(late.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != "NodeShutdown" || p.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
			return fmt.Errorf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return nil
	})
	var normalEnd, criticalEnd time.Time
	agent.Eventually(t, "both pods terminated", within, func() (err error) {
		if normalEnd, err = terminated(n, normal.Name); err != nil {
			return err
		}
		criticalEnd, err = terminated(n, critical.Name)
		return err
	})
	// Times in the API are whole seconds.
	if d := normalEnd.Sub(start); d < time.Second {
		t.Errorf("the normal pod ended %v after the signal, within less than its grace of 2 s", d)
	}
	if d := criticalEnd.Sub(normalEnd); d < 5*time.Second {
		t.Errorf("the critical pod ended %v after the normal one, want it started after and given its group's 6 s", d)
	}
	agent.Eventually(t, "the delay lock released", within, func() error {
		if l := fake.Locks(); len(l) != 1 || !l[0].Released {
			return fmt.Errorf("locks %+v", l)
		}
		return nil
	})
	agent.Eventually(t, "the not-ready taint", within, func() error {
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		for _, tt := range node.Spec.Taints {
			if tt.Key == v1.TaintNodeNotReady {
				return nil
			}
		}
		return fmt.Errorf("taints %v", node.Spec.Taints)
	})

	t.Log("PrepareForShutdown(false)")
	if err := fake.PrepareForShutdown(false); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "the node Ready again", within, ready(n, v1.ConditionTrue))
	agent.Eventually(t, "a new delay lock", within, func() error {
		if l := fake.Locks(); len(l) != 2 || l[1].Released {
			return fmt.Errorf("locks %+v", l)
		}
		return nil
	})
}
