package podruntime

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// WaitingReason is why a container waits, shown as its state.waiting.
type WaitingReason struct {
	Reason, Message string
}

// Waiting reasons, as upstream (pkg/kubelet/images, pkg/kubelet/container,
// pkg/kubelet/kubelet_pods.go).
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonErrImageInspect            = "ImageInspectError"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// pullOutcome is what ensureImage found out.
type pullOutcome struct {
	ref     string         // image to create the container from, when ready
	waiting *WaitingReason // why the container cannot be created yet
	retry   time.Duration  // when a pull may be tried again
	err     error
}

// PullPolicy is the container's pull policy, defaulted as the API server
// does for pods that did not go through it (static pods): Always for
// :latest or untagged images, IfNotPresent otherwise.
func PullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	if imageTag(c.Image) == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageTag is the tag of an image reference, "latest" when it has neither
// tag nor digest.
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok {
		return tag
	}
	return "latest"
}

// ImagePullBackoffKey identifies a (pod, image) for the pull backoff, as
// upstream.
func ImagePullBackoffKey(pod *v1.Pod, image string) string {
	return "pull/" + string(pod.UID) + "_" + image
}

// ensureImage is upstream's EnsureImageExists: it applies the pull policy,
// the pull backoff, and pulls.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig, backoff *Backoff) pullOutcome {
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	policy := PullPolicy(c)
	sctx, cancel := r.callCtx(ctx)
	st, err := r.Img.ImageStatus(sctx, &runtimeapi.ImageStatusRequest{Image: spec})
	cancel()
	if err != nil {
		err = fmt.Errorf("inspect image %q for container %s of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, err)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageInspect, err.Error()}, err: err}
	}
	present := st.GetImage() != nil
	if present && policy != v1.PullAlways {
		return pullOutcome{ref: st.Image.Id}
	}
	if policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageNeverPull, msg},
			err: fmt.Errorf("container %s of pod %s/%s: %s", c.Name, pod.Namespace, pod.Name, msg)}
	}
	key := ImagePullBackoffKey(pod, c.Image)
	if backoff != nil {
		if in, left := backoff.InBackoffSinceUpdate(key); in {
			msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
			return pullOutcome{waiting: &WaitingReason{ReasonImagePullBackOff, msg}, retry: left,
				err: fmt.Errorf("container %s of pod %s/%s: %s", c.Name, pod.Namespace, pod.Name, msg)}
		}
	}
	resp, err := r.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sandbox})
	if err != nil {
		if ctx.Err() != nil {
			return pullOutcome{err: fmt.Errorf("pull image %q for pod %s/%s aborted: %w", c.Image, pod.Namespace, pod.Name, ctx.Err())}
		}
		var retry time.Duration
		if backoff != nil {
			backoff.Next(key, backoff.Now())
			retry = backoff.Get(key)
		}
		err = fmt.Errorf("pull image %q for container %s of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, err)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImagePull, err.Error()}, retry: retry, err: err}
	}
	if backoff != nil {
		backoff.Reset(key)
	}
	return pullOutcome{ref: resp.ImageRef}
}
