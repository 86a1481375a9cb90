package action

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}, {Name: "bad", ContainerPort: 70000}}}
	for _, tc := range []struct {
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{port: intstr.FromInt32(80), want: 80},
		{port: intstr.FromString("web"), want: 8080},
		{port: intstr.FromString("nope"), wantErr: true},
		{port: intstr.FromString("bad"), wantErr: true},
		{port: intstr.FromInt32(0), wantErr: true},
		{port: intstr.FromInt32(65536), wantErr: true},
	} {
		got, err := ResolvePort(tc.port, c)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("ResolvePort(%v) = %d, %v; want %d, error %v", tc.port.String(), got, err, tc.want, tc.wantErr)
		}
	}
}

func TestUserAgent(t *testing.T) {
	if got := UserAgent("probe"); got != "kube-probe/1.37" {
		t.Errorf("UserAgent = %q", got)
	}
}

func TestNewHTTPGetRequest(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	for _, tc := range []struct {
		name             string
		g                v1.HTTPGetAction
		wantURL          string
		wantHost         string
		wantAgent        string
		wantAccept       string
		wantAcceptAbsent bool
	}{
		{name: "defaults", g: v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("web")},
			wantURL: "http://10.0.0.1:8080/healthz", wantAgent: "kube-probe/1.37", wantAccept: "*/*"},
		{name: "https and host", g: v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "example.com", Path: "x?a=b", Port: intstr.FromInt32(443)},
			wantURL: "https://example.com:443/x?a=b", wantAgent: "kube-probe/1.37", wantAccept: "*/*"},
		{name: "ipv6 pod", g: v1.HTTPGetAction{Port: intstr.FromInt32(80)}, wantURL: "http://[fd00::1]:80", wantAgent: "kube-probe/1.37", wantAccept: "*/*"},
		{name: "headers override", g: v1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []v1.HTTPHeader{
			{Name: "Host", Value: "h.example"}, {Name: "user-agent", Value: "me"}, {Name: "Accept", Value: ""}}},
			wantURL: "http://10.0.0.1:80", wantHost: "h.example", wantAgent: "me", wantAcceptAbsent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip := "10.0.0.1"
			if tc.name == "ipv6 pod" {
				ip = "fd00::1"
			}
			req, err := NewHTTPGetRequest(context.Background(), &tc.g, c, ip, "probe")
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.wantURL || req.Host != tc.wantHost || req.UserAgent() != tc.wantAgent {
				t.Errorf("request %s Host %q User-Agent %q", req.URL, req.Host, req.UserAgent())
			}
			if _, ok := req.Header["Accept"]; ok == tc.wantAcceptAbsent || req.Header.Get("Accept") != tc.wantAccept {
				t.Errorf("Accept %v", req.Header["Accept"])
			}
		})
	}
}

// deadlineRT answers ExecSync with how long the caller gave it.
type deadlineRT struct {
	runtimeapi.RuntimeServiceClient
	left *time.Duration // nil when the call had no deadline
}

func (d *deadlineRT) ExecSync(ctx context.Context, _ *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	d.left = nil
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		d.left = &left
	}
	return &runtimeapi.ExecSyncResponse{}, nil
}

// TestExecDeadline checks that an ExecSync with a timeout waits the
// caller's slack (runtimeRequestTimeout) past it, as upstream's CRI client,
// and one without waits as long as its context.
func TestExecDeadline(t *testing.T) {
	tests := []struct {
		name           string
		timeout, slack time.Duration
		want           time.Duration // 0: no deadline
	}{
		{"runtimeRequestTimeout past the timeout", time.Second, 15 * time.Second, 16 * time.Second},
		{"default slack", time.Second, 0, time.Second + DefaultExecSlack},
		{"no timeout, no deadline", 0, 15 * time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &deadlineRT{}
			if _, err := Exec(context.Background(), rt, "id", []string{"true"}, tt.timeout, tt.slack); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == 0 && rt.left != nil:
				t.Errorf("deadline in %v, want none", *rt.left)
			case tt.want != 0 && rt.left == nil:
				t.Errorf("no deadline, want one in %v", tt.want)
			case tt.want != 0 && (*rt.left > tt.want || *rt.left < tt.want-time.Second):
				t.Errorf("deadline in %v, want %v", *rt.left, tt.want)
			}
		})
	}
}
