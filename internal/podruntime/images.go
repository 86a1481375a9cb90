package podruntime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/registryauth"
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
	ref     string            // image to create the container from, when ready
	image   *runtimeapi.Image // the image's status, when read before a pull was needed
	waiting *WaitingReason    // why the container cannot be created yet
	retry   time.Duration     // when a pull may be tried again
	err     error
}

// credLookup is what pullCredentials found.
type credLookup struct {
	creds   []registryauth.Credential
	missing []string
}

// PullRecords keeps the records of pulled images and of their credentials
// (imagepull.Manager).
type PullRecords interface {
	MustPull(image, imageRef string, podSecrets func() ([]imagepull.Secret, error)) (bool, error)
	PullIntent(image string) error
	Pulled(image, imageRef string, creds *imagepull.Credentials)
	PullFailed(image string)
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
// the pull backoff, and pulls with the pod's pull secrets, recording
// upstream's events about the container's image.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig, backoff *Backoff) pullOutcome {
	event := func(eventtype, reason, message string) { r.containerEvent(pod, c.Name, "", eventtype, reason, message) }
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	policy := PullPolicy(c)
	sctx, cancel := r.callCtx(ctx)
	st, err := r.Img.ImageStatus(sctx, &runtimeapi.ImageStatusRequest{Image: spec})
	cancel()
	if err != nil {
		event(v1.EventTypeWarning, EventInspectFailed, fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err))
		err = fmt.Errorf("inspect image %q for container %s of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, err)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageInspect, err.Error()}, err: err}
	}
	present := st.GetImage() != nil
	// As upstream, the credentials are looked up once, when a pull or the
	// check of a pulled image's records needs them. A pull secret that
	// does not decode fails every sync the same way, with its error as
	// the reason.
	lookup := sync.OnceValues(func() (credLookup, error) {
		creds, missing, err := r.pullCredentials(ctx, pod, c.Image)
		return credLookup{creds, missing}, err
	})
	credsFailed := func(err error) pullOutcome {
		return pullOutcome{waiting: &WaitingReason{err.Error(), err.Error()},
			err: fmt.Errorf("credentials to pull image %q for container %s of pod %s/%s: %w", c.Image, c.Name, pod.Namespace, pod.Name, err)}
	}
	records := r.Opts.PullRecords
	if present && policy != v1.PullAlways {
		if records == nil {
			event(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine", c.Image))
			return pullOutcome{ref: st.Image.Id, image: st.Image}
		}
		// KubeletEnsureSecretPulledImages: an image pulled with some
		// pod's pull secrets is this pod's only if it has the same
		// credentials, or if the registry accepts its own.
		must, err := records.MustPull(c.Image, st.Image.Id, func() ([]imagepull.Secret, error) {
			l, err := lookup()
			return podPullSecrets(l.creds), err
		})
		if err != nil {
			return credsFailed(err)
		}
		if !must {
			event(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", c.Image))
			return pullOutcome{ref: st.Image.Id, image: st.Image}
		}
	}
	if policy == v1.PullNever {
		// Also when the image is present but the pod may not use it
		// without a pull: as upstream, the pod is not told it is there.
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		event(v1.EventTypeWarning, EventErrImageNeverPull, msg)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageNeverPull, msg},
			err: fmt.Errorf("container %s of pod %s/%s: %s", c.Name, pod.Namespace, pod.Name, msg)}
	}
	l, err := lookup()
	if err != nil {
		return credsFailed(err)
	}
	key := ImagePullBackoffKey(pod, c.Image)
	if backoff != nil {
		if in, left := backoff.InBackoffSinceUpdate(key); in {
			msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
			event(v1.EventTypeNormal, EventBackOff, msg)
			return pullOutcome{waiting: &WaitingReason{ReasonImagePullBackOff, msg}, retry: left,
				err: fmt.Errorf("container %s of pod %s/%s: %s", c.Name, pod.Namespace, pod.Name, msg)}
		}
	}
	if records != nil {
		if err := records.PullIntent(c.Image); err != nil {
			err = fmt.Errorf("failed to record image pull intent for container image %q: %w", c.Image, err)
			return pullOutcome{waiting: &WaitingReason{ReasonErrImagePull, err.Error()}, err: err}
		}
	}
	event(v1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", c.Image))
	start := time.Now()
	ref, used, err := r.pullImage(ctx, spec, sandbox, l.creds)
	if records != nil {
		if err != nil {
			records.PullFailed(c.Image)
		} else {
			records.Pulled(c.Image, ref, pulledWith(used))
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return pullOutcome{err: fmt.Errorf("pull image %q for pod %s/%s aborted: %w", c.Image, pod.Namespace, pod.Name, ctx.Err())}
		}
		event(v1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		r.missingSecretsEvent(pod, l.missing)
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
	if r.Opts.Recorder != nil {
		// Pulls are not queued here: the pull took as long as the wait.
		took := time.Since(start).Truncate(time.Millisecond)
		event(v1.EventTypeNormal, EventPulled, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
			c.Image, took, took, r.imageSize(ctx, spec)))
	}
	return pullOutcome{ref: ref}
}

// imageSize is the size of a pulled image for the Pulled event, 0 when the
// runtime cannot tell: like upstream, the event does not depend on it.
func (r *Runtime) imageSize(ctx context.Context, spec *runtimeapi.ImageSpec) uint64 {
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	st, err := r.Img.ImageStatus(sctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		return 0
	}
	return st.GetImage().GetSize()
}
