package action

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
