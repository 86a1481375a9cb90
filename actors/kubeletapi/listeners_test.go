package kubeletapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
	"github.com/actorlet/actorlet/internal/kubeletapi/stats"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// podManagerStub answers ListPods with one pod, default/web with container
// c, and HealthRequest with healthy; it counts the ListPods it gets.
type podManagerStub struct{ lists *atomic.Int64 }

func (s *podManagerStub) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *messages.ListPods:
		s.lists.Add(1)
		ctx.Respond(&messages.PodList{Pods: []v1.Pod{testPod()}, SourcesReady: true})
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: "stub", Healthy: true, LastActivity: time.Now()})
	}
}

func testPod() v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
}

// runtimeStub is a CRI runtime with one ready sandbox and one running
// container, c of default/web, whose log is logPath.
type runtimeStub struct {
	runtimeapi.RuntimeServiceClient
	logPath string
}

func (r *runtimeStub) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}, nil
}

func (r *runtimeStub) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{{Id: "sb-1", State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"}}}}, nil
}

func (r *runtimeStub) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{{Id: "ctr-1", PodSandboxId: "sb-1",
		State: runtimeapi.ContainerState_CONTAINER_RUNNING, Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:  &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: map[string]string{podruntime.LabelPodUID: "uid-1", podruntime.LabelContainerName: "c"}}}}, nil
}

func (r *runtimeStub) ContainerStatus(context.Context, *runtimeapi.ContainerStatusRequest, ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "ctr-1",
		State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: r.logPath}}, nil
}

func (r *runtimeStub) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest, ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error) {
	return &runtimeapi.ListContainerStatsResponse{}, nil
}

func (r *runtimeStub) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: "sb-1"}}, nil
}

// imageStub is an image service without images, for the statistics.
type imageStub struct{ runtimeapi.ImageServiceClient }

func (imageStub) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

func (imageStub) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	return &runtimeapi.ListImagesResponse{}, nil
}

// The users of the fake API server: admin may do anything, viewer may get
// pods, healthz, stats, metrics and logs (nodes/log) but has no
// nodes/proxy, statsReader may get stats only; anybody else is not
// authenticated.
const (
	adminToken       = "admin-token"
	viewerToken      = "viewer-token"
	statsReaderToken = "stats-reader-token"
)

// reviewingClient answers TokenReviews and SubjectAccessReviews for admin
// and viewer.
func reviewingClient() *fake.Clientset {
	c := fake.NewClientset()
	users := map[string]string{adminToken: "admin", viewerToken: "viewer", statsReaderToken: "stats-reader"}
	c.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if u, ok := users[review.Spec.Token]; ok {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
		}
		return true, review, nil
	})
	viewer := map[string]bool{"pods": true, "healthz": true, "stats": true, "metrics": true, "log": true}
	c.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := review.Spec.ResourceAttributes
		review.Status.Allowed = ra.Resource == "nodes" && ra.Name == "node-a" &&
			(review.Spec.User == "admin" || review.Spec.User == "viewer" && ra.Verb == "get" && viewer[ra.Subresource] ||
				review.Spec.User == "stats-reader" && ra.Verb == "get" && ra.Subresource == "stats")
		return true, review, nil
	})
	return c
}

// listeners are the handlers of every listener, built as listen builds
// them, each served by an httptest server (plain HTTP: TLS plays no part
// in which path answers what).
type listeners struct {
	healthz, readOnly, api, apiNoDebugging, apiNoLogsNoPprof, apiNoLogQuery, debug *httptest.Server
	lists                                                                          *atomic.Int64
}

func newListeners(t *testing.T) *listeners {
	t.Helper()
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	reg := system.Registry
	lists := &atomic.Int64{}
	podManager, err := system.Root.SpawnNamed(reg.Props("pod-manager", func() actor.Actor { return &podManagerStub{lists: lists} }, nil), "bootstrap/pod-manager")
	if err != nil {
		t.Fatal(err)
	}
	pleg, err := system.Root.SpawnNamed(reg.Props("pleg", func() actor.Actor { return &podManagerStub{lists: &atomic.Int64{}} }, nil), "bootstrap/pleg")
	if err != nil {
		t.Fatal(err)
	}

	// The log directory: a file, a link that stays inside, and links
	// that leave it, to a file and to a directory.
	logDir := t.TempDir()
	outside := t.TempDir()
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logDir, "node.log"), "node log line\n")
	write(filepath.Join(outside, "secret"), "host secret\n")
	for name, target := range map[string]string{"inside.log": "node.log", "outside.log": filepath.Join(outside, "secret"), "outside-dir": outside} {
		if err := os.Symlink(target, filepath.Join(logDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	containerLog := filepath.Join(t.TempDir(), "0.log")
	write(containerLog, "2026-01-01T00:00:00.000000000Z stdout F container line\n")

	filter, err := auth.New(auth.Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			Webhook:   kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: new(true), CacheTTL: metav1.Duration{Duration: time.Minute}},
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: new(false)},
		},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthorization{CacheAuthorizedTTL: metav1.Duration{Duration: time.Minute},
				CacheUnauthorizedTTL: metav1.Duration{Duration: time.Minute}}},
		Client: reviewingClient(), NodeName: "node-a", Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	params := Params{
		Port: 10250, ServingCert: &tls.Certificate{}, Auth: filter, NodeName: "node-a",
		Runtime: &runtimeStub{logPath: containerLog}, Configz: &kubeletconfigv1beta1.KubeletConfiguration{},
		Debugging: Debugging{Handlers: true, SystemLogs: true, SystemLogQuery: true, Profiling: true, Flags: true}, LogDir: logDir,
		FaultInjection: true, PodManager: podManager, PLEG: pleg, System: system, Log: zerolog.Nop(),
		Stats: &stats.Provider{Runtime: &runtimeStub{}, Images: imageStub{}, RootDir: t.TempDir(), PodCgroupRoot: "/kubepods", Log: zerolog.Nop()},
	}
	actorWith := func(change func(*Params)) *Actor {
		p := params
		if change != nil {
			change(&p)
		}
		return New(p)().(*Actor)
	}
	serve := func(h http.Handler) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	api := func(a *Actor) http.Handler {
		_, h, err := a.secureAPI()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := actorWith(nil)
	return &listeners{
		healthz:        serve(canonicalPaths(a.healthzMux())),
		readOnly:       serve(canonicalPaths(a.readOnlyMux())),
		api:            serve(api(a)),
		apiNoDebugging: serve(api(actorWith(func(p *Params) { p.Debugging.Handlers = false }))),
		apiNoLogsNoPprof: serve(api(actorWith(func(p *Params) {
			p.Debugging.SystemLogs, p.Debugging.Profiling, p.Debugging.Flags = false, false, false
		}))),
		apiNoLogQuery: serve(api(actorWith(func(p *Params) { p.Debugging.SystemLogQuery = false }))),
		debug:         serve(canonicalPaths(a.debugMux())),
		lists:         lists,
	}
}

// rawAnswer is what one request got.
type rawAnswer struct {
	status int
	header http.Header
	body   string
}

// raw sends the request line "METHOD TARGET" as it is, so that no client
// library cleans or escapes the target, and reads at most the first 64 KiB
// of the answer (an event stream does not end).
func raw(t *testing.T, srv *httptest.Server, method, target, token string) rawAnswer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.Listener.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: node-a\r\nConnection: close\r\n", method, target)
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	// Not res.Body.Close, which would drain a stream that never ends:
	// closing the connection ends the request.
	body := make([]byte, 64<<10)
	n, _ := io.ReadAtLeast(res.Body, body, 1)
	return rawAnswer{status: res.StatusCode, header: res.Header, body: string(body[:n])}
}

// TestEveryPathOnEveryListener walks the paths of every listener, and
// paths that try to reach one listener's handlers through another or past
// authorization, through the real muxes, the path guard and the auth
// filter (with its TokenReview and SubjectAccessReview webhooks answered by
// a fake API server). docs/security.md is this table in prose.
func TestEveryPathOnEveryListener(t *testing.T) {
	l := newListeners(t)
	const (
		disabledMsg = "Debug endpoints are disabled."
		nonCanon    = "invalid URL path"
	)
	tests := []struct {
		listener *httptest.Server
		name     string // of the listener, for the failure message
		method   string
		target   string
		token    string
		status   int
		says     string // in the body; "" checks only the status
	}{
		// The healthz listener: /healthz only.
		{l.healthz, "healthz", "GET", "/healthz", "", 200, "ok"},
		{l.healthz, "healthz", "HEAD", "/healthz", "", 200, ""},
		{l.healthz, "healthz", "OPTIONS", "/healthz", "", 200, "ok"},
		{l.healthz, "healthz", "OPTIONS", "*", "", 200, ""},
		{l.healthz, "healthz", "GET", "/healthz?verbose", "", 200, "[+]syncloop ok"},
		{l.healthz, "healthz", "GET", "/healthz/", "", 404, ""},
		{l.healthz, "healthz", "GET", "/", "", 404, ""},
		{l.healthz, "healthz", "GET", "/pods", "", 404, ""},
		{l.healthz, "healthz", "GET", "/metrics", "", 404, ""},
		{l.healthz, "healthz", "GET", "/configz", "", 404, ""},
		{l.healthz, "healthz", "GET", "/debug/actors", "", 404, ""},
		{l.healthz, "healthz", "GET", "/debug/actors.json", "", 404, ""},
		{l.healthz, "healthz", "GET", "/debug/actors/events", "", 404, ""},
		{l.healthz, "healthz", "GET", "/debug/pprof/", "", 404, ""},
		{l.healthz, "healthz", "PUT", "/debug/flags/v", "", 404, ""},
		{l.healthz, "healthz", "POST", "/debug/inject/panic?actor=bootstrap/pod-manager", "", 404, ""},
		{l.healthz, "healthz", "GET", "/exec/default/web/c", "", 404, ""},
		{l.healthz, "healthz", "GET", "/logs/", "", 404, ""},
		{l.healthz, "healthz", "GET", "//healthz", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/./healthz", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/x/../healthz", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/healthz/.", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/%2e%2e/healthz", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/debug%2Factors", "", 400, nonCanon},
		{l.healthz, "healthz", "GET", "/healthz/../debug/actors", "", 400, nonCanon},

		// The read-only port: upstream's unauthenticated handlers.
		{l.readOnly, "read-only", "GET", "/pods", "", 200, `"name":"web"`},
		{l.readOnly, "read-only", "GET", "/pods/", "", 200, `"name":"web"`},
		{l.readOnly, "read-only", "POST", "/pods", "", 405, ""},
		{l.readOnly, "read-only", "GET", "/healthz", "", 200, "ok"},
		{l.readOnly, "read-only", "GET", "/metrics", "", 200, ""},
		{l.readOnly, "read-only", "GET", "/metrics/probes", "", 200, "process_start_time_seconds"},
		{l.readOnly, "read-only", "GET", "/metrics/cadvisor", "", 200, "container_scrape_error 0"},
		{l.readOnly, "read-only", "GET", "/configz", "", 404, ""},
		// Upstream v1.37 serves cAdvisor's /spec on no listener.
		{l.readOnly, "read-only", "GET", "/spec", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/spec/", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/runningpods/", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/exec/default/web/c", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/containerLogs/default/web/c", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/logs/", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/debug/actors", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/debug/pprof/", "", 404, ""},
		{l.readOnly, "read-only", "PUT", "/debug/flags/v", "", 404, ""},
		{l.readOnly, "read-only", "POST", "/debug/inject/panic?actor=bootstrap/pod-manager", "", 404, ""},
		{l.readOnly, "read-only", "GET", "/pods/../configz", "", 400, nonCanon},
		{l.readOnly, "read-only", "GET", "/pods/%2e%2e/configz", "", 400, nonCanon},

		// The kubelet API: nothing without credentials, not even a 404.
		{l.api, "api", "GET", "/pods", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/healthz", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/debug/actors", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/debug/actors.json", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/debug/pprof/", "", 401, "Unauthorized"},
		{l.api, "api", "PUT", "/debug/flags/v", "", 401, "Unauthorized"},
		{l.api, "api", "POST", "/debug/inject/panic?actor=bootstrap/pod-manager", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/nope", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/pods", "not-a-token", 401, "Unauthorized"},
		// A path that is not canonical is refused before authentication.
		{l.api, "api", "GET", "//pods", "", 400, nonCanon},
		{l.api, "api", "GET", "/pods/../exec/default/web/c", viewerToken, 400, nonCanon},
		{l.api, "api", "GET", "/stats/..%2F..%2Fexec/default/web/c", viewerToken, 400, nonCanon},
		{l.api, "api", "GET", "/metrics%2F..%2Fdebug/actors.json", viewerToken, 400, nonCanon},
		{l.api, "api", "GET", "/logs/%2e%2e/%2e%2e/etc/passwd", viewerToken, 400, nonCanon},
		{l.api, "api", "GET", "/logs/..%2f..%2fetc/passwd", viewerToken, 400, nonCanon},
		// viewer: its fine-grained subresources, never nodes/proxy.
		{l.api, "api", "GET", "/pods", viewerToken, 200, `"name":"web"`},
		{l.api, "api", "GET", "/healthz", viewerToken, 200, "ok"},
		{l.api, "api", "GET", "/metrics", viewerToken, 200, ""},
		{l.api, "api", "GET", "/metrics/probes", viewerToken, 200, "process_start_time_seconds"},
		{l.api, "api", "GET", "/metrics/probes", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/metrics/cadvisor", "", 401, "Unauthorized"},
		{l.api, "api", "GET", "/metrics/cadvisor", viewerToken, 200, `container_last_seen{container="c",id="",image="busybox",name="ctr-1",namespace="default",pod="web"}`},
		{l.api, "api", "GET", "/metrics/cadvisor", statsReaderToken, 403, "subresource(s)=[metrics]"},
		{l.api, "api", "GET", "/metrics/resource", statsReaderToken, 403, "subresource(s)=[metrics]"},
		{l.api, "api", "GET", "/logs/", viewerToken, 200, "node.log"},
		{l.api, "api", "GET", "/configz", viewerToken, 403, "subresource(s)=[configz proxy]"},
		{l.api, "api", "GET", "/runningpods/", viewerToken, 200, `"name":"web"`},
		{l.api, "api", "GET", "/debug/actors", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "GET", "/debug/actors.json", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "GET", "/debug/actors/events", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "GET", "/debug/pprof/", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "PUT", "/debug/flags/v", viewerToken, 403, "verb=update, resource=nodes, subresource(s)=[proxy]"},
		{l.api, "api", "PUT", "/debug/flags/v", statsReaderToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "POST", "/debug/inject/panic?actor=bootstrap/pod-manager", viewerToken, 403, "verb=create"},
		{l.api, "api", "GET", "/exec/default/web/c?command=true&output=1", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "GET", "/containerLogs/default/web/c", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "POST", "/pods", viewerToken, 403, "verb=create"},
		// admin: every handler.
		{l.api, "api", "GET", "/pods", adminToken, 200, `"name":"web"`},
		{l.api, "api", "HEAD", "/pods", adminToken, 405, ""},
		{l.api, "api", "OPTIONS", "/pods", adminToken, 405, ""},
		{l.api, "api", "GET", "/healthz?verbose", adminToken, 200, "[+]pleg ok"},
		{l.api, "api", "GET", "/healthz/", adminToken, 404, ""},
		{l.api, "api", "GET", "/configz", adminToken, 200, `"kubeletconfig"`},
		{l.api, "api", "GET", "/spec", adminToken, 404, ""},
		{l.api, "api", "GET", "/spec/", adminToken, 404, ""},
		{l.api, "api", "GET", "/spec", viewerToken, 403, "subresource(s)=[proxy]"},
		{l.api, "api", "GET", "/runningpods/", adminToken, 200, `"name":"web"`},
		{l.api, "api", "GET", "/containerLogs/default/web/c", adminToken, 200, "container line"},
		{l.api, "api", "GET", "/containerLogs/default/ghost/c", adminToken, 404, "ghost"},
		{l.api, "api", "GET", "/exec/default/web/c?command=true&output=1", adminToken, 400, "upgrade request required"},
		{l.api, "api", "GET", "/exec/default/ghost/c?command=true&output=1", adminToken, 404, "ghost"},
		{l.api, "api", "GET", "/debug/actors", adminToken, 200, `<svg id="graph"`},
		{l.api, "api", "HEAD", "/debug/actors", adminToken, 200, ""},
		{l.api, "api", "POST", "/debug/actors", adminToken, 405, ""},
		{l.api, "api", "GET", "/debug/actors/", adminToken, 404, ""},
		{l.api, "api", "GET", "/debug/actors.json", adminToken, 200, `"actors":[`},
		{l.api, "api", "GET", "/debug/actors/events", adminToken, 200, "retry: 1000"},
		{l.api, "api", "GET", "/debug/actors/timeline?path=bootstrap/pod-manager", adminToken, 200, "["},
		{l.api, "api", "GET", "/debug/pprof/", adminToken, 200, "goroutine"},
		// An empty body is no verbosity: upstream's 400, nothing changed.
		{l.api, "api", "PUT", "/debug/flags/v", adminToken, 400, `strconv.ParseUint: parsing "": invalid syntax`},
		{l.api, "api", "GET", "/debug/flags/v", adminToken, 406, "unsupported http method"},
		{l.api, "api", "POST", "/debug/inject/panic?actor=bootstrap/nobody", adminToken, 404, "no live actor"},
		{l.api, "api", "GET", "/debug/inject/panic?actor=bootstrap/nobody", adminToken, 405, ""},
		{l.api, "api", "GET", "/logs/node.log", adminToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/inside.log", adminToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/outside.log", adminToken, 403, ""},
		{l.api, "api", "GET", "/logs/outside-dir/secret", adminToken, 403, ""},
		{l.api, "api", "GET", "/logs/outside-dir/", adminToken, 403, ""},
		{l.api, "api", "POST", "/logs/node.log", adminToken, 405, ""},
		// The node log query (enableSystemLogQuery): a file under the
		// directory, never out of it; a service's journal or, as here
		// without one, its log file; upstream's 400 and 406.
		{l.api, "api", "GET", "/logs/?query=./node.log", adminToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/?query=./inside.log", adminToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/?query=./outside.log", adminToken, 406, "path escapes from parent"},
		{l.api, "api", "GET", "/logs/?query=outside-dir/secret", adminToken, 406, "path escapes from parent"},
		{l.api, "api", "GET", "/logs/?query=../etc/passwd", adminToken, 406, "path escapes from parent"},
		{l.api, "api", "GET", "/logs/?query=/etc/passwd", adminToken, 406, "path escapes from parent"},
		{l.api, "api", "GET", "/logs/?query=node", adminToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/?query=outside", adminToken, 200, "error getting log for outside: openat outside.log: path escapes from parent"},
		{l.api, "api", "GET", "/logs/?query=node&tailLines=1", adminToken, 200, "options present and query resolved to log files for [node]"},
		{l.api, "api", "GET", "/logs/?query=./node.log&tailLines=1", adminToken, 406, "cannot specify file with options"},
		{l.api, "api", "GET", "/logs/node.log?query=node", adminToken, 406, "path not allowed in query mode"},
		{l.api, "api", "GET", "/logs/?query=", adminToken, 400, `query: Invalid value: [""]: may not be empty`},
		{l.api, "api", "GET", "/logs/?query=node&tailLines=x", adminToken, 400, `tailLines: Invalid value: "x"`},
		{l.api, "api", "GET", "/logs/?sinceTime=2026-01-01T00:00:00Z", adminToken, 406, "query: Required value: cannot be empty with options"},
		{l.api, "api", "GET", "/logs/?query=a%20b", adminToken, 406, "input contains unsupported characters"},
		{l.api, "api", "GET", "/logs/?query=a&query=b&query=c&query=d&query=e", adminToken, 406, "must have at most 4 items"},
		{l.api, "api", "GET", "/logs/?query=node", viewerToken, 200, "node log line"},
		{l.api, "api", "GET", "/logs/?query=node", statsReaderToken, 403, "subresource(s)=[log]"},
		{l.apiNoLogQuery, "api without the log query", "GET", "/logs/?query=node", adminToken, 200, "node.log"},
		{l.apiNoLogQuery, "api without the log query", "GET", "/logs/?query=./node.log", adminToken, 200, `<a href="node.log">`},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/logs/?query=node", adminToken, 405, "logs endpoint is disabled."},
		{l.api, "api", "GET", "/nope", adminToken, 404, ""},
		{l.api, "api", "GET", "/", adminToken, 404, ""},

		// enableDebuggingHandlers: false: upstream's 405, after
		// authentication; configz goes with them, as upstream's.
		{l.apiNoDebugging, "api without debugging", "GET", "/exec/default/web/c", "", 401, "Unauthorized"},
		{l.apiNoDebugging, "api without debugging", "GET", "/pods", adminToken, 200, `"name":"web"`},
		{l.apiNoDebugging, "api without debugging", "GET", "/healthz", adminToken, 200, "ok"},
		{l.apiNoDebugging, "api without debugging", "GET", "/configz", adminToken, 404, ""},
		{l.apiNoDebugging, "api without debugging", "GET", "/metrics/cadvisor", adminToken, 200, "container_scrape_error 0"},
		{l.apiNoDebugging, "api without debugging", "GET", "/exec/default/web/c?command=true&output=1", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "POST", "/attach/default/web/c", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "POST", "/portForward/default/web", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "POST", "/run/default/web/c?cmd=true", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/containerLogs/default/web/c", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/runningpods/", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/logs/node.log", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/debug/pprof/", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "PUT", "/debug/flags/v", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/debug/actors", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "GET", "/debug/actors.json", adminToken, 405, disabledMsg},
		{l.apiNoDebugging, "api without debugging", "POST", "/debug/inject/panic?actor=bootstrap/pod-manager", adminToken, 405, disabledMsg},

		// enableSystemLogHandler, enableProfilingHandler and
		// enableDebugFlagsHandler: false.
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/logs/", adminToken, 405, "logs endpoint is disabled."},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/logs/node.log", adminToken, 405, "logs endpoint is disabled."},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/debug/pprof/", adminToken, 405, "profiling endpoint is disabled."},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/debug/pprof/heap", adminToken, 405, "profiling endpoint is disabled."},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "PUT", "/debug/flags/v", adminToken, 405, "flags endpoint is disabled."},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/debug/actors.json", adminToken, 200, `"actors":[`},
		{l.apiNoLogsNoPprof, "api without logs and pprof", "GET", "/exec/default/web/c?command=true&output=1", adminToken, 400, "upgrade request required"},

		// The debug listener (--debug-address): the debugging handlers
		// only, no credentials.
		{l.debug, "debug", "GET", "/debug/actors", "", 200, `<svg id="graph"`},
		{l.debug, "debug", "HEAD", "/debug/actors", "", 200, ""},
		{l.debug, "debug", "GET", "/debug/actors.json", "", 200, `"actors":[`},
		{l.debug, "debug", "GET", "/debug/actors/events", "", 200, "retry: 1000"},
		{l.debug, "debug", "GET", "/debug/pprof/", "", 200, "goroutine"},
		{l.debug, "debug", "POST", "/debug/inject/panic?actor=bootstrap/nobody", "", 404, "no live actor"},
		{l.debug, "debug", "GET", "/healthz", "", 404, ""},
		{l.debug, "debug", "GET", "/pods", "", 404, ""},
		{l.debug, "debug", "GET", "/configz", "", 404, ""},
		{l.debug, "debug", "GET", "/exec/default/web/c", "", 404, ""},
		{l.debug, "debug", "GET", "/logs/", "", 404, ""},
		{l.debug, "debug", "PUT", "/debug/flags/v", "", 404, ""},
		{l.debug, "debug", "GET", "//debug/actors", "", 400, nonCanon},
		{l.debug, "debug", "GET", "/debug/actors/../../logs/", "", 400, nonCanon},
	}
	for _, tt := range tests {
		start := time.Now()
		got := raw(t, tt.listener, tt.method, tt.target, tt.token)
		if d := time.Since(start); d > time.Second {
			t.Logf("%s %s took %v", tt.method, tt.target, d)
		}
		who := "no credentials"
		if tt.token != "" {
			who = "token " + tt.token
		}
		if got.status != tt.status || !strings.Contains(got.body, tt.says) {
			t.Errorf("%s listener: %s %s with %s: %d %.200q, want %d with %q", tt.name, tt.method, tt.target, who, got.status, got.body, tt.status, tt.says)
		}
	}
}

// TestSnapshotSparesThePodManager sends /pods and /healthz from many
// clients at once: the pod-manager is asked at most once per
// snapshotMaxAge, however many requests there are.
func TestSnapshotSparesThePodManager(t *testing.T) {
	l := newListeners(t)
	const clients, duration = 50, 2 * time.Second
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	deadline := time.Now().Add(duration)
	for i := range clients {
		wg.Go(func() {
			path := []string{"/pods", "/healthz"}[i%2]
			for time.Now().Before(deadline) {
				res, err := client.Get(l.readOnly.URL + path)
				if err != nil {
					failures.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failures.Add(1)
				}
				requests.Add(1)
			}
		})
	}
	wg.Wait()
	lists := l.lists.Load()
	t.Logf("%d requests, %d ListPods to the pod-manager", requests.Load(), lists)
	if failures.Load() > 0 {
		t.Errorf("%d requests failed", failures.Load())
	}
	if max := int64(duration/snapshotMaxAge) + 2; lists > max {
		t.Errorf("the pod-manager got %d ListPods in %v, want at most %d", lists, duration, max)
	}
	if requests.Load() < 10*lists {
		t.Errorf("only %d requests for %d ListPods: the test did not flood", requests.Load(), lists)
	}
}

// TestListenerLimits checks that a listener has upstream's limits and
// refuses a header over the cap, while a stream still flows.
func TestListenerLimits(t *testing.T) {
	a := New(Params{Log: zerolog.Nop()})().(*Actor)
	t.Cleanup(a.shutdown)
	mux := http.NewServeMux()
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "line %d\n", i)
			_ = http.NewResponseController(w).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	})
	addr, err := a.serveOn("test", "127.0.0.1:0", canonicalPaths(mux), nil, streaming)
	if err != nil {
		t.Fatal(err)
	}
	srv := a.servers[0]
	if srv.ReadHeaderTimeout != 10*time.Second || srv.ReadTimeout != 4*time.Hour || srv.WriteTimeout != 4*time.Hour ||
		srv.IdleTimeout != 90*time.Second || srv.MaxHeaderBytes != 1<<20 {
		t.Errorf("limits: read header %v, read %v, write %v, idle %v, header bytes %d", srv.ReadHeaderTimeout, srv.ReadTimeout,
			srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr.String()+"/stream", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 2<<20))
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 2 MiB header: %s, want 431", res.Status)
		}
	}
	res, err := http.Get("http://" + addr.String() + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if string(body) != "line 0\nline 1\nline 2\n" {
		t.Errorf("stream: %q", body)
	}
}
