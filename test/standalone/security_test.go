package standalone

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestSecurityContextRefusals runs static pods that must not run as they
// ask: hostUsers: false on a runtime without user namespaces (containerd
// 1.6; TestUserNamespaces runs them where they are supported) and
// runAsNonRoot over a root user are refused with
// upstream's reasons and events, and nothing of them runs; a non-root image
// under runAsNonRoot runs; procMount: Unmasked in the host's user namespace
// is an invalid manifest.
func TestSecurityContextRefusals(t *testing.T) {
	n := newNode(t)
	if n.Env.NonRootImage == "" {
		t.Fatal("the environment has no image with a non-root user (ACTORLET_NONROOT_IMAGE): run hack/node-env up")
	}
	n.Start()
	container := func(image, securityContext string) string {
		return fmt.Sprintf("  containers:\n  - name: c\n    image: %s\n    command: [\"sleep\", \"3600\"]\n    securityContext:\n%s", image, securityContext)
	}
	n.WriteManifest("userns.yaml", manifest("userns", "  hostUsers: false\n"+container(n.busybox(), "      runAsUser: 1000\n")))
	n.WriteManifest("rootimage.yaml", manifest("rootimage", container(n.busybox(), "      runAsNonRoot: true\n")))
	n.WriteManifest("uid0.yaml", manifest("uid0", container(n.Env.NonRootImage, "      runAsNonRoot: true\n      runAsUser: 0\n")))
	n.WriteManifest("nonroot.yaml", manifest("nonroot", container(n.Env.NonRootImage, "      runAsNonRoot: true\n")))
	n.WriteManifest("unmasked.yaml", manifest("unmasked", container(n.busybox(), "      procMount: Unmasked\n")))

	n.Running("nonroot", 60*time.Second)

	t.Run("hostUsers: false is refused and nothing of it is created", func(t *testing.T) {
		if runtimeSupportsUserNamespaces(t, n.RT) {
			t.Skip("the runtime supports user namespaces: TestUserNamespaces runs such pods")
		}
		const reason = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		n.Eventually("the refusal's event", 60*time.Second, func() error {
			if !strings.Contains(n.Logs(), "Failed to create pod sandbox: "+reason) {
				return fmt.Errorf("no FailedCreatePodSandBox event naming user namespaces in the log")
			}
			return nil
		})
		p, err := n.Pod("userns")
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != v1.PodPending {
			t.Errorf("phase %q, want Pending", p.Status.Phase)
		}
		if sb, c := n.RuntimeObjects(string(p.UID)); sb != 0 || c != 0 {
			t.Errorf("the runtime holds %d sandboxes and %d containers of the pod, want none", sb, c)
		}
	})

	for _, tc := range []struct{ name, want string }{
		{"rootimage", "container has runAsNonRoot and image will run as root (pod: %q, container: c)"},
		{"uid0", "container's runAsUser breaks non-root policy (pod: %q, container: c)"},
	} {
		t.Run(tc.name+" is refused with CreateContainerConfigError", func(t *testing.T) {
			var want string
			n.Eventually(tc.name+" waits with CreateContainerConfigError", 60*time.Second, func() error {
				p, err := n.Pod(tc.name)
				if err != nil {
					return err
				}
				want = fmt.Sprintf(tc.want, fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID))
				if len(p.Status.ContainerStatuses) != 1 {
					return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
				}
				w := p.Status.ContainerStatuses[0].State.Waiting
				if w == nil || w.Reason != "CreateContainerConfigError" || w.Message != want {
					return fmt.Errorf("waiting %+v, want CreateContainerConfigError: %s", w, want)
				}
				if p.Status.Phase != v1.PodPending {
					return fmt.Errorf("phase %q", p.Status.Phase)
				}
				if _, c := n.RuntimeObjects(string(p.UID)); c != 0 {
					return fmt.Errorf("%d containers created", c)
				}
				return nil
			})
			if !strings.Contains(n.Logs(), "Error: "+want) {
				t.Errorf("no Failed event %q in the log", "Error: "+want)
			}
		})
	}

	t.Run("procMount: Unmasked in the host's user namespace is an invalid manifest", func(t *testing.T) {
		n.Eventually("the manifest's refusal", 30*time.Second, func() error {
			if !strings.Contains(n.Logs(), "`hostUsers` must be false to use `Unmasked`") {
				return fmt.Errorf("no refusal of unmasked.yaml in the log")
			}
			return nil
		})
		if _, err := n.Pod("unmasked"); err == nil {
			t.Errorf("the pod of unmasked.yaml is in /pods")
		}
	})
}
