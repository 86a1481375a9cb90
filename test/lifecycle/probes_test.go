package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/test/agent"
)

// execProbe is an exec probe of cat FILE every second, deciding after
// failures failures in a row.
func execProbe(file string, failures int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", file}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failures}
}

func httpProbe(path string, port int) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
}

func tcpProbe(port int) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
}

// httpd serves /www/healthz on port 8080.
const httpd = "mkdir -p /www && echo ok > /www/healthz && exec busybox httpd -f -p 8080 -h /www"

// condition is the pod's condition t, "" when it has none.
func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// waitPod waits until check passes on the pod as the API shows it.
func (n *lifeNode) waitPod(t *testing.T, name, what string, within time.Duration, check func(p *v1.Pod) error) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, name+": "+what, within, func() error {
		p, err := n.Get(name)
		if err != nil {
			return err
		}
		pod = p
		return check(p)
	})
	return pod
}

// readiness checks the pod's Ready and ContainersReady conditions and its
// first container's ready and restart count (-1: any).
func readiness(ready v1.ConditionStatus, restarts int32) func(p *v1.Pod) error {
	return func(p *v1.Pod) error {
		if len(p.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("no container status")
		}
		cs := p.Status.ContainerStatuses[0]
		got := fmt.Sprintf("Ready %s, ContainersReady %s, ready %v, restarts %d", condition(p, v1.PodReady), condition(p, v1.ContainersReady), cs.Ready, cs.RestartCount)
		if condition(p, v1.PodReady) != ready || condition(p, v1.ContainersReady) != ready || cs.Ready != (ready == v1.ConditionTrue) ||
			restarts >= 0 && cs.RestartCount != restarts {
			return fmt.Errorf("%s (state %+v)", got, cs.State)
		}
		return nil
	}
}

func restarted(p *v1.Pod) error {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 1 {
		return fmt.Errorf("not restarted: %+v", p.Status.ContainerStatuses)
	}
	return nil
}

// stays checks that the pod keeps passing check for d.
func (n *lifeNode) stays(t *testing.T, name, what string, d time.Duration, check func(p *v1.Pod) error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		p, err := n.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(p); err != nil {
			t.Fatalf("%s: not %s: %v", name, what, err)
		}
	}
}

// TestProbes runs each probe kind, failing and succeeding, with exec,
// httpGet and tcpSocket actions against busybox, and watches the pod's
// conditions, restart counts and events, as upstream's prober drives them.
func TestProbes(t *testing.T) {
	n := newLifeNode(t, "probes")

	t.Run("exec liveness failing restarts the container", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("c")
		c.LivenessProbe = execProbe("/tmp/health", 1)
		n.Create(t, n.NewPod("live-fail", nil, c))
		n.waitPod(t, "live-fail", "restarted", 60*time.Second, restarted)
		n.Event(t, "live-fail", "Unhealthy", "Liveness probe failed:", "/tmp/health")
		n.Event(t, "live-fail", "Killing", "Container c failed liveness probe, will be restarted")
		// The run is counted at /metrics/probes, as upstream's, read
		// through the API server's node proxy.
		pod, err := n.Get("live-fail")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`prober_probe_total{container="c",namespace=%q,pod="live-fail",pod_uid=%q,probe_type="Liveness",result="failed"}`, n.NS, pod.UID)
		agent.Eventually(t, "the liveness failure at /metrics/probes", 10*time.Second, func() error {
			body, err := n.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.Name, "proxy/metrics/probes").DoRaw(context.Background())
			if err != nil {
				return err
			}
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("no %s in %d bytes", want, len(body))
			}
			return nil
		})
	})

	t.Run("exec liveness succeeding keeps the container", func(t *testing.T) {
		t.Parallel()
		c := n.Busybox("c", "touch /tmp/health && exec sleep 3600")
		c.LivenessProbe = execProbe("/tmp/health", 1)
		n.Run(t, n.NewPod("live-ok", nil, c))
		n.stays(t, "live-ok", "ready without restarts", 4*time.Second, readiness(v1.ConditionTrue, 0))
	})

	t.Run("exec readiness follows the probe both ways", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("c")
		c.ReadinessProbe = execProbe("/tmp/ready", 1)
		n.Run(t, n.NewPod("ready-exec", nil, c))
		n.stays(t, "ready-exec", "not ready", 2*time.Second, readiness(v1.ConditionFalse, 0))
		n.Sh(t, "ready-exec", "c", "touch /tmp/ready")
		n.waitPod(t, "ready-exec", "ready", 10*time.Second, readiness(v1.ConditionTrue, 0))
		n.Sh(t, "ready-exec", "c", "rm /tmp/ready")
		n.waitPod(t, "ready-exec", "not ready again", 10*time.Second, readiness(v1.ConditionFalse, 0))
		n.Event(t, "ready-exec", "Unhealthy", "Readiness probe failed:")
	})

	t.Run("httpGet readiness succeeds, httpGet liveness on a missing path restarts", func(t *testing.T) {
		t.Parallel()
		c := n.Busybox("c", httpd)
		c.ReadinessProbe = httpProbe("/healthz", 8080)
		n.Create(t, n.NewPod("http-ready", nil, c))
		n.waitPod(t, "http-ready", "ready", 30*time.Second, readiness(v1.ConditionTrue, 0))

		l := n.Busybox("c", httpd)
		l.LivenessProbe = httpProbe("/missing", 8080)
		n.Create(t, n.NewPod("http-live", nil, l))
		n.waitPod(t, "http-live", "restarted", 60*time.Second, restarted)
		n.Event(t, "http-live", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404")
	})

	t.Run("tcpSocket readiness on an open port, liveness on a closed one", func(t *testing.T) {
		t.Parallel()
		c := n.Busybox("c", httpd)
		c.ReadinessProbe = tcpProbe(8080)
		c.LivenessProbe = tcpProbe(8081)
		c.LivenessProbe.InitialDelaySeconds = 3
		n.Create(t, n.NewPod("tcp", nil, c))
		n.waitPod(t, "tcp", "ready", 30*time.Second, readiness(v1.ConditionTrue, 0))
		n.waitPod(t, "tcp", "restarted", 60*time.Second, restarted)
		n.Event(t, "tcp", "Unhealthy", "Liveness probe failed:", "8081")
	})

	t.Run("a startup probe holds liveness back until it succeeds", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("c")
		c.StartupProbe = execProbe("/tmp/started", 60)
		c.LivenessProbe = execProbe("/tmp/health", 1)
		c.ReadinessProbe = execProbe("/tmp/started", 1)
		n.Run(t, n.NewPod("startup-holds", nil, c))
		notStarted := func(p *v1.Pod) error {
			if err := readiness(v1.ConditionFalse, 0)(p); err != nil {
				return err
			}
			if s := p.Status.ContainerStatuses[0].Started; s == nil || *s {
				return fmt.Errorf("started %v", s)
			}
			return nil
		}
		n.stays(t, "startup-holds", "unstarted, unready and not restarted", 4*time.Second, notStarted)
		n.Sh(t, "startup-holds", "c", "touch /tmp/started")
		// Started and ready, then its liveness probe runs, fails, and
		// restarts it.
		n.waitPod(t, "startup-holds", "restarted once started", 30*time.Second, restarted)
		n.Event(t, "startup-holds", "Killing", "Container c failed liveness probe, will be restarted")
	})

	t.Run("a startup probe failing restarts the container", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("c")
		c.StartupProbe = execProbe("/tmp/started", 2)
		n.Create(t, n.NewPod("startup-fails", nil, c))
		n.waitPod(t, "startup-fails", "restarted", 60*time.Second, restarted)
		n.Event(t, "startup-fails", "Unhealthy", "Startup probe failed:")
		n.Event(t, "startup-fails", "Killing", "Container c failed startup probe, will be restarted")
	})

	t.Run("readiness goes on while the pod terminates, liveness stops", func(t *testing.T) {
		t.Parallel()
		// On SIGTERM the container turns unready (and would fail its
		// liveness probe), then shuts down for a while before it exits:
		// as upstream's, its readiness probe keeps running during the
		// graceful shutdown, so that the API shows it not ready while the
		// pod terminates (what EndpointSlices' serving condition reads);
		// its liveness probe stopped at the deletion and restarts nothing.
		c := n.Busybox("c", "touch /tmp/ready /tmp/alive; trap 'rm -f /tmp/ready /tmp/alive; sleep 12; exit 0' TERM; sleep 3600 & wait")
		c.ReadinessProbe = execProbe("/tmp/ready", 1)
		c.LivenessProbe = execProbe("/tmp/alive", 1)
		n.Create(t, withGrace(n.NewPod("ready-terminating", nil, c), 60))
		n.waitPod(t, "ready-terminating", "ready", 60*time.Second, readiness(v1.ConditionTrue, 0))
		deleted := n.deletePod(t, "ready-terminating")
		n.waitPod(t, "ready-terminating", "not ready while terminating", 9*time.Second, func(p *v1.Pod) error {
			if p.DeletionTimestamp == nil {
				return fmt.Errorf("not being deleted yet")
			}
			if err := readiness(v1.ConditionFalse, 0)(p); err != nil {
				return err
			}
			if cs := p.Status.ContainerStatuses[0]; cs.State.Running == nil {
				return fmt.Errorf("container no longer running: %+v", cs.State)
			}
			return nil
		})
		t.Logf("not ready %v after the deletion, its container still running", time.Since(deleted).Round(100*time.Millisecond))
		n.gone(t, "ready-terminating", 40*time.Second)
		evs, err := n.Events("ready-terminating")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if strings.Contains(ev.Message, "failed liveness probe") {
				t.Errorf("a terminating pod's container was killed for its liveness probe: %s: %s", ev.Reason, ev.Message)
			}
		}
	})

	t.Run("readinessGates hold Ready until the pod's condition is set", func(t *testing.T) {
		t.Parallel()
		const gate = "example.com/feature-1"
		p := n.NewPod("gated", nil, n.Sleeper("c"))
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
		n.Run(t, p)
		gated := func(ready v1.ConditionStatus) func(p *v1.Pod) error {
			return func(p *v1.Pod) error {
				if c, r := condition(p, v1.ContainersReady), condition(p, v1.PodReady); c != v1.ConditionTrue || r != ready {
					return fmt.Errorf("ContainersReady %s, Ready %s", c, r)
				}
				return nil
			}
		}
		n.waitPod(t, "gated", "containers ready, the pod not", 10*time.Second, gated(v1.ConditionFalse))
		set := func(status v1.ConditionStatus) {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status)
			if _, err := n.Admin.CoreV1().Pods(n.NS).Patch(context.Background(), "gated", types.StrategicMergePatchType,
				[]byte(patch), metav1.PatchOptions{}, "status"); err != nil {
				t.Fatal(err)
			}
		}
		set(v1.ConditionTrue)
		n.waitPod(t, "gated", "ready", 15*time.Second, gated(v1.ConditionTrue))
		set(v1.ConditionFalse)
		n.waitPod(t, "gated", "not ready again", 15*time.Second, gated(v1.ConditionFalse))
	})
}
