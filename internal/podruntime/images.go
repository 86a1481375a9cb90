package podruntime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/metrics"
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
	MustPull(image, imageRef string, podCreds func() (imagepull.PodCredentials, error)) (bool, error)
	PullIntent(image string) error
	Pulled(image, imageRef string, creds *imagepull.Credentials)
	PullFailed(image string)
}

// PullPolicy is the container's pull policy, defaulted as the API server
// does for pods that did not go through it (static pods): Always for
// :latest or untagged images, IfNotPresent otherwise.
func PullPolicy(c *v1.Container) v1.PullPolicy {
	return defaultedPullPolicy(c.ImagePullPolicy, c.Image)
}

// ImageVolumePullPolicy is an image volume's pull policy, defaulted as the
// API server defaults it: as a container's.
func ImageVolumePullPolicy(src *v1.ImageVolumeSource) v1.PullPolicy {
	return defaultedPullPolicy(src.PullPolicy, src.Reference)
}

func defaultedPullPolicy(policy v1.PullPolicy, image string) v1.PullPolicy {
	if policy != "" {
		return policy
	}
	if imageTag(image) == "latest" {
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

// pullTarget is an image a pod needs, as ensure pulls it: a container's
// image or an image volume's.
type pullTarget struct {
	image  string        // the reference as the pod names it
	policy v1.PullPolicy // defaulted
	// of names what needs the image in errors ("container app").
	of string
	// event records an event about the pull: on the container for its
	// image, on the pod for an image volume's, as upstream.
	event func(eventtype, reason, message string)
}

// ensureImage is upstream's EnsureImageExists for the container's image:
// it applies the pull policy, the pull backoff, and pulls with the pod's
// pull secrets, recording upstream's events about the container's image.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandbox *runtimeapi.PodSandboxConfig, backoff *Backoff) pullOutcome {
	return r.ensure(ctx, pod, pullTarget{
		image: c.Image, policy: PullPolicy(c), of: "container " + c.Name,
		event: func(eventtype, reason, message string) { r.containerEvent(pod, c.Name, "", eventtype, reason, message) },
	}, sandbox, backoff)
}

// ensureVolumeImage is upstream's EnsureImageExists for an image volume,
// as its getImageVolumes calls it: the volume's pull policy, the pod's
// pull secrets and the same pull backoff as a container's image, its
// events on the pod.
func (r *Runtime) ensureVolumeImage(ctx context.Context, pod *v1.Pod, vol *v1.Volume, sandbox *runtimeapi.PodSandboxConfig, backoff *Backoff) pullOutcome {
	return r.ensure(ctx, pod, pullTarget{
		image: vol.Image.Reference, policy: ImageVolumePullPolicy(vol.Image), of: "image volume " + vol.Name,
		event: func(eventtype, reason, message string) { r.podEvent(pod, eventtype, reason, message) },
	}, sandbox, backoff)
}

// ensure applies t's pull policy, the pull backoff and the records of
// pulled images, and pulls with the pod's pull secrets when it must.
func (r *Runtime) ensure(ctx context.Context, pod *v1.Pod, t pullTarget, sandbox *runtimeapi.PodSandboxConfig, backoff *Backoff) pullOutcome {
	event, image := t.event, t.image
	spec := &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image}
	policy := t.policy
	// What kubelet_image_manager_ensure_image_requests_total tells of this
	// request, as upstream's EnsureImageExists: nil until known.
	var found, pullRequired *bool
	defer func() {
		metrics.EnsureImageRequests.WithLabelValues(metrics.EnsureImageLabels(string(policy), found, pullRequired)).Inc()
	}()
	sctx, cancel := r.callCtx(ctx)
	st, err := r.Img.ImageStatus(sctx, &runtimeapi.ImageStatusRequest{Image: spec})
	cancel()
	if err != nil {
		event(v1.EventTypeWarning, events.FailedToInspectImage, fmt.Sprintf("Failed to inspect image %q: %v", image, err))
		err = fmt.Errorf("inspect image %q for %s of pod %s/%s: %w", image, t.of, pod.Namespace, pod.Name, err)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageInspect, err.Error()}, err: err}
	}
	present := st.GetImage() != nil
	if policy != v1.PullAlways {
		// Upstream does not look for the image it pulls anyway.
		found = &present
	}
	no, yes := false, true
	// As upstream, the credentials are looked up once, when a pull or the
	// check of a pulled image's records needs them. A pull secret that
	// does not decode fails every sync the same way, with its error as
	// the reason.
	lookup := sync.OnceValues(func() (credLookup, error) {
		creds, missing, err := r.pullCredentials(ctx, pod, image)
		return credLookup{creds, missing}, err
	})
	credsFailed := func(err error) pullOutcome {
		return pullOutcome{waiting: &WaitingReason{err.Error(), err.Error()},
			err: fmt.Errorf("credentials to pull image %q for %s of pod %s/%s: %w", image, t.of, pod.Namespace, pod.Name, err)}
	}
	records := r.Opts.PullRecords
	if present && policy != v1.PullAlways {
		pullRequired = &no
		if records == nil {
			event(v1.EventTypeNormal, events.PulledImage, fmt.Sprintf("Container image %q already present on machine", image))
			return pullOutcome{ref: st.Image.Id, image: st.Image}
		}
		// KubeletEnsureSecretPulledImages: an image pulled with some
		// pod's pull secrets, or with a plugin's credentials for some
		// service account, is this pod's only if it has the same
		// credentials or account, or if the registry accepts its own.
		must, err := records.MustPull(image, st.Image.Id, func() (imagepull.PodCredentials, error) {
			l, err := lookup()
			return podCredentials(l.creds), err
		})
		if err != nil {
			pullRequired = nil
			return credsFailed(err)
		}
		if !must {
			event(v1.EventTypeNormal, events.PulledImage, fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image))
			return pullOutcome{ref: st.Image.Id, image: st.Image}
		}
	}
	if policy != v1.PullNever || present {
		// An absent image under Never is refused before upstream asks.
		pullRequired = &yes
	}
	if policy == v1.PullNever {
		// Also when the image is present but the pod may not use it
		// without a pull: as upstream, the pod is not told it is there.
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		event(v1.EventTypeWarning, events.ErrImageNeverPullPolicy, msg)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImageNeverPull, msg},
			err: fmt.Errorf("%s of pod %s/%s: %s", t.of, pod.Namespace, pod.Name, msg)}
	}
	l, err := lookup()
	if err != nil {
		return credsFailed(err)
	}
	key := ImagePullBackoffKey(pod, image)
	if backoff != nil {
		if in, left := backoff.InBackoffSinceUpdate(key); in {
			msg := fmt.Sprintf("Back-off pulling image %q", image)
			event(v1.EventTypeNormal, events.BackOffPullImage, msg)
			return pullOutcome{waiting: &WaitingReason{ReasonImagePullBackOff, msg}, retry: left,
				err: fmt.Errorf("%s of pod %s/%s: %s", t.of, pod.Namespace, pod.Name, msg)}
		}
	}
	if records != nil {
		if err := records.PullIntent(image); err != nil {
			err = fmt.Errorf("failed to record image pull intent for container image %q: %w", image, err)
			return pullOutcome{waiting: &WaitingReason{ReasonErrImagePull, err.Error()}, err: err}
		}
	}
	event(v1.EventTypeNormal, events.PullingImage, fmt.Sprintf("Pulling image %q", image))
	queued := time.Now()
	var ref string
	var used *registryauth.Credential
	start := queued
	release, err := r.Opts.Pulls.Acquire(ctx)
	if err == nil {
		start = time.Now()
		ref, used, err = r.pullImage(ctx, spec, sandbox, l.creds)
		release()
	}
	// The pod's start SLI leaves its pulls out, their waits for a turn
	// and failed ones included.
	metrics.RecordPodImagePull(pod.UID, time.Since(queued))
	if records != nil {
		if err != nil {
			records.PullFailed(image)
		} else {
			records.Pulled(image, ref, pulledWith(used))
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return pullOutcome{err: fmt.Errorf("pull image %q for pod %s/%s aborted: %w", image, pod.Namespace, pod.Name, ctx.Err())}
		}
		event(v1.EventTypeWarning, events.FailedToPullImage, fmt.Sprintf("Failed to pull image %q: %v", image, err))
		r.missingSecretsEvent(pod, l.missing)
		var retry time.Duration
		if backoff != nil {
			backoff.Next(key, backoff.Now())
			retry = backoff.Get(key)
		}
		err = fmt.Errorf("pull image %q for %s of pod %s/%s: %w", image, t.of, pod.Namespace, pod.Name, err)
		return pullOutcome{waiting: &WaitingReason{ReasonErrImagePull, err.Error()}, retry: retry, err: err}
	}
	if backoff != nil {
		backoff.Reset(key)
	}
	took := time.Since(start)
	size := r.imageSize(ctx, spec)
	metrics.ImagePullDuration.WithLabelValues(metrics.ImageSizeBucket(size)).Observe(took.Seconds())
	if r.Opts.Recorder != nil {
		// The wait is that for the pull's turn (Pulls).
		event(v1.EventTypeNormal, events.PulledImage, fmt.Sprintf("Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
			image, took.Truncate(time.Millisecond), time.Since(queued).Truncate(time.Millisecond), size))
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
