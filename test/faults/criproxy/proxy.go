// Package criproxy is a fault tool for tests: a CRI server on a unix socket
// of its own that forwards every RuntimeService and ImageService call to a
// real runtime (containerd) and can, on rules added and removed while it
// runs, delay, hang or fail chosen calls for chosen pods.
//
//	p := criproxy.Start(t, e.RuntimeEndpoint)
//	node.RuntimeEndpoint = p.Endpoint
//	id := p.Add(criproxy.Rule{Methods: []string{"CreateContainer"},
//		Pod: criproxy.PodMatch{Namespace: ns, Name: "victim"}, Action: criproxy.Hang, Times: 1})
//	...
//	p.Remove(id)
//
// It is a transparent proxy: calls go through grpc.UnknownServiceHandler
// with a pass-through codec, their bytes unchanged; a request is decoded
// into its cri-api type only to find the pod it is about, and a few
// responses only to learn which pod a sandbox or container belongs to
// (RunPodSandbox, ListPodSandbox, PodSandboxStatus, CreateContainer,
// ListContainers), so that a call that names only a container ID
// (StopContainer, ExecSync) can be matched to its pod.
package criproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Action is what a rule does to the calls it matches.
type Action int

const (
	// Delay holds the call for Rule.Delay (or until the caller gives up),
	// then forwards it.
	Delay Action = iota
	// Hang holds the call until the caller's context ends and returns its
	// error (DeadlineExceeded at the caller's deadline): the call never
	// reaches the runtime.
	Hang
	// Fail answers the call with Rule.Code and Rule.Message without
	// forwarding it.
	Fail
)

func (a Action) String() string {
	switch a {
	case Delay:
		return "delay"
	case Hang:
		return "hang"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Pod is what the proxy knows of a pod: its sandbox's metadata.
type Pod struct {
	Name, Namespace, UID string
}

// PodMatch selects pods: each field that is set must equal the pod's. The
// zero PodMatch matches every call, including those about no pod
// (Version, ListPodSandbox, image calls); one with a field set matches
// only calls about a pod the proxy knows.
type PodMatch struct {
	Name, Namespace, UID string
}

func (m PodMatch) any() bool { return m == PodMatch{} }

func (m PodMatch) matches(p Pod, known bool) bool {
	if m.any() {
		return true
	}
	return known && (m.Name == "" || m.Name == p.Name) && (m.Namespace == "" || m.Namespace == p.Namespace) &&
		(m.UID == "" || m.UID == p.UID)
}

// Rule is one fault: what it does to which calls.
type Rule struct {
	// Methods are the CRI method names it applies to ("CreateContainer",
	// "ExecSync"); none means every method.
	Methods []string
	// Pod selects the calls by the pod they are about.
	Pod    PodMatch
	Action Action
	// Delay is how long Delay holds a call.
	Delay time.Duration
	// Code and Message are Fail's answer (Unknown when Code is OK).
	Code    codes.Code
	Message string
	// Times limits the rule to its first Times matching calls; 0 is no
	// limit.
	Times int
}

func (r *Rule) matches(method string, p Pod, known bool) bool {
	if len(r.Methods) > 0 {
		found := false
		for _, m := range r.Methods {
			found = found || m == method
		}
		if !found {
			return false
		}
	}
	return r.Pod.matches(p, known)
}

// RuleID names a rule added to a proxy.
type RuleID int

type rule struct {
	id   RuleID
	r    Rule
	hits int
}

// Proxy is a running CRI proxy. Its methods are safe for concurrent use.
type Proxy struct {
	// Endpoint is its socket as a runtime endpoint, unix:///….
	Endpoint string

	backend *grpc.ClientConn
	srv     *grpc.Server
	lis     net.Listener

	mu         sync.Mutex
	next       RuleID
	rules      []*rule
	hits       map[RuleID]int       // of rules removed too
	firstHit   map[RuleID]time.Time // when each rule first applied
	calls      map[string]int
	sandboxes  map[string]Pod    // sandbox ID → pod
	containers map[string]string // container ID → sandbox ID
}

// Start starts a proxy to the runtime at backend (unix:///… or a path) on
// a socket in a new temporary directory; the test's cleanup stops it.
func Start(t testing.TB, backend string) *Proxy {
	t.Helper()
	p, err := New(backend, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// New starts a proxy to backend on the unix socket at socket, or in a new
// temporary directory when socket is "". Close stops it.
func New(backend, socket string) (*Proxy, error) {
	if socket == "" {
		dir, err := os.MkdirTemp("", "criproxy-")
		if err != nil {
			return nil, err
		}
		socket = filepath.Join(dir, "cri.sock")
	}
	target := backend
	if !strings.Contains(target, "://") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("criproxy: dial %s: %w", backend, err)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("criproxy: listen: %w", err)
	}
	p := &Proxy{
		Endpoint: "unix://" + socket, backend: conn, lis: lis,
		hits: map[RuleID]int{}, firstHit: map[RuleID]time.Time{}, calls: map[string]int{},
		sandboxes: map[string]Pod{}, containers: map[string]string{},
	}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.handle),
		grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	go func() { _ = p.srv.Serve(lis) }()
	return p, nil
}

// Close stops the proxy: calls in flight end, its socket is removed.
func (p *Proxy) Close() {
	p.srv.Stop()
	p.backend.Close()
	sock := strings.TrimPrefix(p.Endpoint, "unix://")
	_ = os.Remove(sock)
	if dir := filepath.Dir(sock); strings.HasPrefix(filepath.Base(dir), "criproxy-") {
		_ = os.Remove(dir)
	}
}

// Add adds a rule; it applies to the calls that arrive from now on.
func (p *Proxy) Add(r Rule) RuleID {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.rules = append(p.rules, &rule{id: p.next, r: r})
	return p.next
}

// Remove removes a rule: calls it holds already stay held (a hang until
// its caller gives up), new ones pass.
func (p *Proxy) Remove(id RuleID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.id == id {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return
		}
	}
}

// Clear removes every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Calls counts the calls of method (e.g. "CreateContainer") the proxy
// received, faulted or not.
func (p *Proxy) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

// Hits counts the calls the rule applied to, removed or not.
func (p *Proxy) Hits(id RuleID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[id]
}

// FirstHit is when the rule first applied to a call; false while it has
// not.
func (p *Proxy) FirstHit(id RuleID) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.firstHit[id]
	return at, ok
}

// PodOf is the pod the proxy knows a sandbox or container ID to belong to.
func (p *Proxy) PodOf(id string) (Pod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.podOfLocked("", id)
}

func (p *Proxy) podOfLocked(sandbox, container string) (Pod, bool) {
	if sandbox == "" {
		if pod, ok := p.sandboxes[container]; ok {
			return pod, true
		}
		sandbox = p.containers[container]
	}
	pod, ok := p.sandboxes[sandbox]
	return pod, ok
}

// fault counts the call and returns the first rule that applies to it,
// counting the hit; nil when none does.
func (p *Proxy) fault(method string, req proto.Message) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[method]++
	pod, known := p.podOfRequestLocked(req)
	for i, r := range p.rules {
		if !r.r.matches(method, pod, known) {
			continue
		}
		r.hits++
		p.hits[r.id]++
		if r.hits == 1 {
			p.firstHit[r.id] = time.Now()
		}
		if r.r.Times > 0 && r.hits >= r.r.Times {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
		}
		rr := r.r
		return &rr
	}
	return nil
}

// podOfRequestLocked finds the pod a request is about: from the sandbox's
// metadata it carries, else from the sandbox or container ID it names.
func (p *Proxy) podOfRequestLocked(req proto.Message) (Pod, bool) {
	switch r := req.(type) {
	case nil:
		return Pod{}, false
	case *runtimeapi.RunPodSandboxRequest:
		return podOfMeta(r.GetConfig().GetMetadata())
	case *runtimeapi.CreateContainerRequest:
		if pod, ok := p.sandboxes[r.GetPodSandboxId()]; ok {
			return pod, true
		}
		return podOfMeta(r.GetSandboxConfig().GetMetadata())
	case interface{ GetContainerId() string }:
		return p.podOfLocked("", r.GetContainerId())
	case interface{ GetPodSandboxId() string }:
		return p.podOfLocked(r.GetPodSandboxId(), "")
	}
	return Pod{}, false
}

func podOfMeta(m *runtimeapi.PodSandboxMetadata) (Pod, bool) {
	if m == nil {
		return Pod{}, false
	}
	return Pod{Name: m.Name, Namespace: m.Namespace, UID: m.Uid}, true
}

// learn records the sandboxes and containers a response (to req) names.
func (p *Proxy) learn(req proto.Message, method string, resp []byte) {
	var msg proto.Message
	switch method {
	case "RunPodSandbox":
		msg = &runtimeapi.RunPodSandboxResponse{}
	case "ListPodSandbox":
		msg = &runtimeapi.ListPodSandboxResponse{}
	case "PodSandboxStatus":
		msg = &runtimeapi.PodSandboxStatusResponse{}
	case "CreateContainer":
		msg = &runtimeapi.CreateContainerResponse{}
	case "ListContainers":
		msg = &runtimeapi.ListContainersResponse{}
	default:
		return
	}
	if proto.Unmarshal(resp, msg) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sandbox := func(id string, m *runtimeapi.PodSandboxMetadata) {
		if pod, ok := podOfMeta(m); ok && id != "" {
			p.sandboxes[id] = pod
		}
	}
	switch m := msg.(type) {
	case *runtimeapi.RunPodSandboxResponse:
		if r, ok := req.(*runtimeapi.RunPodSandboxRequest); ok {
			sandbox(m.PodSandboxId, r.GetConfig().GetMetadata())
		}
	case *runtimeapi.ListPodSandboxResponse:
		for _, s := range m.Items {
			sandbox(s.Id, s.Metadata)
		}
	case *runtimeapi.PodSandboxStatusResponse:
		sandbox(m.GetStatus().GetId(), m.GetStatus().GetMetadata())
	case *runtimeapi.CreateContainerResponse:
		if r, ok := req.(*runtimeapi.CreateContainerRequest); ok {
			p.containers[m.ContainerId] = r.PodSandboxId
			sandbox(r.PodSandboxId, r.GetSandboxConfig().GetMetadata())
		}
	case *runtimeapi.ListContainersResponse:
		for _, c := range m.Containers {
			p.containers[c.Id] = c.PodSandboxId
		}
	}
}

// decode is the request of the method (/runtime.v1.RuntimeService/NAME) as
// its cri-api type, or nil for a method the cri-api does not know.
func decode(fullMethod string, data []byte) proto.Message {
	service, method := path.Split(strings.TrimPrefix(fullMethod, "/"))
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(strings.TrimSuffix(service, "/")))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(method))
	if md == nil {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil
	}
	msg := mt.New().Interface()
	if proto.Unmarshal(data, msg) != nil {
		return nil
	}
	return msg
}

// handle forwards one call, of any method, after the fault a rule asks
// for. Every CRI method takes one request; its answer is one message or a
// stream of them.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	full, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "criproxy: no method")
	}
	method := path.Base(full)
	ctx := ss.Context()
	var first frame
	if err := ss.RecvMsg(&first); err != nil {
		return err
	}
	req := decode(full, first)
	if r := p.fault(method, req); r != nil {
		switch r.Action {
		case Delay:
			select {
			case <-time.After(r.Delay):
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		case Hang:
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		case Fail:
			code := r.Code
			if code == codes.OK {
				code = codes.Unknown
			}
			msg := r.Message
			if msg == "" {
				msg = "criproxy: injected failure of " + method
			}
			return status.Error(code, msg)
		}
	}
	out := ctx
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		out = metadata.NewOutgoingContext(ctx, md.Copy())
	}
	cctx, cancel := context.WithCancel(out)
	defer cancel()
	cs, err := p.backend.NewStream(cctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, full,
		grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	if err := cs.SendMsg(&first); err != nil && err != io.EOF {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for n := 0; ; n++ {
		var resp frame
		err := cs.RecvMsg(&resp)
		if n == 0 {
			if h, herr := cs.Header(); herr == nil {
				_ = ss.SendHeader(h)
			}
		}
		if err == io.EOF {
			ss.SetTrailer(cs.Trailer())
			return nil
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			return err
		}
		p.learn(req, method, resp)
		if err := ss.SendMsg(&resp); err != nil {
			return err
		}
	}
}

// frame is one message's bytes, as on the wire.
type frame []byte

// rawCodec passes messages through unchanged. It is named "proto" so that
// both sides of the proxy see the content type they expect.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("criproxy: cannot marshal %T", v)
	}
	return *f, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("criproxy: cannot unmarshal into %T", v)
	}
	*f = append((*f)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
