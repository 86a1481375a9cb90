package lifecycle

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/probe/action"
	"github.com/actorlet/actorlet/internal/testutil"
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

func testPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "ns", "uid-1"
	return pod
}

func TestExec(t *testing.T) {
	rt := fakecri.New()
	id := running(t, rt)
	rt.SetExec(func(_ context.Context, _ string, cmd []string) ([]byte, []byte, int32) {
		code, _ := strconv.Atoi(cmd[len(cmd)-1])
		return []byte("out "), []byte("err"), int32(code)
	})
	r := &Runner{RT: rt}
	c := &v1.Container{Name: "c"}
	for _, tc := range []struct {
		name    string
		id      string
		cmd     []string
		wantErr bool
		wantMsg string
	}{
		{name: "exit 0", id: id, cmd: []string{"sh", "-c", "0"}},
		{name: "exit 2", id: id, cmd: []string{"sh", "-c", "2"}, wantErr: true,
			wantMsg: `Exec lifecycle hook ([sh -c 2]) for Container "c" in Pod "p_ns(uid-1)" failed - error: command 'sh -c 2' exited with 2: err, message: "out err"`},
		{name: "no container", id: "gone", cmd: []string{"true"}, wantErr: true,
			wantMsg: `Exec lifecycle hook ([true]) for Container "c" in Pod "p_ns(uid-1)" failed - error: rpc error: code = NotFound desc = container "gone": not found, message: ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := r.Run(context.Background(), testPod(), "10.0.0.1", tc.id, c, &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: tc.cmd}})
			if (err != nil) != tc.wantErr || msg != tc.wantMsg {
				t.Errorf("Run = %q, %v; want %q, error %v", msg, err, tc.wantMsg, tc.wantErr)
			}
		})
	}
}

func TestExecEndsWithTheContext(t *testing.T) {
	rt := fakecri.New()
	id := running(t, rt)
	rt.SetExec(func(ctx context.Context, _ string, _ []string) ([]byte, []byte, int32) {
		<-ctx.Done()
		return nil, nil, 137
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := (&Runner{RT: rt}).Run(ctx, testPod(), "", id, &v1.Container{Name: "c"}, &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "1000"}}})
	if err == nil {
		t.Fatal("a hook past its context succeeded")
	}
}

// server is an HTTP server on 127.0.0.1 that records the requests it got.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newServer(t *testing.T, tls bool, h http.HandlerFunc) *server {
	s := &server{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r)
		s.mu.Unlock()
		h(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(handler)
	} else {
		s.Server = httptest.NewServer(handler)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) port(t *testing.T) int {
	_, p, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func TestHTTPGet(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) {}
	fail := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }
	plain := newServer(t, false, ok)
	failing := newServer(t, false, fail)
	secure := newServer(t, true, ok)
	other := newServer(t, false, ok)
	redirect := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		// localhost is another host name than 127.0.0.1: not followed.
		http.Redirect(w, r, "http://localhost:"+strconv.Itoa(other.port(t))+"/there", http.StatusFound)
	})
	closed := newServer(t, false, ok)
	closedPort := closed.port(t)
	closed.Close()

	for _, tc := range []struct {
		name      string
		srv       *server
		port      intstr.IntOrString
		scheme    v1.URIScheme
		host      string
		podIP     string
		headers   []v1.HTTPHeader
		wantErr   string
		wantAgent string
		wantHost  string
	}{
		{name: "numbered port", srv: plain, wantAgent: "kube-lifecycle/1.37"},
		{name: "named port", srv: plain, port: intstr.FromString("web")},
		{name: "unknown port name", srv: plain, port: intstr.FromString("nope"), wantErr: `port "nope" not found`},
		{name: "status 500 is no failure, as upstream", srv: failing},
		{name: "https without verification", srv: secure, scheme: v1.URISchemeHTTPS},
		{name: "https to a plain server falls back to http", srv: plain, scheme: v1.URISchemeHTTPS},
		{name: "explicit host", srv: plain, host: "127.0.0.1", podIP: "192.0.2.1"},
		{name: "headers", srv: plain, headers: []v1.HTTPHeader{{Name: "Host", Value: "example.com"}, {Name: "User-Agent", Value: "mine"}},
			wantAgent: "mine", wantHost: "example.com"},
		{name: "redirect to another host is not followed", srv: redirect},
		{name: "connection refused", port: intstr.FromInt32(int32(closedPort)), wantErr: "connection refused"},
		{name: "no pod IP", srv: plain, podIP: "-", wantErr: "failed to find networking container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1.Container{Name: "c"}
			port := tc.port
			if tc.srv != nil {
				c.Ports = []v1.ContainerPort{{Name: "web", ContainerPort: int32(tc.srv.port(t))}}
				if port == (intstr.IntOrString{}) {
					port = intstr.FromInt32(int32(tc.srv.port(t)))
				}
			}
			podIP := tc.podIP
			switch podIP {
			case "":
				podIP = "127.0.0.1"
			case "-":
				podIP = ""
			}
			rec := record.NewFakeRecorder(10)
			before := 0
			if tc.srv != nil {
				before = len(tc.srv.requests())
			}
			h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/hook?x=1", Port: port, Host: tc.host, Scheme: tc.scheme, HTTPHeaders: tc.headers}}
			msg, err := (&Runner{Recorder: rec}).Run(context.Background(), testPod(), podIP, "id", c, h)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run error %v, want %q", err, tc.wantErr)
				}
				if want := `HTTP lifecycle hook (/hook?x=1) for Container "c" in Pod "p_ns(uid-1)" failed - error: `; !strings.HasPrefix(msg, want) {
					t.Errorf("message %q, want prefix %q", msg, want)
				}
				return
			}
			if err != nil || msg != "" {
				t.Fatalf("Run = %q, %v", msg, err)
			}
			reqs := tc.srv.requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			req := reqs[0]
			if req.URL.Path != "/hook" || req.URL.RawQuery != "x=1" {
				t.Errorf("request for %v", req.URL)
			}
			if tc.wantAgent != "" && req.UserAgent() != tc.wantAgent {
				t.Errorf("User-Agent %q, want %q", req.UserAgent(), tc.wantAgent)
			}
			if tc.wantHost != "" && req.Host != tc.wantHost {
				t.Errorf("Host %q, want %q", req.Host, tc.wantHost)
			}
			if tc.scheme == v1.URISchemeHTTPS && tc.srv == plain {
				testutil.EventWithPrefix(t, rec, "Warning LifecycleHTTPFallback request to HTTPS lifecycle hook 127.0.0.1:")
			}
		})
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the redirect to another host was followed %d times", n)
	}
}

func TestSleep(t *testing.T) {
	r := &Runner{}
	c := &v1.Container{Name: "c"}
	sleep := func(s int64) *v1.LifecycleHandler { return &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: s}} }

	start := time.Now()
	if msg, err := r.Run(context.Background(), testPod(), "", "id", c, sleep(0)); err != nil || msg != "" || time.Since(start) > time.Second {
		t.Errorf("sleep 0: %q, %v after %v", msg, err, time.Since(start))
	}
	if _, err := r.Run(context.Background(), testPod(), "", "id", c, sleep(1)); err != nil || time.Since(start) < time.Second {
		t.Errorf("sleep 1: %v after %v", err, time.Since(start))
	}
	early := sleptEarly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	msg, err := r.Run(ctx, testPod(), "", "id", c, sleep(100))
	want := `Sleep lifecycle hook (100) for Container "c" in Pod "p_ns(uid-1)" failed - error: container terminated before sleep hook finished`
	if err == nil || msg != want {
		t.Errorf("sleep cut short: %q, %v; want %q", msg, err, want)
	}
	if got := sleptEarly(t) - early; got != 1 {
		t.Errorf("kubelet_sleep_action_terminated_early_total grew by %v; want 1 (only the sleep cut short)", got)
	}
}

// sleptEarly reads kubelet_sleep_action_terminated_early_total.
func sleptEarly(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.SleepActionTerminatedEarly.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestNoHandler(t *testing.T) {
	for _, h := range []*v1.LifecycleHandler{nil, {}} {
		msg, err := (&Runner{}).Run(context.Background(), testPod(), "", "id", &v1.Container{Name: "c"}, h)
		if err == nil || !strings.HasPrefix(msg, "Cannot run handler: invalid handler: ") {
			t.Errorf("handler %v: %q, %v", h, msg, err)
		}
	}
}

func TestExitErrorIsAnActionExitError(t *testing.T) {
	rt := fakecri.New()
	id := running(t, rt)
	rt.SetExec(func(context.Context, string, []string) ([]byte, []byte, int32) { return nil, nil, 3 })
	_, err := (&Runner{RT: rt}).Run(context.Background(), testPod(), "", id, &v1.Container{Name: "c"}, &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"x"}}})
	var exit *action.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Errorf("error %v, want an ExitError with code 3", err)
	}
}
