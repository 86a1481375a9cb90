package kubeletapi

import (
	"net/url"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

func TestParseStreamOptions(t *testing.T) {
	tests := []struct {
		query   string
		want    streamOptions
		wantErr bool
	}{
		{"output=1&error=1", streamOptions{stdout: true, stderr: true}, false},
		{"input=1&output=1&tty=1&error=1", streamOptions{stdin: true, stdout: true, tty: true}, false},
		{"input=true", streamOptions{stdin: true}, false},
		{"tty=1", streamOptions{}, true},
		{"", streamOptions{}, true},
		{"output=0", streamOptions{}, true},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		got, err := parseStreamOptions(q)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("parseStreamOptions(%q) = %+v, %v; want %+v, error %v", tt.query, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestExecPath(t *testing.T) {
	tests := []struct {
		path               string
		ns, pod, container string
		uid                types.UID
		wantErr            bool
	}{
		{"default/web/c", "default", "web", "c", "", false},
		{"default/web/123/c", "default", "web", "c", "123", false},
		{"/default/web/c/", "default", "web", "c", "", false},
		{"default/web", "", "", "", "", true},
		{"a/b/c/d/e", "", "", "", "", true},
		{"default//c", "", "", "", "", true},
		{"default/web//c", "", "", "", "", true},
	}
	for _, tt := range tests {
		ns, pod, uid, c, err := execPath(tt.path)
		if (err != nil) != tt.wantErr || ns != tt.ns || pod != tt.pod || uid != tt.uid || c != tt.container {
			t.Errorf("execPath(%q) = %q %q %q %q, %v", tt.path, ns, pod, uid, c, err)
		}
	}
}

func TestPortForwardAndLogsPaths(t *testing.T) {
	for _, tt := range []struct {
		path, want string // want: the segments joined by spaces, or the error
	}{
		{"default/web", "default web "},
		{"default/web/123/", "default web 123"},
		{"default//123", `path "/portForward/default//123": the pod name is empty`},
		{"default", `path "/portForward/default": want /portForward/NAMESPACE/POD[/UID]`},
	} {
		ns, pod, uid, err := portForwardPath(tt.path)
		got := ns + " " + pod + " " + string(uid)
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("portForwardPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	for _, tt := range []struct{ path, want string }{
		{"default/web/nginx", "default web nginx"},
		{"default/web/", `missing container name in "/containerLogs/default/web/": want /containerLogs/NAMESPACE/POD/CONTAINER`},
		{"default//nginx", `path "/containerLogs/default//nginx": the pod name is empty`},
		{"default/web/nginx/x", `path "/containerLogs/default/web/nginx/x": want /containerLogs/NAMESPACE/POD/CONTAINER`},
	} {
		ns, pod, c, err := containerLogsPath(tt.path)
		got := ns + " " + pod + " " + c
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("containerLogsPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestRunningPodList(t *testing.T) {
	meta := func(name, uid string) *runtimeapi.PodSandboxMetadata {
		return &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: uid}
	}
	sandboxes := []*runtimeapi.PodSandbox{
		{Id: "s1", Metadata: meta("a", "u1"), State: runtimeapi.PodSandboxState_SANDBOX_READY},
		{Id: "s2", Metadata: meta("b", "u2"), State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
	}
	containers := []*runtimeapi.Container{
		{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: map[string]string{podruntime.LabelPodUID: "u1"},
			Image: &runtimeapi.ImageSpec{Image: "busybox"}},
		{Id: "c2", Metadata: &runtimeapi.ContainerMetadata{Name: "gone"}, Labels: map[string]string{podruntime.LabelPodUID: "u2"}},
	}
	list := runningPodList(sandboxes, containers)
	if len(list.Items) != 1 || list.Items[0].Name != "a" || list.Items[0].UID != "u1" ||
		len(list.Items[0].Spec.Containers) != 1 || list.Items[0].Spec.Containers[0].Image != "busybox" {
		t.Errorf("runningPodList = %+v", list.Items)
	}
}
