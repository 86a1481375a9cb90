package lifecycle

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/test/agent"
)

// callRecorder is an HTTP server of the test on the host's address on the
// pod network, which pods call from their hooks and signal traps: it
// records when each path was first requested, as seen from outside the
// pods.
type callRecorder struct {
	host string
	port int
	mu   sync.Mutex
	hits map[string]time.Time
}

func newCallRecorder(t *testing.T, ip string) *callRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on the pod network: %v", err)
	}
	r := &callRecorder{host: ip, port: ln.Addr().(*net.TCPAddr).Port, hits: map[string]time.Time{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if _, ok := r.hits[req.URL.Path]; !ok {
			r.hits[req.URL.Path] = time.Now()
		}
		r.mu.Unlock()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// wget is a shell command that calls path on the recorder, bounded in
// time. (busybox 1.36's wget crashes with -T, and without it may hang.)
func (r *callRecorder) wget(path string) string {
	// Tried three times: under load one connection to the test's server
	// has been seen to time out.
	return fmt.Sprintf(`for i in 1 2 3; do printf "GET %s HTTP/1.0\r\n\r\n" | nc -w 3 %s %d >/dev/null 2>&1 && break; done`, path, r.host, r.port)
}

// wait waits until path was called and returns when.
func (r *callRecorder) wait(t *testing.T, path string, within time.Duration) time.Time {
	t.Helper()
	var at time.Time
	agent.Eventually(t, "a call of "+path, within, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		var ok bool
		if at, ok = r.hits[path]; !ok {
			return fmt.Errorf("calls so far: %v", r.hits)
		}
		return nil
	})
	return at
}

// trapper is a busybox container whose shell calls path on SIGTERM, waits
// linger, and exits: its SIGTERM is seen from outside. Once its trap is set
// it calls path+"/ready": until then its shell, PID 1 of the container,
// ignores SIGTERM, and a pod deleted right after it shows Running (under
// load) would wait out its grace period without a call.
func (n *lifeNode) trapper(r *callRecorder, name, path string, linger time.Duration) v1.Container {
	return n.Busybox(name, fmt.Sprintf("trap '%s; sleep %.1f; exit 0' TERM; %s; while true; do sleep 0.1; done",
		r.wget(path), linger.Seconds(), r.wget(path+readySuffix)))
}

// readySuffix is the path a trapper calls once its trap is set.
const readySuffix = "/ready"

// trapsSet waits until each trapper of paths has set its trap.
func (r *callRecorder) trapsSet(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		r.wait(t, p+readySuffix, 30*time.Second)
	}
}

func (n *lifeNode) deletePod(t *testing.T, name string) time.Time {
	t.Helper()
	at := time.Now()
	if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	return at
}

func withGrace(p *v1.Pod, seconds int64) *v1.Pod {
	p.Spec.TerminationGracePeriodSeconds = &seconds
	return p
}

func execHandler(script string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", script}}}
}

// TestLifecycleHooks runs postStart and preStop hooks of each kind and
// observes them from the API and from outside the pod, and stops a pod's
// sidecars after its main container in reverse order.
func TestLifecycleHooks(t *testing.T) {
	n := newLifeNode(t, "hooks")
	rec := newCallRecorder(t, n.Env.BridgeIP)

	t.Run("postStart blocks Running", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("app")
		c.Lifecycle = &v1.Lifecycle{PostStart: execHandler("sleep 3; echo done > /tmp/hook")}
		n.Create(t, n.NewPod("poststart", nil, c))
		created := time.Now()
		// The first status that shows the container running comes after
		// the hook returned.
		n.ContainerRunning(t, "poststart", "app")
		if d := time.Since(created); d < 3*time.Second {
			t.Errorf("running %s after its creation, before its postStart hook could end", d)
		}
		n.Expect(t, "poststart", "app", "cat /tmp/hook", "done")
	})

	t.Run("postStart fails", func(t *testing.T) {
		t.Parallel()
		c := n.Sleeper("app")
		c.Lifecycle = &v1.Lifecycle{PostStart: execHandler("echo no; exit 1")}
		n.Create(t, n.NewPod("poststart-fails", nil, c))
		n.Event(t, "poststart-fails", "FailedPostStartHook", "PostStartHook failed")
		n.Event(t, "poststart-fails", "Killing", "FailedPostStartHook")
		agent.Eventually(t, "the container restarted", 60*time.Second, func() error {
			cs, err := n.ContainerState("poststart-fails", "app")
			if err != nil {
				return err
			}
			if cs.RestartCount < 1 {
				return fmt.Errorf("restart count %d, state %+v", cs.RestartCount, cs.State)
			}
			return nil
		})
	})

	// preStop checks that the pod's preStop hook, which calls
	// /NAME/prestop, runs before its container gets SIGTERM (/NAME/term).
	preStop := func(t *testing.T, name string, hook *v1.LifecycleHandler) {
		c := n.trapper(rec, "app", "/"+name+"/term", 0)
		c.Lifecycle = &v1.Lifecycle{PreStop: hook}
		n.Run(t, withGrace(n.NewPod(name, nil, c), 10))
		rec.trapsSet(t, "/"+name+"/term")
		n.deletePod(t, name)
		ran := rec.wait(t, "/"+name+"/prestop", 20*time.Second)
		term := rec.wait(t, "/"+name+"/term", 20*time.Second)
		if !ran.Before(term) {
			t.Errorf("SIGTERM %s before the preStop hook", ran.Sub(term))
		}
	}
	t.Run("preStop exec", func(t *testing.T) {
		t.Parallel()
		preStop(t, "prestop-exec", execHandler(rec.wget("/prestop-exec/prestop")))
	})
	t.Run("preStop httpGet", func(t *testing.T) {
		t.Parallel()
		preStop(t, "prestop-http", &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
			Host: rec.host, Port: intstr.FromInt(rec.port), Path: "/prestop-http/prestop"}})
	})

	t.Run("preStop sleep", func(t *testing.T) {
		t.Parallel()
		c := n.trapper(rec, "app", "/prestop-sleep/term", 0)
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3}}}
		n.Run(t, withGrace(n.NewPod("prestop-sleep", nil, c), 10))
		rec.trapsSet(t, "/prestop-sleep/term")
		deleted := n.deletePod(t, "prestop-sleep")
		if d := rec.wait(t, "/prestop-sleep/term", 20*time.Second).Sub(deleted); d < 3*time.Second {
			t.Errorf("SIGTERM %s after the deletion, before the preStop sleep of 3s ended", d)
		}
	})

	t.Run("preStop cut by the grace period", func(t *testing.T) {
		t.Parallel()
		// The hook would take a minute, and the container ignores SIGTERM
		// (sleep as PID 1): it is killed 2 s after the grace period of
		// 3 s, and the pod goes then. (A SIGTERM trap is no witness here:
		// with the hook's exec in the container, busybox's shell does not
		// always run it, against upstream's kubelet too.)
		c := n.Sleeper("app")
		c.Lifecycle = &v1.Lifecycle{PreStop: execHandler(rec.wget("/prestop-cut/prestop") + "; sleep 60")}
		n.Run(t, withGrace(n.NewPod("prestop-cut", nil, c), 3))
		deleted := n.deletePod(t, "prestop-cut")
		rec.wait(t, "/prestop-cut/prestop", 10*time.Second)
		agent.Eventually(t, "the pod gone", 30*time.Second, func() error {
			if _, err := n.Get("prestop-cut"); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		if d := time.Since(deleted); d < 3*time.Second || d > 20*time.Second {
			t.Errorf("the pod went %s after its deletion, want soon after its grace period of 3s", d)
		}
	})

	t.Run("sidecars stop after the main container, in reverse order", func(t *testing.T) {
		t.Parallel()
		always := v1.ContainerRestartPolicyAlways
		// Each lingers a second after its SIGTERM: the next one's SIGTERM
		// comes only once it has exited.
		s1 := n.trapper(rec, "s1", "/sidecars/s1", time.Second)
		s2 := n.trapper(rec, "s2", "/sidecars/s2", time.Second)
		s1.RestartPolicy, s2.RestartPolicy = &always, &always
		// A long grace period and long waits: under CI's load a call from
		// a container once came later than 20 s.
		p := withGrace(n.NewPod("sidecars", nil, n.trapper(rec, "main", "/sidecars/main", time.Second)), 40)
		p.Spec.InitContainers = []v1.Container{s1, s2}
		n.Run(t, p)
		rec.trapsSet(t, "/sidecars/main", "/sidecars/s1", "/sidecars/s2")
		n.deletePod(t, "sidecars")
		main := rec.wait(t, "/sidecars/main", 45*time.Second)
		second := rec.wait(t, "/sidecars/s2", 45*time.Second)
		first := rec.wait(t, "/sidecars/s1", 45*time.Second)
		var order []string
		if d := second.Sub(main); d < 800*time.Millisecond {
			order = append(order, fmt.Sprintf("s2 %s after main", d))
		}
		if d := first.Sub(second); d < 800*time.Millisecond {
			order = append(order, fmt.Sprintf("s1 %s after s2", d))
		}
		if len(order) > 0 {
			t.Errorf("SIGTERM out of order: %s", strings.Join(order, ", "))
		}
	})
}
