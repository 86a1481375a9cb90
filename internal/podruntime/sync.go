package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/internal/volume"
)

// SyncResult is the outcome of one SyncPod pass, for the pod worker.
type SyncResult struct {
	// Status is the pod as observed after the pass.
	Status *PodStatus
	// APIStatus is the pod's status as the API shows it.
	APIStatus v1.PodStatus
	// RetryAfter > 0 asks for another SyncPod after this long: a crash-loop
	// or image pull backoff expires then. Containers still running (an init
	// container) are not a reason: their exit comes as a PLEG event.
	RetryAfter time.Duration
	// Err is the pass's error, also reflected in waiting reasons. The
	// worker retries failed passes with its own policy.
	Err error
	// Settled: the pass ended without error and its last observation
	// calls for no action, so another pass on the same runtime state
	// would do nothing.
	Settled bool
}

// SyncPod performs one sync pass for a pod that should run, as upstream's
// SyncPod: observe, compute the actions, kill what must die, (re)create the
// sandbox, start the next init container or the app containers. backoff is
// the crash-loop backoff (nil: none). Cancelling ctx (the pod is being
// deleted) aborts a pull or a start promptly. vols are the pod's volumes,
// set up on the host, which its containers mount. probes are the results of
// the pod's probes (nil: none yet): a liveness or startup failure kills its
// container, and readiness shows in the status.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, vols map[string]volume.Mounted, backoff *Backoff, probes results.Pod) SyncResult {
	now := passTime(backoff)
	status, err := r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		// As upstream's pod worker when its cache cannot give the pod's
		// status.
		if ctx.Err() == nil {
			r.podEvent(pod, v1.EventTypeWarning, events.FailedSync, fmt.Sprintf("error determining status: %v", err))
		}
		return r.result(ctx, pod, nil, nil, nil, probes, 0, err, now)
	}
	return r.sync(ctx, pod, vols, backoff, probes, status, now)
}

// ObservePod reports the pod's status without acting on it: its volumes
// are not ready, so nothing of it may be created yet, and containers not
// created show ContainerCreating. fresh: the runtime is known to hold
// nothing of the pod (see SyncNewPod).
func (r *Runtime) ObservePod(ctx context.Context, pod *v1.Pod, fresh bool) SyncResult {
	now := time.Now()
	if pastActiveDeadline(pod, now) {
		r.deadlineEvent(pod)
	}
	if fresh {
		empty := &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
		return r.result(ctx, pod, nil, empty, func(context.Context) *PodStatus { return empty }, nil, 0, nil, now)
	}
	return r.result(ctx, pod, nil, nil, nil, nil, 0, nil, now)
}

// SyncNewPod is SyncPod for a pod the runtime is known to hold nothing of:
// the caller listed the runtime after anything of this process could have
// made part of the pod, and found none. The pass starts from that empty
// observation instead of listing the pod, as upstream's first sync of a pod
// starts from the PLEG's cache: two CRI calls fewer per new pod, each a scan
// of every sandbox or container in containerd.
func (r *Runtime) SyncNewPod(ctx context.Context, pod *v1.Pod, vols map[string]volume.Mounted, backoff *Backoff, probes results.Pod) SyncResult {
	return r.sync(ctx, pod, vols, backoff, probes, &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}, passTime(backoff))
}

func passTime(backoff *Backoff) time.Time {
	if backoff != nil {
		return backoff.Now()
	}
	return time.Now()
}

func (r *Runtime) sync(ctx context.Context, pod *v1.Pod, vols map[string]volume.Mounted, backoff *Backoff, probes results.Pod, status *PodStatus, now time.Time) SyncResult {
	if pastActiveDeadline(pod, now) {
		return r.syncPastDeadline(ctx, pod, probes, status, now)
	}
	actions := ComputePodActions(pod, status, backoff, probes, now)
	s := &syncPass{r: r, pod: pod, vols: vols, status: status, backoff: backoff, waiting: map[string]WaitingReason{}}
	for _, b := range actions.BackingOff {
		s.waiting[b.Name] = WaitingReason{ReasonCrashLoopBackOff, b.Message}
		s.retryAfter(b.Remaining)
		r.containerEvent(pod, b.Name, "", v1.EventTypeWarning, events.BackOffStartContainer,
			fmt.Sprintf("Back-off restarting failed container %s in pod %s", b.Name, podref.Desc(pod)))
	}
	s.run(ctx, actions)
	s.removeDeadInstances(ctx)
	res := r.result(ctx, pod, s.waiting, status, s.observe, probes, s.retry, errors.Join(s.errs...), now)
	if s.resizeErr != nil {
		setResizeInProgress(&res.APIStatus, pod, res.Status, s.resizeErr, &pod.Status, now)
	}
	s.resizeEvents(res.Status)
	res.Settled = res.Err == nil && res.Status != status && ComputePodActions(pod, res.Status, backoff, probes, now).none()
	return res
}

// result observes the pod again, through observe when it can tell (nil: it
// cannot), else by listing it, and builds the API status.
func (r *Runtime) result(ctx context.Context, pod *v1.Pod, waiting map[string]WaitingReason, before *PodStatus, observe func(context.Context) *PodStatus, probes results.Pod, retry time.Duration, err error, now time.Time) SyncResult {
	status := before
	if ctx.Err() == nil {
		var after *PodStatus
		if observe != nil {
			after = observe(ctx)
		}
		var serr error
		if after == nil {
			after, serr = r.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		}
		if serr == nil {
			status = after
		} else {
			err = errors.Join(err, serr)
		}
	}
	api := GenerateAPIStatus(pod, status, waiting, probes, &pod.Status, now)
	setResizeInProgress(&api, pod, status, nil, &pod.Status, now)
	retry = deadlineRetry(pod, &api, retry, err != nil, now)
	if r.Opts.NodeIP != "" {
		api.HostIP = r.Opts.NodeIP
		api.HostIPs = []v1.HostIP{{IP: r.Opts.NodeIP}}
		// A host-network pod has the node's IPs, as upstream's
		// generateAPIPodStatus gives it: once set, they stay.
		if pod.Spec.HostNetwork && api.PodIP == "" {
			api.PodIP = r.Opts.NodeIP
			api.PodIPs = []v1.PodIP{{IP: r.Opts.NodeIP}}
		}
	}
	return SyncResult{Status: status, APIStatus: api, RetryAfter: retry, Err: err}
}

type syncPass struct {
	r       *Runtime
	pod     *v1.Pod
	vols    map[string]volume.Mounted
	status  *PodStatus
	backoff *Backoff
	waiting map[string]WaitingReason
	retry   time.Duration
	errs    []error
	// resizeErr is the failure of the pass's in-place resize; resized:
	// the pass resized the pod.
	resizeErr error
	resized   bool

	sandboxID     string
	sandboxConfig *runtimeapi.PodSandboxConfig
	podIPs        []string
	// volumeImages are the pulls of the pod's image volumes, by volume
	// name; nil until the pass is about to create its first container.
	volumeImages map[string]pullOutcome

	// What the pass changed, for observe: whether it stopped anything, the
	// sandbox it created, the containers it created (oldest first) and the
	// dead instances it removed.
	stopped    bool
	newSandbox *runtimeapi.PodSandboxStatus
	created    []string
	removed    map[string]bool
}

func (s *syncPass) retryAfter(d time.Duration) {
	if d > 0 && (s.retry == 0 || d < s.retry) {
		s.retry = d
	}
}

func (s *syncPass) fail(err error) { s.errs = append(s.errs, err) }

func (s *syncPass) run(ctx context.Context, a PodActions) {
	pod, r := s.pod, s.r
	if a.CreateSandbox && a.SandboxID != "" {
		r.podEvent(pod, v1.EventTypeNormal, events.SandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
	}
	// A new pod's actions kill it before its first sandbox, as upstream's:
	// with nothing of it in the runtime, that stops nothing, and the pass
	// can still tell its own result without listing the pod.
	s.stopped = (a.KillPod && (len(s.status.SandboxStatuses) > 0 || len(s.status.ContainerStatuses) > 0)) || len(a.ContainersToKill) > 0
	if a.KillPod {
		if err := r.stopPod(ctx, pod, s.status, podGracePeriod(pod)); err != nil {
			s.fail(fmt.Errorf("kill pod %s/%s before recreating its sandbox: %w", pod.Namespace, pod.Name, err))
			return
		}
	} else {
		for _, k := range a.ContainersToKill {
			r.killingEvent(pod, k.ID, k.Name, k.Message)
			grace := podGracePeriod(pod)
			if k.GracePeriod != nil {
				grace = *k.GracePeriod
			}
			if err := r.killContainer(ctx, r.containerKill(pod, s.status, k.ID, k.Name, grace, nil)); err != nil {
				s.fail(fmt.Errorf("%s: %w", k.Message, err))
				return
			}
		}
	}
	if r.Opts.Cgroups != nil && (a.CreateSandbox || !a.KillPod) {
		// As upstream's SyncPod, the pod's cgroup exists with its limits
		// before its sandbox is run in it (once made, this only counts the
		// pod as active for the QoS cgroups).
		if err := r.Opts.Cgroups.EnsureExists(pod); err != nil {
			r.podEvent(pod, v1.EventTypeWarning, events.FailedToCreatePodContainer, fmt.Sprintf("unable to ensure pod container exists: %v", err))
			s.fail(fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err))
			return
		}
	}
	switch {
	case !a.KillPod && len(a.ContainersToResize)+len(a.InitContainersToResize) > 0:
		s.resizeContainers(ctx, toResize(pod, a))
	case !a.KillPod && a.UpdatePodResources:
		// Containers restart for a resize: the pod cgroup takes the
		// allocation before they start, as upstream's doPodResizeAction.
		s.resized = true
		if u := r.Opts.cgroupUpdater(); u != nil {
			if err := u.Update(pod); err != nil {
				s.resizeFailed(fmt.Errorf("resize pod %s/%s: %w", pod.Namespace, pod.Name, err))
			}
		}
	}
	if !a.CreateSandbox && (a.KillPod || a.SandboxID == "") {
		return
	}
	if a.CreateSandbox && !pod.Spec.HostNetwork {
		// As upstream's SyncPod, a pod on the pod network waits for the
		// runtime's network. Upstream asks at every pass; only a sandbox
		// to make needs the network, and a running pod's passes are spared
		// the call.
		if err := r.networkError(ctx); err != nil {
			msg := fmt.Sprintf("network is not ready: %v", err)
			r.podEvent(pod, v1.EventTypeWarning, events.NetworkNotReady, msg)
			s.fail(fmt.Errorf("pod %s/%s: %s", pod.Namespace, pod.Name, msg))
			return
		}
	}
	if a.CreateSandbox && !hostUsers(pod) {
		// As upstream's SyncPod: a failure anywhere in the pass counts.
		metrics.StartedUserNamespacedPods.Inc()
		defer func() {
			if len(s.errs) > 0 {
				metrics.StartedUserNamespacedPodsErrors.Inc()
			}
		}()
	}
	if !hostUsers(pod) {
		// As upstream, the user namespace is settled while the sandbox's
		// configuration is made, and its refusal is a failure to create the
		// sandbox: nothing of the pod is created.
		if err := r.checkUserNamespaceSupport(ctx, pod); err != nil {
			if a.CreateSandbox {
				r.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
			}
			s.fail(fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
			return
		}
	}
	cfg, dnsEvents, err := sandboxConfig(pod, a.Attempt, r.Opts)
	if !a.CreateSandbox && len(a.EphemeralContainersToStart)+len(a.InitContainersToStart)+len(a.ContainersToStart) == 0 {
		// Upstream makes the sandbox's configuration, and says what its
		// DNS calls for, only for a sandbox or containers to start.
		dnsEvents = nil
	}
	for _, e := range dnsEvents {
		if e.node {
			r.nodeEvent(v1.EventTypeWarning, e.reason, e.message)
		} else {
			r.podEvent(pod, v1.EventTypeWarning, e.reason, e.message)
		}
	}
	if err != nil {
		if a.CreateSandbox {
			r.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
		}
		s.fail(err)
		return
	}
	s.sandboxConfig, s.sandboxID, s.podIPs = cfg, a.SandboxID, s.status.IPs
	if a.CreateSandbox && !s.createSandbox(ctx) {
		return
	}
	// Ephemeral containers start first, as upstream's, so that an init
	// container failing to start does not hold a debugger back.
	for _, i := range a.EphemeralContainersToStart {
		s.startContainer(ctx, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for _, i := range a.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		if !s.startContainer(ctx, c) && !isRestartableInit(c) {
			return
		}
	}
	for _, i := range a.ContainersToStart {
		s.startContainer(ctx, &pod.Spec.Containers[i])
	}
}

func (s *syncPass) createSandbox(ctx context.Context) bool {
	pod, r := s.pod, s.r
	failed := func(err error) {
		r.podEvent(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, fmt.Sprintf("Failed to create pod sandbox: %v", err))
	}
	if err := os.MkdirAll(s.sandboxConfig.LogDirectory, 0o755); err != nil {
		failed(err)
		s.fail(fmt.Errorf("create log directory of pod %s/%s: %w", pod.Namespace, pod.Name, err))
		return false
	}
	// The RuntimeClass is resolved at each creation of the sandbox, as
	// upstream's createPodSandbox does: a class that does not exist fails
	// the creation (FailedCreatePodSandBox with the API's NotFound), and
	// the pod stays Pending, retried, until the class appears.
	handler := ""
	if rc := r.Opts.RuntimeClasses; rc != nil {
		h, err := rc.LookupRuntimeHandler(ctx, pod.Spec.RuntimeClassName)
		if err != nil {
			failed(err)
			s.fail(fmt.Errorf("create sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err))
			return false
		}
		handler = h
	}
	sctx, cancel := r.createCtx(ctx)
	defer cancel()
	resp, err := r.RT.RunPodSandbox(sctx, &runtimeapi.RunPodSandboxRequest{Config: s.sandboxConfig, RuntimeHandler: handler})
	if err != nil {
		failed(err)
		s.fail(fmt.Errorf("create sandbox of pod %s/%s (attempt %d): %w", pod.Namespace, pod.Name, s.sandboxConfig.Metadata.Attempt, err))
		return false
	}
	s.sandboxID = resp.PodSandboxId
	if ctx.Err() != nil {
		// The pod is being killed: its kill finds the sandbox and stops it.
		s.fail(fmt.Errorf("create sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, ctx.Err()))
		return false
	}
	// Each call has a timeout of its own, as Options says.
	sctx, cancel = r.callCtx(ctx)
	defer cancel()
	st, err := r.RT.PodSandboxStatus(sctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.sandboxID})
	if err != nil {
		r.podEvent(pod, v1.EventTypeWarning, events.FailedStatusPodSandBox, fmt.Sprintf("Unable to get pod sandbox status: %v", err))
		s.fail(fmt.Errorf("status of new sandbox %s of pod %s/%s: %w", s.sandboxID, pod.Namespace, pod.Name, err))
		return false
	}
	s.newSandbox = st.Status
	s.podIPs = sandboxIPs(st.Status)
	// The new sandbox's containers start from a clean slate, but restart
	// counts continue from the old instances, as upstream.
	return true
}

// containerPodIPs are the pod's IPs as its containers' status.podIP(s)
// show them: the sandbox's, or for a host-network pod (whose sandbox has
// none) the node's, as upstream's SyncPod takes them from the API status
// it made. Hooks keep the sandbox's alone, as upstream's handler runner
// asks the runtime.
func (s *syncPass) containerPodIPs() []string {
	if len(s.podIPs) == 0 && s.pod.Spec.HostNetwork && s.r.Opts.NodeIP != "" {
		return []string{s.r.Opts.NodeIP}
	}
	return s.podIPs
}

// startContainer pulls, creates and starts one container instance, runs
// its postStart hook, and reports whether it runs. It counts the start in
// kubelet_started_containers_total, and a failure in
// kubelet_started_containers_errors_total by the reason the container's
// status gives, as upstream's startContainer error codes (a pass that
// ends for the pod's own cancellation is no start error).
func (s *syncPass) startContainer(ctx context.Context, c *v1.Container) bool {
	typ := containerType(s.pod, c.Name)
	metrics.StartedContainers.WithLabelValues(typ).Inc()
	if s.startInstance(ctx, c) {
		return true
	}
	if code := s.waiting[c.Name].Reason; code != "" {
		metrics.StartedContainersErrors.WithLabelValues(typ, code).Inc()
	}
	return false
}

// containerType is the container_type label of the pod's container name.
func containerType(pod *v1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return metrics.ContainerTypeInit
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return metrics.ContainerTypeEphemeral
		}
	}
	return metrics.ContainerTypeContainer
}

// startInstance is startContainer's work.
func (s *syncPass) startInstance(ctx context.Context, c *v1.Container) bool {
	pod, r := s.pod, s.r
	restartCount := 0
	prev := s.status.FindContainer(c.Name)
	if prev != nil {
		restartCount = prev.RestartCount + 1
		if s.backoff != nil && prev.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			// Record the crash for the backoff of the next restart, as
			// upstream's doBackOff does when it lets a restart through.
			s.backoff.Next(ContainerBackoffKey(pod, c), prev.FinishedAt)
		}
	}
	// Failures of the container's creation are reported as upstream's
	// startContainer does: "Error: " and the reason or the runtime's message.
	failed := func(id, message string) {
		r.containerEvent(pod, c.Name, id, v1.EventTypeWarning, events.FailedToCreateContainer, "Error: "+message)
	}
	startFailed := func(id, message string) {
		r.containerEvent(pod, c.Name, id, v1.EventTypeWarning, events.FailedToStartContainer, "Error: "+message)
	}
	s.pullVolumeImages(ctx)
	if s.volumeImageFailed(c) {
		return false
	}
	img := r.ensureImage(ctx, pod, c, s.sandboxConfig, s.pullBackoff())
	if img.err != nil {
		if img.waiting != nil {
			s.waiting[c.Name] = *img.waiting
			failed("", img.waiting.Reason)
		}
		s.retryAfter(img.retry)
		s.fail(img.err)
		return false
	}
	// Upstream verifies runAsNonRoot as it makes the container's
	// configuration: a refusal is a CreateContainerConfigError.
	// An ephemeral container's target is found first, as upstream's.
	target, err := ephemeralTarget(pod, c, s.status)
	if err == nil {
		err = r.verifyRunAsNonRoot(ctx, pod, c, img.image)
	}
	var cfg *runtimeapi.ContainerConfig
	if err == nil {
		cfg, err = ContainerConfig(ctx, pod, c, restartCount, s.containerPodIPs(), img.ref, s.vols, r.Opts)
	}
	if err == nil {
		targetPIDNamespace(cfg, target)
	}
	if err != nil {
		failed("", err.Error())
		s.waiting[c.Name] = WaitingReason{ReasonCreateContainerConfigError, err.Error()}
		s.fail(err)
		return false
	}
	// A log file left by an instance with the same restart count (its
	// container was removed) would be appended to.
	_ = os.Remove(s.sandboxConfig.LogDirectory + "/" + cfg.LogPath)
	if ctx.Err() != nil {
		s.fail(fmt.Errorf("create container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, ctx.Err()))
		return false
	}
	sctx, cancel := r.createCtx(ctx)
	defer cancel()
	created, err := r.RT.CreateContainer(sctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: s.sandboxID, Config: cfg, SandboxConfig: s.sandboxConfig,
	})
	if err != nil {
		failed("", status.Convert(err).Message())
		err = fmt.Errorf("create container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
		s.waiting[c.Name] = WaitingReason{ReasonCreateContainerError, err.Error()}
		s.fail(err)
		return false
	}
	s.created = append(s.created, created.ContainerId)
	if err := r.Opts.Actuated.set(pod.UID, c.Name, created.ContainerId, c.Resources); err != nil {
		s.fail(err)
	}
	r.containerEvent(pod, c.Name, created.ContainerId, v1.EventTypeNormal, events.CreatedContainer, "Container created")
	if ctx.Err() != nil {
		// Created, not started: the pod's kill removes it.
		s.fail(fmt.Errorf("start container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, ctx.Err()))
		return false
	}
	sctx, cancel = r.createCtx(ctx)
	defer cancel()
	if _, err := r.RT.StartContainer(sctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		startFailed(created.ContainerId, status.Convert(err).Message())
		err = fmt.Errorf("start container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
		s.waiting[c.Name] = WaitingReason{ReasonRunContainerError, err.Error()}
		s.fail(err)
		return false
	}
	r.containerEvent(pod, c.Name, created.ContainerId, v1.EventTypeNormal, events.StartedContainer, "Container started")
	r.linkContainerLog(pod.Name, pod.Namespace, c.Name, created.ContainerId, filepath.Join(s.sandboxConfig.LogDirectory, cfg.LogPath))
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		return s.postStart(ctx, c, created.ContainerId)
	}
	return true
}

// pullBackoff is the backoff of image pulls: the node's, or else the
// pass's own.
func (s *syncPass) pullBackoff() *Backoff {
	if s.r.Opts.PullBackoff != nil {
		return s.r.Opts.PullBackoff
	}
	return s.backoff
}

// pullVolumeImages pulls the image of every image volume of the pod, once
// per pass and before its first container is created, as upstream's
// getImageVolumes: a volume that no container mounts is pulled too, and a
// failed pull holds back only the containers that mount the volume
// (volumeImageFailed). The pass's volumes then carry each pulled image's
// ref, which their containers' mounts name.
func (s *syncPass) pullVolumeImages(ctx context.Context) {
	if s.volumeImages != nil {
		return
	}
	s.volumeImages = map[string]pullOutcome{}
	var vols map[string]volume.Mounted
	for i := range s.pod.Spec.Volumes {
		v := &s.pod.Spec.Volumes[i]
		if v.Image == nil {
			continue
		}
		out := s.r.ensureVolumeImage(ctx, s.pod, v, s.sandboxConfig, s.pullBackoff())
		s.volumeImages[v.Name] = out
		m, ok := s.vols[v.Name]
		if out.err != nil || !ok {
			continue
		}
		if vols == nil {
			// The caller's map is the pod's volumes as the volume-manager
			// reported them: the pass changes a copy.
			vols = maps.Clone(s.vols)
		}
		m.ImageRef = out.ref
		vols[v.Name] = m
	}
	if vols != nil {
		s.vols = vols
	}
}

// volumeImageFailed reports whether c mounts an image volume whose image
// the pass could not pull, as upstream's toKubeContainerImageVolumes: the
// container is not created, a Failed event "Error: REASON" is recorded for
// each such volume, and the container waits with the last one's reason
// (ErrImagePull, ImagePullBackOff, ErrImageNeverPull, ...).
func (s *syncPass) volumeImageFailed(c *v1.Container) bool {
	failed := false
	for _, m := range c.VolumeMounts {
		out, ok := s.volumeImages[m.Name]
		if !ok || out.err == nil {
			continue
		}
		failed = true
		if out.waiting != nil {
			s.waiting[c.Name] = *out.waiting
			s.r.containerEvent(s.pod, c.Name, "", v1.EventTypeWarning, events.FailedToCreateContainer, "Error: "+out.waiting.Reason)
		}
		s.retryAfter(out.retry)
		s.fail(fmt.Errorf("container %s: %w", c.Name, out.err))
	}
	return failed
}

// removeDeadInstances removes the exited instances of each container beyond
// the newest deadInstancesKept, as upstream's pod-container deleter does when
// a container dies: the newest is the one `kubectl logs --previous` reads
// and whose restart count the next instance continues; older ones would
// pile up in a crash loop until container GC. Instances created by this
// pass are newer than any in s.status, so they are never counted.
func (s *syncPass) removeDeadInstances(ctx context.Context) {
	if ctx.Err() != nil {
		return // the pod is being killed: its kill decides
	}
	for _, cs := range deadInstancesBeyond(s.status, deadInstancesKept) {
		sctx, cancel := s.r.callCtx(ctx)
		_, err := s.r.RT.RemoveContainer(sctx, &runtimeapi.RemoveContainerRequest{ContainerId: cs.ID})
		cancel()
		if err != nil && !isNotFound(err) {
			s.fail(fmt.Errorf("remove old instance %s of container %s of pod %s/%s: %w", cs.ID, cs.Name, s.pod.Namespace, s.pod.Name, err))
			continue
		}
		s.r.unlinkContainerLog(s.pod.Name, s.pod.Namespace, cs.Name, cs.ID)
		if s.removed == nil {
			s.removed = map[string]bool{}
		}
		s.removed[cs.ID] = true
	}
}

// observe is the pod's status after a pass that stopped nothing, built from
// the status before it and what the pass made, at one ContainerStatus per
// container created instead of listing the pod and reading every sandbox
// and container again. What changed by itself during the pass (a container
// that died) is not in it, but PLEG's next relist reports it and the worker
// syncs for it. nil when the pass stopped something or a read failed: the
// caller lists the pod then.
func (s *syncPass) observe(ctx context.Context) *PodStatus {
	if s.stopped {
		return nil
	}
	ps := &PodStatus{UID: s.status.UID, Name: s.status.Name, Namespace: s.status.Namespace}
	if s.newSandbox != nil {
		ps.SandboxStatuses = append(ps.SandboxStatuses, s.newSandbox)
	}
	ps.SandboxStatuses = append(ps.SandboxStatuses, s.status.SandboxStatuses...)
	for i := len(s.created) - 1; i >= 0; i-- {
		sctx, cancel := s.r.callCtx(ctx)
		resp, err := s.r.RT.ContainerStatus(sctx, &runtimeapi.ContainerStatusRequest{ContainerId: s.created[i]})
		cancel()
		if err != nil {
			return nil
		}
		cs := toContainerStatus(resp.Status)
		cs.SandboxID = s.sandboxID
		cs.Resources = s.r.Opts.Actuated.get(s.pod.UID, cs.Name, cs.ID)
		ps.ContainerStatuses = append(ps.ContainerStatuses, cs)
	}
	for _, cs := range s.status.ContainerStatuses {
		if !s.removed[cs.ID] {
			ps.ContainerStatuses = append(ps.ContainerStatuses, cs)
		}
	}
	ps.order()
	return ps
}

// deadInstancesKept is how many exited instances of each container of a
// pod the sync keeps: upstream's max(maximum-dead-containers-per-container
// (default 1), 1). Container GC applies the configured number.
const deadInstancesKept = 1

// deadInstancesBeyond returns the exited instances of each container name
// past the newest keep, oldest last.
func deadInstancesBeyond(status *PodStatus, keep int) []*ContainerStatus {
	var out []*ContainerStatus
	seen := map[string]int{}
	for _, cs := range status.ContainerStatuses { // newest first
		if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		seen[cs.Name]++
		if seen[cs.Name] > keep {
			out = append(out, cs)
		}
	}
	return out
}

// networkError is the runtime's network not ready, in upstream's words;
// nil when it is ready, or when the runtime did not answer: creating the
// sandbox then fails with the runtime's own error.
func (r *Runtime) networkError(ctx context.Context) error {
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	st, err := r.RT.Status(sctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil
	}
	for _, c := range st.GetStatus().GetConditions() {
		if c.Type == runtimeapi.NetworkReady {
			if c.Status {
				return nil
			}
			return fmt.Errorf("container runtime network not ready: %s=false reason:%s message:%s", c.Type, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("container runtime network not ready: %s condition missing", runtimeapi.NetworkReady)
}
