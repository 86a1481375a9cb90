package podruntime

import (
	"context"
	"errors"
	"math"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestVerifyRunAsNonRoot(t *testing.T) {
	const desc = `(pod: "p_ns(u)", container: c)`
	tests := []struct {
		name     string
		pod, c   *v1.SecurityContext // pod's as a container's, for brevity
		uid      *int64
		username string
		want     string
	}{
		{name: "no policy, image root", uid: ptrTo[int64](0)},
		{name: "runAsNonRoot false, image root", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(false)}, uid: ptrTo[int64](0)},
		{name: "image root", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, uid: ptrTo[int64](0),
			want: "container has runAsNonRoot and image will run as root " + desc},
		{name: "image 1234", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, uid: ptrTo[int64](1234)},
		{name: "image user by name", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, username: "nobody",
			want: "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root " + desc},
		{name: "image uid out of range", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, uid: ptrTo[int64](math.MaxInt32 + 1),
			want: "container has runAsNonRoot and image has an invalid user id (2147483648). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive " + desc},
		{name: "runAsUser 0", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](0)}, uid: ptrTo[int64](1234),
			want: "container's runAsUser breaks non-root policy " + desc},
		{name: "runAsUser 1000 over a root image", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](1000)}, uid: ptrTo[int64](0)},
		{name: "runAsUser 1000 over a named user", c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](1000)}, username: "nobody"},
		{name: "pod's runAsNonRoot, image root", pod: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, uid: ptrTo[int64](0),
			want: "container has runAsNonRoot and image will run as root " + desc},
		{name: "pod's runAsUser 0", pod: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](0)}, uid: ptrTo[int64](1234),
			want: "container's runAsUser breaks non-root policy " + desc},
		{name: "container's runAsUser over the pod's 0", pod: &v1.SecurityContext{RunAsNonRoot: ptrTo(true), RunAsUser: ptrTo[int64](0)},
			c: &v1.SecurityContext{RunAsUser: ptrTo[int64](1000)}, uid: ptrTo[int64](0)},
		{name: "container's runAsNonRoot false over the pod's", pod: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)},
			c: &v1.SecurityContext{RunAsNonRoot: ptrTo(false)}, uid: ptrTo[int64](0)},
		{name: "container's runAsNonRoot over the pod's false", pod: &v1.SecurityContext{RunAsNonRoot: ptrTo(false)},
			c: &v1.SecurityContext{RunAsNonRoot: ptrTo(true)}, uid: ptrTo[int64](0),
			want: "container has runAsNonRoot and image will run as root " + desc},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: tc.pod.RunAsNonRoot, RunAsUser: tc.pod.RunAsUser}
			}
			c := &v1.Container{Name: "c", SecurityContext: tc.c}
			err := VerifyRunAsNonRoot(pod, c, tc.uid, tc.username)
			if got := errString(err); got != tc.want {
				t.Errorf("VerifyRunAsNonRoot = %q\nwant %q", got, tc.want)
			}
			// The image's user is read only when it decides.
			nonRoot, user := effectiveRunAs(pod, c)
			if needsImageUser(pod, c) != (nonRoot && user == nil) {
				t.Errorf("needsImageUser disagrees with the effective context")
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestImageUser(t *testing.T) {
	tests := []struct {
		name     string
		img      *runtimeapi.Image
		uid      *int64
		username string
	}{
		{name: "unknown image runs as root", uid: ptrTo[int64](0)},
		{name: "no user runs as root", img: &runtimeapi.Image{}, uid: ptrTo[int64](0)},
		{name: "numeric", img: &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 1234}}, uid: ptrTo[int64](1234)},
		{name: "numeric root", img: &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 0}}, uid: ptrTo[int64](0)},
		{name: "by name", img: &runtimeapi.Image{Username: "nobody"}, username: "nobody"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			uid, username := ImageUser(tc.img)
			if (uid == nil) != (tc.uid == nil) || (uid != nil && *uid != *tc.uid) || username != tc.username {
				t.Errorf("ImageUser = %v, %q; want %v, %q", deref(uid), username, deref(tc.uid), tc.username)
			}
		})
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestUserNamespaceOptions(t *testing.T) {
	const unsupported = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	handler := func(name string, userns bool) *runtimeapi.RuntimeHandler {
		return &runtimeapi.RuntimeHandler{Name: name, Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: userns}}
	}
	tests := []struct {
		name      string
		hostUsers *bool
		handlers  []*runtimeapi.RuntimeHandler
		wantMode  runtimeapi.NamespaceMode
		want      string
	}{
		{name: "hostUsers unset: the host's", wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "hostUsers: true: the host's", hostUsers: ptrTo(true), wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "a runtime that reports no handlers (containerd 1.6)", hostUsers: ptrTo(false), want: unsupported},
		{name: "a default handler without user namespaces", hostUsers: ptrTo(false),
			handlers: []*runtimeapi.RuntimeHandler{handler("", false), handler("kata", true)}, want: unsupported},
		{name: "a handler without features", hostUsers: ptrTo(false),
			handlers: []*runtimeapi.RuntimeHandler{{Name: ""}}, want: unsupported},
		{name: "no default handler", hostUsers: ptrTo(false),
			handlers: []*runtimeapi.RuntimeHandler{handler("kata", true)}, want: unsupported + `: the handler "" is not known`},
		{name: "a runtime with user namespaces: still refused, never the host's", hostUsers: ptrTo(false),
			handlers: []*runtimeapi.RuntimeHandler{handler("", true)}, want: errUserNamespacesNotImplemented.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostUsers: tc.hostUsers}}
			ns, err := UserNamespaceOptions(pod, tc.handlers)
			if got := errString(err); got != tc.want {
				t.Fatalf("error %q, want %q", got, tc.want)
			}
			if err != nil {
				if ns != nil {
					t.Errorf("a refusal came with namespace %v", ns)
				}
				return
			}
			if ns.GetMode() != tc.wantMode {
				t.Errorf("mode %v, want %v", ns.GetMode(), tc.wantMode)
			}
		})
	}
}

func TestHostUsersFalseIsNeverConfigured(t *testing.T) {
	pod := basePod()
	pod.Spec.HostUsers = ptrTo(false)
	if _, err := SandboxConfig(pod, 0, Options{}); !errors.Is(err, errUserNamespacesNotImplemented) {
		t.Errorf("SandboxConfig: %v", err)
	}
	if _, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{}); !errors.Is(err, errUserNamespacesNotImplemented) {
		t.Errorf("ContainerConfig: %v", err)
	}
	// A pod that shares the host's user namespace says so, as upstream.
	pod.Spec.HostUsers = nil
	cfg, err := SandboxConfig(pod, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Linux.SecurityContext.NamespaceOptions.GetUsernsOptions().GetMode(); m != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox user namespace %v", m)
	}
}

func TestSandboxOfHostUsersFalsePodIsReplaced(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "app")
	status := readyStatus(cstat(pod, "app", running, 0, 0))
	if a := ComputePodActions(pod, status, nil, nil, t0); a.KillPod || a.CreateSandbox {
		t.Fatalf("a pod sharing the host's user namespace: %+v", a)
	}
	// The same sandbox, running in the host's user namespace, for a pod
	// that asks for its own: it is killed and a new one is asked for.
	pod.Spec.HostUsers = ptrTo(false)
	a := ComputePodActions(pod, status, nil, nil, t0)
	if !a.KillPod || !a.CreateSandbox || a.SandboxID != "sb1" || a.Attempt != 1 {
		t.Errorf("actions %+v; want the sandbox sb1 killed and attempt 1 created", a)
	}
	// A sandbox in a user namespace of its own is kept.
	status.SandboxStatuses[0].Linux.Namespaces.Options.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD}
	if a := ComputePodActions(pod, status, nil, nil, t0); a.KillPod || a.CreateSandbox {
		t.Errorf("a sandbox in its own user namespace: %+v", a)
	}
}

func TestProcMountUnmasked(t *testing.T) {
	pod := basePod()
	unmasked := v1.UnmaskedProcMount
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: &unmasked}
	_, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{})
	want := "container c of pod ns1/web: securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"
	if errString(err) != want {
		t.Errorf("ContainerConfig = %v\nwant %s", err, want)
	}
	// Default keeps upstream's masked and read-only paths.
	dflt := v1.DefaultProcMount
	pod.Spec.Containers[0].SecurityContext.ProcMount = &dflt
	cfg, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := cfg.Linux.SecurityContext; len(sc.MaskedPaths) != len(defaultMaskedPaths) || len(sc.ReadonlyPaths) != len(defaultReadonlyPaths) {
		t.Errorf("masked %v, read-only %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
	// Outside a user namespace the security context never unmasks /proc.
	pod.Spec.Containers[0].SecurityContext.ProcMount = &unmasked
	if sc, err := containerSecurityContext(pod, &pod.Spec.Containers[0], Options{}); err != nil || len(sc.MaskedPaths) == 0 || len(sc.ReadonlyPaths) == 0 {
		t.Errorf("unmasked in the host's user namespace: masked %v, read-only %v", sc.MaskedPaths, sc.ReadonlyPaths)
	}
}
