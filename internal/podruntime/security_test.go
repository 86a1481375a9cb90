package podruntime

import (
	"context"
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/userns"
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

func TestUserNamespaceSupport(t *testing.T) {
	const unsupported = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	handler := func(name string, userns bool) *runtimeapi.RuntimeHandler {
		return &runtimeapi.RuntimeHandler{Name: name, Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: userns}}
	}
	tests := []struct {
		name     string
		handler  string
		handlers []*runtimeapi.RuntimeHandler
		want     string
	}{
		{name: "a runtime that reports no handlers (containerd 1.6)", want: unsupported},
		{name: "a default handler without user namespaces",
			handlers: []*runtimeapi.RuntimeHandler{handler("", false), handler("kata", true)}, want: unsupported},
		{name: "a handler without features",
			handlers: []*runtimeapi.RuntimeHandler{{Name: ""}}, want: unsupported},
		{name: "no default handler",
			handlers: []*runtimeapi.RuntimeHandler{handler("kata", true)}, want: unsupported + `: the handler "" is not known`},
		{name: "a default handler with user namespaces",
			handlers: []*runtimeapi.RuntimeHandler{handler("", true), handler("kata", false)}},
		{name: "a RuntimeClass handler with user namespaces", handler: "kata",
			handlers: []*runtimeapi.RuntimeHandler{handler("", false), handler("kata", true)}},
		{name: "a RuntimeClass handler without", handler: "kata",
			handlers: []*runtimeapi.RuntimeHandler{handler("", true), handler("kata", false)},
			want:     "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces"},
		{name: "a RuntimeClass handler the runtime does not know", handler: "gvisor",
			handlers: []*runtimeapi.RuntimeHandler{handler("", true)},
			want:     "can't set `spec.hostUsers: false`, RuntimeClass handler \"gvisor\" does not support user namespaces: the handler \"gvisor\" is not known"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errString(UserNamespaceSupport(tc.handlers, tc.handler)); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}

// fixedRanges gives every pod the same range, or fails.
type fixedRanges struct {
	r   userns.IDRange
	err error
}

func (f fixedRanges) PodRange(types.UID) (userns.IDRange, error) { return f.r, f.err }

func TestHostUsersFalseConfigs(t *testing.T) {
	pod := basePod()
	pod.Spec.HostUsers = ptrTo(false)
	t.Run("without ranges: refused, never the host's user namespace", func(t *testing.T) {
		if _, err := SandboxConfig(pod, 0, Options{}); !errors.Is(err, errUserNamespacesNotImplemented) {
			t.Errorf("SandboxConfig: %v", err)
		}
		if _, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{}); !errors.Is(err, errUserNamespacesNotImplemented) {
			t.Errorf("ContainerConfig: %v", err)
		}
	})
	t.Run("an allocation that fails refuses the pod", func(t *testing.T) {
		opts := Options{UserNamespaces: fixedRanges{err: errors.New("create user namespace: could not find an empty slot to allocate a user namespace")}}
		if _, err := SandboxConfig(pod, 0, opts); errString(err) != "create user namespace: could not find an empty slot to allocate a user namespace" {
			t.Errorf("SandboxConfig: %v", err)
		}
		if _, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, opts); err == nil {
			t.Errorf("ContainerConfig without a range succeeded")
		}
	})
	t.Run("the pod's range, in the sandbox, the containers and their mounts", func(t *testing.T) {
		opts := Options{UserNamespaces: fixedRanges{r: userns.IDRange{First: 3 * 65536, Length: 65536}}, RootDir: t.TempDir()}
		want := &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD,
			Uids: []*runtimeapi.IDMapping{{HostId: 3 * 65536, ContainerId: 0, Length: 65536}},
			Gids: []*runtimeapi.IDMapping{{HostId: 3 * 65536, ContainerId: 0, Length: 65536}}}
		sb, err := SandboxConfig(pod, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := sb.Linux.SecurityContext.NamespaceOptions.GetUsernsOptions(); !proto.Equal(got, want) {
			t.Errorf("sandbox user namespace %v, want %v", got, want)
		}
		cfg, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Linux.SecurityContext.NamespaceOptions.GetUsernsOptions(); !proto.Equal(got, want) {
			t.Errorf("container user namespace %v, want %v", got, want)
		}
		if len(cfg.Mounts) == 0 {
			t.Fatal("no mounts to check")
		}
		for _, m := range cfg.Mounts {
			if !proto.Equal(&runtimeapi.UserNamespace{Uids: m.UidMappings, Gids: m.GidMappings}, &runtimeapi.UserNamespace{Uids: want.Uids, Gids: want.Gids}) {
				t.Errorf("mount %s: uid mappings %v, gid mappings %v", m.ContainerPath, m.UidMappings, m.GidMappings)
			}
		}
	})
	t.Run("a pod that shares the host's user namespace says so, with plain mounts", func(t *testing.T) {
		pod := basePod()
		opts := Options{UserNamespaces: fixedRanges{err: errors.New("never asked")}, RootDir: t.TempDir()}
		sb, err := SandboxConfig(pod, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		if m := sb.Linux.SecurityContext.NamespaceOptions.GetUsernsOptions().GetMode(); m != runtimeapi.NamespaceMode_NODE {
			t.Errorf("sandbox user namespace %v", m)
		}
		cfg, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cfg.Mounts {
			if m.UidMappings != nil || m.GidMappings != nil {
				t.Errorf("mount %s is ID-mapped", m.ContainerPath)
			}
		}
	})
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
