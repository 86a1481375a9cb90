package volumes

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestImageVolumes: an image volume (spec.volumes[].image) is the image's
// files, mounted read-only by the runtime, whole or from a subPath inside
// the image (a subPath the image lacks fails the container's creation);
// an image that cannot be pulled leaves the container that mounts it
// waiting with ErrImagePull, then ImagePullBackOff, as upstream's e2e_node
// image_volume.go expects. The runtime must mount images (CRI
// Mount.image): containerd 2.1 or later.
func TestImageVolumes(t *testing.T) {
	n := newVolNode(t)
	image := func(ref string, policy v1.PullPolicy) []v1.Volume {
		return []v1.Volume{{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: policy}}}}
	}

	if n.Env.Containerd == "1.6" {
		// A runtime that cannot mount images: the pod is refused, never
		// run without its volume.
		n.Create(t, n.NewPod("refused", image(n.Env.BusyboxImage, v1.PullIfNotPresent), n.Sleeper("c", mnt("img", "/vol"))))
		n.Event(t, "refused", "PodFeatureUnsupported", "ImageVolume", "containerd 2.1 or later")
		agent.Eventually(t, "the pod Failed", 30*time.Second, func() error {
			p, err := n.Get("refused")
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != "PodFeatureUnsupported" {
				return fmt.Errorf("phase %s, reason %q", p.Status.Phase, p.Status.Reason)
			}
			return nil
		})
		return
	}
	t.Run("the image's files, read-only", func(t *testing.T) {
		n.Run(t, n.NewPod("whole", image(n.Env.BusyboxImage, v1.PullAlways), n.Sleeper("c", mnt("img", "/vol"))))
		n.Expect(t, "whole", "c", "test -x /vol/bin/busybox && echo found", "found")
		if out, err := n.ShErr("whole", "c", "touch /vol/written"); err == nil {
			t.Errorf("a file was written in the image volume (%q)", out)
		}
		if _, opts := n.containerMount(t, "whole", "c", "/vol"); !slices.Contains(opts, "ro") {
			t.Errorf("/vol mounted with %v, want ro", opts)
		}
		// Pulled as a container's image is, its events on the pod.
		n.Event(t, "whole", "Pulling", fmt.Sprintf("Pulling image %q", n.Env.BusyboxImage))
		n.Event(t, "whole", "Pulled", fmt.Sprintf("Successfully pulled image %q", n.Env.BusyboxImage))
	})

	t.Run("a subPath inside the image", func(t *testing.T) {
		n.Run(t, n.NewPod("sub", image(n.Env.BusyboxImage, v1.PullIfNotPresent),
			n.Sleeper("c", v1.VolumeMount{Name: "img", MountPath: "/vol", SubPath: "etc"})))
		n.Expect(t, "sub", "c", "grep -c ^root: /vol/passwd; test -e /vol/etc || echo no-etc", "1\nno-etc")
	})

	t.Run("a subPath the image lacks", func(t *testing.T) {
		n.Create(t, n.NewPod("nosub", image(n.Env.BusyboxImage, v1.PullIfNotPresent),
			n.Sleeper("c", v1.VolumeMount{Name: "img", MountPath: "/vol", SubPath: "not-existing"})))
		n.Waiting(t, "nosub", "c", "CreateContainerError")
	})

	t.Run("an image that cannot be pulled", func(t *testing.T) {
		const missing = "docker.io/library/actorlet-no-such-image:1"
		n.Create(t, n.NewPod("gone", image(missing, v1.PullIfNotPresent), n.Sleeper("c", mnt("img", "/vol"))))
		agent.Eventually(t, "ErrImagePull or ImagePullBackOff", 60*time.Second, func() error {
			cs, err := n.ContainerState("gone", "c")
			if err != nil {
				return err
			}
			if w := cs.State.Waiting; w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
				return fmt.Errorf("container c: %+v", cs.State)
			}
			return nil
		})
		n.Waiting(t, "gone", "c", "ImagePullBackOff", missing)
		n.Event(t, "gone", "Failed", fmt.Sprintf("Failed to pull image %q", missing))
		n.Event(t, "gone", "Failed", "Error: ErrImagePull")
		p, err := n.Get("gone")
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != v1.PodPending {
			t.Errorf("pod %s, want Pending", p.Status.Phase)
		}
	})
}
