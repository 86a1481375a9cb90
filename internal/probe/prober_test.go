package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/probe/results"
)

// running returns the ID of a running container in rt.
func running(t *testing.T, rt *fakecri.Runtime) string {
	t.Helper()
	id, err := rt.RunningContainer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// podWith returns a pod whose container "c" (an init container when init)
// has probe as its probe of kind, and the pod's status with IP 127.0.0.1.
func podWith(kind results.Kind, p *v1.Probe, init bool, ports ...v1.ContainerPort) (*v1.Pod, *v1.Container) {
	c := v1.Container{Name: "c", Ports: ports, Env: []v1.EnvVar{{Name: "WHO", Value: "me"}, {Name: "FROM", ValueFrom: &v1.EnvVarSource{}}}}
	if p != nil && p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	switch kind {
	case results.Liveness:
		c.LivenessProbe = p
	case results.Readiness:
		c.ReadinessProbe = p
	case results.Startup:
		c.StartupProbe = p
	}
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "ns", "uid-1"
	if init {
		pod.Spec.InitContainers = []v1.Container{c}
		return pod, &pod.Spec.InitContainers[0]
	}
	pod.Spec.Containers = []v1.Container{c}
	return pod, &pod.Spec.Containers[0]
}

var podStatus = v1.PodStatus{PodIP: "127.0.0.1"}

type probeCase struct {
	name      string
	kind      results.Kind
	probe     *v1.Probe
	init      bool
	ports     []v1.ContainerPort
	want      results.Result
	wantErr   bool
	wantEvent string // prefix; "" is none
}

func (tc probeCase) run(t *testing.T, r *Runner, id string) {
	t.Helper()
	rec := &recorder{}
	r.Recorder = rec
	pod, c := podWith(tc.kind, tc.probe, tc.init, tc.ports...)
	got, err := r.Probe(context.Background(), tc.kind, pod, podStatus, c, id)
	if got != tc.want || (err != nil) != tc.wantErr {
		t.Errorf("Probe = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
	}
	var ev, path string
	if len(rec.events) > 0 {
		ev, path = rec.events[0], rec.paths[0]
	}
	if len(rec.events) > 1 {
		t.Errorf("events %q, want one at most", rec.events)
	}
	if tc.wantEvent == "" {
		if ev != "" {
			t.Errorf("unexpected event %q", ev)
		}
		return
	}
	if !strings.HasPrefix(ev, tc.wantEvent) {
		t.Errorf("event %q, want prefix %q", ev, tc.wantEvent)
	}
	want := "spec.containers{c}"
	if tc.init {
		want = "spec.initContainers{c}"
	}
	if path != want {
		t.Errorf("event %q is on %q, want %s", ev, path, want)
	}
}

// recorder records events as "TYPE REASON MESSAGE" and their field paths.
type recorder struct {
	mu            sync.Mutex
	events, paths []string
}

func (r *recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+message)
	ref, _ := obj.(*v1.ObjectReference)
	r.paths = append(r.paths, ref.FieldPath)
}

func (r *recorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, format string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(format, args...))
}

func TestNoProbe(t *testing.T) {
	probeCase{name: "none", kind: results.Readiness, want: results.Success}.run(t, &Runner{}, "id")
}

func TestExec(t *testing.T) {
	rt := fakecri.New()
	id := running(t, rt)
	rt.SetExec(func(ctx context.Context, _ string, cmd []string) ([]byte, []byte, int32) {
		switch cmd[0] {
		case "sleep":
			<-ctx.Done()
			return nil, nil, 137
		case "echo":
			return []byte(strings.Join(cmd[1:], " ")), nil, 0
		}
		code, _ := strconv.Atoi(cmd[0])
		return []byte("out:"), []byte("err"), int32(code)
	})
	exec := func(cmd ...string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
	}
	for _, tc := range []probeCase{
		{name: "exit 0", kind: results.Liveness, probe: exec("0"), want: results.Success},
		{name: "exit 1", kind: results.Liveness, probe: exec("1"), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: out:err"},
		{name: "init container", kind: results.Startup, probe: exec("2"), init: true, want: results.Failure,
			wantEvent: "Warning Unhealthy Startup probe failed: out:err"},
		{name: "timeout", kind: results.Readiness, probe: exec("sleep", "10"), want: results.Failure,
			wantEvent: `Warning Unhealthy Readiness probe failed: command timed out: "sleep 10" timed out after 1s`},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &Runner{RT: rt}, id) })
	}

	t.Run("static env expansion", func(t *testing.T) {
		var got []string
		rt.SetExec(func(_ context.Context, _ string, cmd []string) ([]byte, []byte, int32) {
			got = cmd
			return nil, nil, 0
		})
		pod, c := podWith(results.Liveness, exec("echo", "$(WHO)", "[$(FROM)]", "$(NONE)", "$$(WHO)"), false)
		if res, err := (&Runner{RT: rt}).Probe(context.Background(), results.Liveness, pod, podStatus, c, id); res != results.Success || err != nil {
			t.Fatalf("Probe = %v, %v", res, err)
		}
		if want := []string{"echo", "me", "[]", "$(NONE)", "$(WHO)"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("command %q, want %q", got, want)
		}
	})

	t.Run("runtime error is retried", func(t *testing.T) {
		before := rt.Calls("ExecSync")
		probeCase{kind: results.Liveness, probe: exec("0"), want: results.Failure, wantErr: true,
			wantEvent: `Warning Unhealthy Liveness probe errored and resulted in unknown state: rpc error: code = NotFound`,
		}.run(t, &Runner{RT: rt}, "gone")
		if n := rt.Calls("ExecSync") - before; n != maxRetries {
			t.Errorf("%d ExecSync calls, want %d", n, maxRetries)
		}
	})
}

func listen(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}

// closedPort is a port on 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) int {
	l, port := listen(t)
	l.Close()
	return port
}

func TestHTTPGet(t *testing.T) {
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != r.URL.Query().Get("agent") || r.Host != r.URL.Query().Get("host") {
			http.Error(w, "wrong agent "+r.UserAgent()+" or host "+r.Host, http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("x", 20<<10)))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "secret", http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ok?agent=kube-probe/1.37&host="+r.Host, http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		http.Redirect(w, r, "http://localhost:"+port+"/ok", http.StatusFound)
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tlsSrv := httptest.NewTLSServer(mux)
	t.Cleanup(tlsSrv.Close)
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }
	plainPort := port(srv)
	hostOf := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }

	get := func(path string, p intstr.IntOrString, mod ...func(*v1.HTTPGetAction)) *v1.Probe {
		g := &v1.HTTPGetAction{Path: path, Port: p}
		for _, m := range mod {
			m(g)
		}
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: g}}
	}
	num := intstr.FromInt32(int32(plainPort))
	for _, tc := range []probeCase{
		{name: "200 with a long body", kind: results.Readiness, probe: get("/ok?agent=kube-probe/1.37&host="+hostOf(plainPort), num), want: results.Success},
		{name: "named port", kind: results.Readiness, probe: get("/ok?agent=kube-probe/1.37&host="+hostOf(plainPort), intstr.FromString("http")),
			ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(plainPort)}}, want: results.Success},
		{name: "headers override Host and User-Agent", kind: results.Readiness, probe: get("/ok?agent=me&host=example.com", num, func(g *v1.HTTPGetAction) {
			g.HTTPHeaders = []v1.HTTPHeader{{Name: "Host", Value: "example.com"}, {Name: "User-Agent", Value: "me"}}
		}), want: results.Success},
		{name: "https without verification", kind: results.Liveness, probe: get("/ok?agent=kube-probe/1.37&host="+hostOf(port(tlsSrv)), intstr.FromInt32(int32(port(tlsSrv))),
			func(g *v1.HTTPGetAction) { g.Scheme = v1.URISchemeHTTPS }), want: results.Success},
		{name: "explicit host", kind: results.Liveness, probe: get("/ok?agent=kube-probe/1.37&host=localhost:"+strconv.Itoa(plainPort), num,
			func(g *v1.HTTPGetAction) { g.Host = "localhost" }), want: results.Success},
		{name: "503", kind: results.Liveness, probe: get("/fail", num), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 503"},
		{name: "timeout", kind: results.Liveness, probe: get("/slow", num), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: Get \"http://127.0.0.1:"},
		{name: "same-host redirect is followed", kind: results.Liveness, probe: get("/same", num), want: results.Success},
		{name: "redirect loop", kind: results.Liveness, probe: get("/loop", num), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: Get \"/loop\": stopped after 10 redirects"},
		{name: "redirect to another host is a warning", kind: results.Startup, probe: get("/away", num), want: results.Success,
			wantEvent: "Warning ProbeWarning Startup probe warning: Probe terminated redirects, Response body: <a href=\"http://localhost:"},
		{name: "connection refused", kind: results.Liveness, probe: get("/ok", intstr.FromInt32(int32(closedPort(t)))), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: Get \"http://127.0.0.1:"},
		{name: "unknown port name errors", kind: results.Liveness, probe: get("/ok", intstr.FromString("nope")), want: results.Failure, wantErr: true,
			wantEvent: `Warning Unhealthy Liveness probe errored and resulted in unknown state: port "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, &Runner{}, "id")
		})
	}
}

func TestTCPSocket(t *testing.T) {
	l, open := listen(t)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tcp := func(port int, host string) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port)), Host: host}}}
	}
	for _, tc := range []probeCase{
		{name: "open", kind: results.Liveness, probe: tcp(open, ""), want: results.Success},
		{name: "explicit host", kind: results.Liveness, probe: tcp(open, "localhost"), want: results.Success},
		{name: "closed", kind: results.Liveness, probe: tcp(closedPort(t), ""), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: dial tcp 127.0.0.1:"},
		{name: "port 0 errors", kind: results.Liveness, probe: tcp(0, ""), want: results.Failure, wantErr: true,
			wantEvent: "Warning Unhealthy Liveness probe errored and resulted in unknown state: invalid port number: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &Runner{}, "id") })
	}
}

func TestGRPC(t *testing.T) {
	l, port := listen(t)
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	bare, barePort := listen(t)
	bareSrv := grpc.NewServer()
	go func() { _ = bareSrv.Serve(bare) }()
	t.Cleanup(bareSrv.Stop)

	g := func(port int, service string) *v1.Probe {
		p := &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port)}}}
		if service != "" {
			p.GRPC.Service = &service
		}
		return p
	}
	for _, tc := range []probeCase{
		{name: "serving", kind: results.Liveness, probe: g(port, ""), want: results.Success},
		{name: "not serving", kind: results.Readiness, probe: g(port, "down"), want: results.Failure,
			wantEvent: `Warning Unhealthy Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{name: "unknown service", kind: results.Readiness, probe: g(port, "nope"), want: results.Failure,
			wantEvent: `Warning Unhealthy Readiness probe failed: error: health rpc probe failed: rpc error: code = NotFound`},
		{name: "no health service", kind: results.Liveness, probe: g(barePort, ""), want: results.Failure,
			wantEvent: `Warning Unhealthy Liveness probe failed: error: this server does not implement the grpc health protocol (grpc.health.v1.Health)`},
		{name: "nothing listens", kind: results.Liveness, probe: g(closedPort(t), ""), want: results.Failure,
			wantEvent: `Warning Unhealthy Liveness probe failed: timeout: failed to connect service "127.0.0.1:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, &Runner{}, "id")
		})
	}
}

func TestFieldPathOfAContainerNotInTheSpec(t *testing.T) {
	pod := &v1.Pod{}
	if got := podref.FieldPath(pod, "x"); got != "implicitly required container x" {
		t.Errorf("containerFieldPath = %q", got)
	}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "x"}}}
	if got := podref.FieldPath(pod, "x"); got != "spec.ephemeralContainers{x}" {
		t.Errorf("containerFieldPath = %q", got)
	}
}

func TestStoppedProbeRecordsNothing(t *testing.T) {
	rt := fakecri.New()
	id := running(t, rt)
	rt.SetExec(func(ctx context.Context, _ string, _ []string) ([]byte, []byte, int32) {
		<-ctx.Done()
		return nil, nil, 137
	})
	rec := &recorder{}
	pod, c := podWith(results.Liveness, &v1.Probe{TimeoutSeconds: 10, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sleep"}}}}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := (&Runner{RT: rt, Recorder: rec}).Probe(ctx, results.Liveness, pod, podStatus, c, id)
	if res != results.Failure || err == nil || len(rec.events) != 0 || rt.Calls("ExecSync") != 1 {
		t.Errorf("Probe = %v, %v, events %q, %d calls; want Failure with ctx's error, no event, one call", res, err, rec.events, rt.Calls("ExecSync"))
	}
}
