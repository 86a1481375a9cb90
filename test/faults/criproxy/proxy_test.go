package criproxy

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/env"
)

// client connects to the proxy's socket as a node agent does.
func client(t *testing.T, p *Proxy) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient(p.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createFor is a CreateContainer request for a sandbox that does not
// exist, of the pod name in namespace ns: the proxy matches it by its
// sandbox metadata, and containerd, reached, answers NotFound without
// making anything.
func createFor(ns, name string) *runtimeapi.CreateContainerRequest {
	return &runtimeapi.CreateContainerRequest{
		PodSandboxId:  "criproxy-test-no-such-sandbox",
		Config:        &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}},
		SandboxConfig: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: ns, Uid: ns + "-" + name}},
	}
}

// TestContainerd runs the proxy in front of the environment's containerd.
func TestContainerd(t *testing.T) {
	e := env.Require(t)
	p := Start(t, e.RuntimeEndpoint)
	rt, img := client(t, p)

	t.Run("forwards", func(t *testing.T) {
		v, err := rt.Version(ctxFor(t, 10*time.Second), &runtimeapi.VersionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if v.RuntimeName != "containerd" {
			t.Errorf("runtime name %q, want containerd", v.RuntimeName)
		}
		direct, _ := e.CRI(t)
		want, err := direct.ListPodSandbox(ctxFor(t, 10*time.Second), &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := rt.ListPodSandbox(ctxFor(t, 10*time.Second), &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// Sandboxes of other tests may come and go in between: only the
		// answer's shape is compared when they differ.
		if len(got.Items) != len(want.Items) {
			t.Logf("ListPodSandbox: %d sandboxes through the proxy, %d straight", len(got.Items), len(want.Items))
		}
		if _, err := img.ImageFsInfo(ctxFor(t, 10*time.Second), &runtimeapi.ImageFsInfoRequest{}); err != nil {
			t.Errorf("ImageFsInfo: %v", err)
		}
		_, err = rt.CreateContainer(ctxFor(t, 10*time.Second), createFor("ns", "a"))
		if status.Code(err) != codes.NotFound {
			t.Errorf("CreateContainer in a sandbox that does not exist: %v, want containerd's NotFound", err)
		}
		for m, n := range map[string]int{"Version": 1, "ListPodSandbox": 1, "ImageFsInfo": 1, "CreateContainer": 1} {
			if got := p.Calls(m); got != n {
				t.Errorf("Calls(%s) = %d, want %d", m, got, n)
			}
		}
	})

	t.Run("hang", func(t *testing.T) {
		id := p.Add(Rule{Methods: []string{"Version"}, Action: Hang})
		defer p.Remove(id)
		start := time.Now()
		_, err := rt.Version(ctxFor(t, 500*time.Millisecond), &runtimeapi.VersionRequest{})
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("hung Version: %v, want DeadlineExceeded", err)
		}
		end := time.Now()
		if d := end.Sub(start); d < 450*time.Millisecond || d > 5*time.Second {
			t.Errorf("hung Version returned after %v, want at its deadline (500ms)", d)
		}
		if p.Hits(id) != 1 {
			t.Errorf("Hits = %d, want 1", p.Hits(id))
		}
		if at, ok := p.FirstHit(id); !ok || at.Before(start) || at.After(end) {
			t.Errorf("FirstHit = %v, %v; want during the call, %v to %v", at, ok, start, end)
		}
	})

	t.Run("delay", func(t *testing.T) {
		id := p.Add(Rule{Methods: []string{"Version"}, Action: Delay, Delay: 700 * time.Millisecond})
		defer p.Remove(id)
		start := time.Now()
		if _, err := rt.Version(ctxFor(t, 10*time.Second), &runtimeapi.VersionRequest{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 700*time.Millisecond {
			t.Errorf("delayed Version answered after %v, want ≥ 700ms", d)
		}
		// A delay longer than the caller waits ends at its deadline.
		p.Remove(id)
		id = p.Add(Rule{Methods: []string{"Version"}, Action: Delay, Delay: time.Hour})
		defer p.Remove(id)
		if _, err := rt.Version(ctxFor(t, 300*time.Millisecond), &runtimeapi.VersionRequest{}); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("Version delayed past its deadline: %v, want DeadlineExceeded", err)
		}
	})

	t.Run("fail once", func(t *testing.T) {
		id := p.Add(Rule{Methods: []string{"ListPodSandbox", "ListContainers"}, Action: Fail, Code: codes.Unavailable, Times: 1})
		_, err := rt.ListContainers(ctxFor(t, 10*time.Second), &runtimeapi.ListContainersRequest{})
		if s, _ := status.FromError(err); s.Code() != codes.Unavailable || s.Message() != "criproxy: injected failure of ListContainers" {
			t.Fatalf("ListContainers: %v, want the injected Unavailable", err)
		}
		if _, err := rt.ListPodSandbox(ctxFor(t, 10*time.Second), &runtimeapi.ListPodSandboxRequest{}); err != nil {
			t.Errorf("ListPodSandbox after the rule's one time: %v", err)
		}
		if p.Hits(id) != 1 {
			t.Errorf("Hits = %d, want 1", p.Hits(id))
		}
	})

	t.Run("one pod", func(t *testing.T) {
		id := p.Add(Rule{Methods: []string{"CreateContainer"}, Pod: PodMatch{Namespace: "ns", Name: "victim"},
			Action: Fail, Code: codes.ResourceExhausted})
		_, err := rt.CreateContainer(ctxFor(t, 10*time.Second), createFor("ns", "victim"))
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("CreateContainer of the pod of the rule: %v, want ResourceExhausted", err)
		}
		for _, other := range []*runtimeapi.CreateContainerRequest{createFor("ns", "other"), createFor("other", "victim")} {
			_, err = rt.CreateContainer(ctxFor(t, 10*time.Second), other)
			if status.Code(err) != codes.NotFound {
				t.Errorf("CreateContainer of %s/%s: %v, want containerd's NotFound", other.SandboxConfig.Metadata.Namespace,
					other.SandboxConfig.Metadata.Name, err)
			}
		}
		if _, err := rt.Version(ctxFor(t, 10*time.Second), &runtimeapi.VersionRequest{}); err != nil {
			t.Errorf("Version, about no pod: %v", err)
		}
		p.Remove(id)
		_, err = rt.CreateContainer(ctxFor(t, 10*time.Second), createFor("ns", "victim"))
		if status.Code(err) != codes.NotFound {
			t.Errorf("CreateContainer after the rule's removal: %v, want containerd's NotFound", err)
		}
		if p.Hits(id) != 1 {
			t.Errorf("Hits = %d, want 1", p.Hits(id))
		}
	})
}

// fakeRuntime answers ListPodSandbox and ListContainers with fixed lists,
// and every other call about a container with OK.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
}

func (fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{Id: "sb-a", Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "ns", Uid: "uid-a"}},
		{Id: "sb-b", Metadata: &runtimeapi.PodSandboxMetadata{Name: "b", Namespace: "ns", Uid: "uid-b"}},
	}}, nil
}

func (fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		{Id: "c-a", PodSandboxId: "sb-a"}, {Id: "c-b", PodSandboxId: "sb-b"},
	}}, nil
}

func (fakeRuntime) CreateContainer(_ context.Context, r *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return &runtimeapi.CreateContainerResponse{ContainerId: "new-in-" + r.PodSandboxId}, nil
}

func (fakeRuntime) StopContainer(context.Context, *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return &runtimeapi.StopContainerResponse{}, nil
}

func (fakeRuntime) ExecSync(context.Context, *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return &runtimeapi.ExecSyncResponse{Stdout: []byte("ok")}, nil
}

func (fakeRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, s grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	for _, id := range []string{"c-a", "c-b"} {
		if err := s.Send(&runtimeapi.ContainerEventResponse{ContainerId: id}); err != nil {
			return err
		}
	}
	return nil
}

// TestLearnsPods checks, against a fake runtime, that the proxy matches
// calls that name only a container to their pod, from what the lists and
// CreateContainer answered, and forwards a stream.
func TestLearnsPods(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "fake.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, fakeRuntime{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	p := Start(t, sock)
	rt, _ := client(t, p)
	ctx := ctxFor(t, 30*time.Second)

	stop := p.Add(Rule{Methods: []string{"StopContainer"}, Pod: PodMatch{UID: "uid-a"}, Action: Fail, Code: codes.Aborted})
	exec := p.Add(Rule{Methods: []string{"ExecSync"}, Pod: PodMatch{Name: "b"}, Action: Fail, Code: codes.Aborted})
	// Unknown IDs match no pod rule.
	if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c-a"}); err != nil {
		t.Errorf("StopContainer of a container not known yet: %v", err)
	}
	if _, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
		t.Fatal(err)
	}
	if pod, ok := p.PodOf("c-b"); !ok || pod != (Pod{Name: "b", Namespace: "ns", UID: "uid-b"}) {
		t.Errorf("PodOf(c-b) = %+v, %v", pod, ok)
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"StopContainer of a's", func() error {
			_, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c-a"})
			return err
		}, codes.Aborted},
		{"StopContainer of b's", func() error {
			_, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c-b"})
			return err
		}, codes.OK},
		{"ExecSync in b's", func() error {
			_, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "c-b", Cmd: []string{"true"}})
			return err
		}, codes.Aborted},
		{"ExecSync in a's", func() error {
			r, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "c-a", Cmd: []string{"true"}})
			if err == nil && string(r.Stdout) != "ok" {
				return errors.New("stdout " + string(r.Stdout))
			}
			return err
		}, codes.OK},
		{"StopContainer of one a created", func() error {
			c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "sb-a"})
			if err != nil {
				return err
			}
			_, err = rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.ContainerId})
			return err
		}, codes.Aborted},
	}
	for _, tt := range tests {
		if got := status.Code(tt.call()); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if p.Hits(stop) != 2 || p.Hits(exec) != 1 {
		t.Errorf("hits: stop %d, exec %d; want 2, 1", p.Hits(stop), p.Hits(exec))
	}

	events, err := rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for {
		ev, err := events.Recv()
		if err != nil {
			if status.Code(err) != codes.OK && err.Error() != "EOF" {
				t.Errorf("GetContainerEvents: %v", err)
			}
			break
		}
		ids = append(ids, ev.ContainerId)
	}
	if len(ids) != 2 || ids[0] != "c-a" || ids[1] != "c-b" {
		t.Errorf("GetContainerEvents streamed %q, want [c-a c-b]", ids)
	}
}

func TestRuleMatches(t *testing.T) {
	a := Pod{Name: "a", Namespace: "ns", UID: "u"}
	tests := []struct {
		name   string
		rule   Rule
		method string
		pod    Pod
		known  bool
		want   bool
	}{
		{"no methods, no pod: every call", Rule{}, "Version", Pod{}, false, true},
		{"method listed", Rule{Methods: []string{"ExecSync", "StopContainer"}}, "StopContainer", Pod{}, false, true},
		{"method not listed", Rule{Methods: []string{"ExecSync"}}, "StopContainer", a, true, false},
		{"pod by name", Rule{Pod: PodMatch{Name: "a"}}, "ExecSync", a, true, true},
		{"pod by namespace and name", Rule{Pod: PodMatch{Namespace: "ns", Name: "a"}}, "ExecSync", a, true, true},
		{"other namespace", Rule{Pod: PodMatch{Namespace: "x", Name: "a"}}, "ExecSync", a, true, false},
		{"pod by UID", Rule{Pod: PodMatch{UID: "u"}}, "ExecSync", a, true, true},
		{"other UID", Rule{Pod: PodMatch{UID: "v"}}, "ExecSync", a, true, false},
		{"pod rule, call about no known pod", Rule{Pod: PodMatch{Name: "a"}}, "ExecSync", Pod{}, false, false},
	}
	for _, tt := range tests {
		if got := tt.rule.matches(tt.method, tt.pod, tt.known); got != tt.want {
			t.Errorf("%s: matches = %v, want %v", tt.name, got, tt.want)
		}
	}
}
