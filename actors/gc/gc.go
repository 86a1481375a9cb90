// Package gc holds the garbage-collection actor: every ContainerGCPeriod it
// removes dead containers and sandboxes (upstream's kuberuntime containerGC),
// rotates oversized container logs (upstream's container log manager, without
// compression) and removes the log directories of pods that are gone; every
// ImageGCPeriod it removes unused images (upstream's image GC manager).
//
// All CRI work runs outside the mailbox (supervision.Go); the actor holds the
// image records and the counters, and shares nothing, so that a panic
// restarts it alone. docs/gc.md describes the policies.
package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "gc"

// Defaults (upstream's).
const (
	DefaultContainerGCPeriod = time.Minute
	DefaultImageGCPeriod     = 5 * time.Minute
	DefaultPodLogsDir        = "/var/log/pods"
	// podListTimeout bounds the wait for the pod-manager's pods.
	podListTimeout = 5 * time.Second
	// callTimeout bounds one CRI call.
	callTimeout = 2 * time.Minute
)

// Params configure the gc actor.
type Params struct {
	Runtime    runtimeapi.RuntimeServiceClient
	Images     runtimeapi.ImageServiceClient
	PodManager *actor.PID
	// Config supplies imageGCHighThresholdPercent, imageGCLowThresholdPercent,
	// imageMinimumGCAge, imageMaximumGCAge, containerLogMaxSize and
	// containerLogMaxFiles.
	Config             *kubeletconfigv1beta1.KubeletConfiguration
	ContainerGCPeriod  time.Duration // default 1 min
	ImageGCPeriod      time.Duration // default 5 min
	MinContainerAge    time.Duration // upstream MinAge: 0
	MaxPerPodContainer int           // upstream: 1
	MaxContainers      int           // upstream: -1 (no limit)
	PodLogsDir         string        // default /var/log/pods
	RootDir            string        // not used yet (see docs/gc.md)
	Log                zerolog.Logger
}

// Actor is the gc actor.
type Actor struct {
	p     Params
	log   zerolog.Logger
	began time.Time

	containerPass containerPass
	imagePolicy   imagePolicy
	images        map[string]*imageRecord

	// awaitingPods is true between asking the pod-manager and getting its
	// answer; collecting is true until the pass is done.
	awaitingPods bool
	collecting   bool
	knownAt      time.Time
	imaging      bool

	cancelContainer, cancelImage func() bool

	totals       totals
	lastRun      time.Time
	lastErr      error
	lastErrCount int
}

type totals struct {
	containerPasses, imagePasses int
	containers, sandboxes        int
	logsRotated, logDirs         int
	images                       int
	bytes                        uint64
}

// New returns a producer of the gc actor.
func New(p Params) actor.Producer {
	if p.ContainerGCPeriod <= 0 {
		p.ContainerGCPeriod = DefaultContainerGCPeriod
	}
	if p.ImageGCPeriod <= 0 {
		p.ImageGCPeriod = DefaultImageGCPeriod
	}
	if p.PodLogsDir == "" {
		p.PodLogsDir = DefaultPodLogsDir
	}
	return func() actor.Actor {
		log := p.Log.With().Str("actor", Kind).Logger()
		a := &Actor{p: p, log: log, images: map[string]*imageRecord{}}
		a.containerPass = containerPass{
			Runtime: p.Runtime, PodLogsDir: p.PodLogsDir, Log: log,
			Policy: containerPolicy{MinAge: p.MinContainerAge, MaxPerPodContainer: p.MaxPerPodContainer, MaxContainers: p.MaxContainers},
		}
		a.imagePolicy = imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
		if c := p.Config; c != nil {
			if c.ImageGCHighThresholdPercent != nil {
				a.imagePolicy.HighThresholdPercent = int(*c.ImageGCHighThresholdPercent)
			}
			if c.ImageGCLowThresholdPercent != nil {
				a.imagePolicy.LowThresholdPercent = int(*c.ImageGCLowThresholdPercent)
			}
			a.imagePolicy.MinAge = c.ImageMinimumGCAge.Duration
			a.imagePolicy.MaxAge = c.ImageMaximumGCAge.Duration
			a.containerPass.LogMaxFiles = 5
			if c.ContainerLogMaxFiles != nil {
				a.containerPass.LogMaxFiles = int(*c.ContainerLogMaxFiles)
			}
			size := c.ContainerLogMaxSize
			if size == "" {
				size = "10Mi"
			}
			if q, err := resource.ParseQuantity(size); err == nil {
				a.containerPass.LogMaxSize = q.Value()
			} else {
				log.Warn().Err(err).Str("containerLogMaxSize", size).Msg("log rotation disabled")
			}
		}
		return a
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.began = time.Now()
		// The first container pass waits a period: the pod-manager's set is
		// only complete once every source has sent its pods.
		a.cancelContainer = supervision.After(ctx, a.p.ContainerGCPeriod, &messages.ContainerGC{})
		a.imageGC(ctx)
	case *actor.Restarting, *actor.Stopping:
		for _, cancel := range []func() bool{a.cancelContainer, a.cancelImage} {
			if cancel != nil {
				cancel()
			}
		}
	case *messages.ContainerGC:
		a.containerGC(ctx)
	case *messages.PodList:
		if !a.awaitingPods {
			return
		}
		a.awaitingPods = false
		if !m.SourcesReady {
			// Until every source has sent its pods, a pod the pod-manager
			// does not know may still be wanted: no pass yet.
			a.collecting = false
			a.cancelContainer = supervision.After(ctx, a.p.ContainerGCPeriod, &messages.ContainerGC{})
			return
		}
		known := make(map[types.UID]bool, len(m.Pods)+len(m.Active))
		for _, p := range m.Pods {
			known[p.UID] = true
		}
		for _, uid := range m.Active {
			known[uid] = true
		}
		pass, knownAt := a.containerPass, a.knownAt
		supervision.Go(ctx, func() messages.Message {
			return pass.Run(context.Background(), known, knownAt)
		})
	case *actor.DeadLetterResponse, error:
		// The pod-manager did not answer (PipeTo delivers the failure).
		if !a.awaitingPods {
			return
		}
		a.awaitingPods, a.collecting = false, false
		a.log.Warn().Interface("reason", m).Msg("container gc skipped: no pod list from the pod-manager")
		a.cancelContainer = supervision.After(ctx, a.p.ContainerGCPeriod, &messages.ContainerGC{})
	case *messages.ContainerGCDone:
		a.containerDone(ctx, m)
	case *messages.ImageGC:
		a.imageGC(ctx)
	case *messages.ImagesDetected:
		a.imagesDetected(ctx, m)
	case *messages.ImageGCDone:
		a.imageDone(ctx, m)
	case *messages.HealthRequest:
		ctx.Respond(a.health())
	}
}

func (a *Actor) containerGC(ctx actor.Context) {
	if a.collecting {
		return
	}
	if a.p.PodManager == nil || a.p.Runtime == nil {
		a.log.Warn().Msg("container gc disabled: no pod-manager or runtime")
		return
	}
	a.collecting, a.awaitingPods = true, true
	a.knownAt = time.Now()
	ctx.RequestFuture(a.p.PodManager, &messages.ListPods{}, podListTimeout).PipeTo(ctx.Self())
}

func (a *Actor) containerDone(ctx actor.Context, m *messages.ContainerGCDone) {
	// A pass started before a restart still counts, but its timer chain
	// ended with the restart: only the current chain reschedules.
	if a.collecting {
		a.collecting = false
		a.cancelContainer = supervision.After(ctx, a.p.ContainerGCPeriod, &messages.ContainerGC{})
	}
	t := &a.totals
	t.containerPasses++
	t.containers += m.ContainersRemoved
	t.sandboxes += m.SandboxesRemoved
	t.logsRotated += m.LogsRotated
	t.logDirs += m.LogDirsRemoved
	a.lastRun = m.Started
	a.noteErrs(m.Errs)
	ev := a.log.Info()
	if len(m.Errs) > 0 {
		ev = a.log.Warn().Errs("errors", m.Errs)
	}
	ev.Str("pass", "container").Dur("duration", m.Duration).
		Int("containersRemoved", m.ContainersRemoved).Int("sandboxesRemoved", m.SandboxesRemoved).
		Int("imagesRemoved", 0).Uint64("bytesFreed", 0).
		Int("logsRotated", m.LogsRotated).Int("rotatedLogsRemoved", m.RotatedLogsRemoved).Int("logDirsRemoved", m.LogDirsRemoved).
		Int("totalContainersRemoved", t.containers).Int("totalSandboxesRemoved", t.sandboxes).
		Msg("container gc done")
}

func (a *Actor) noteErrs(errs []error) {
	if len(errs) > 0 {
		a.lastErr, a.lastErrCount = errs[0], len(errs)
	} else {
		a.lastErr, a.lastErrCount = nil, 0
	}
}

func (a *Actor) imageGC(ctx actor.Context) {
	if a.imaging {
		return
	}
	if a.p.Images == nil || a.p.Runtime == nil {
		a.log.Warn().Msg("image gc disabled: no image service")
		return
	}
	a.imaging = true
	rt, img := a.p.Runtime, a.p.Images
	supervision.Go(ctx, func() messages.Message { return detect(context.Background(), rt, img) })
}

func (a *Actor) imagesDetected(ctx actor.Context, m *messages.ImagesDetected) {
	if !a.imaging {
		return // from before a restart: this instance runs its own pass
	}
	if m.Err != nil {
		a.imaging = false
		a.noteErrs([]error{m.Err})
		a.log.Warn().Err(m.Err).Msg("image gc failed")
		a.cancelImage = supervision.After(ctx, a.p.ImageGCPeriod, &messages.ImageGC{})
		return
	}
	inUse := imagesInUse(m.Containers)
	detectImages(a.images, m.Images, inUse, m.At)
	choices := selectImages(m.Images, inUse, m.SandboxImage, m.CapacityBytes, m.AvailableBytes, a.imagePolicy, m.At, a.began, a.images)
	if len(choices) == 0 {
		a.imageDone(ctx, &messages.ImageGCDone{Started: m.At, Duration: time.Since(m.At)})
		return
	}
	if m.CapacityBytes > 0 {
		a.log.Info().Int("usagePercent", 100-int(m.AvailableBytes*100/m.CapacityBytes)).
			Int("highThresholdPercent", a.imagePolicy.HighThresholdPercent).Int("candidates", len(choices)).Msg("removing unused images")
	}
	img, log := a.p.Images, a.log
	supervision.Go(ctx, func() messages.Message {
		done := &messages.ImageGCDone{Started: m.At}
		for _, c := range choices {
			cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			_, err := img.RemoveImage(cctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: c.id}})
			cancel()
			if err != nil {
				done.Errs = append(done.Errs, fmt.Errorf("remove image %s: %w", c.id, err))
				continue
			}
			log.Info().Str("image", c.id).Uint64("size", c.size).Str("reason", c.reason).Msg("removed image")
			done.ImagesRemoved = append(done.ImagesRemoved, c.id)
			done.BytesFreed += c.size
		}
		done.Duration = time.Since(m.At)
		return done
	})
}

func (a *Actor) imageDone(ctx actor.Context, m *messages.ImageGCDone) {
	if a.imaging {
		a.imaging = false
		a.cancelImage = supervision.After(ctx, a.p.ImageGCPeriod, &messages.ImageGC{})
	}
	for _, id := range m.ImagesRemoved {
		delete(a.images, id)
	}
	t := &a.totals
	t.imagePasses++
	t.images += len(m.ImagesRemoved)
	t.bytes += m.BytesFreed
	a.lastRun = m.Started
	a.noteErrs(m.Errs)
	ev := a.log.Info()
	if len(m.Errs) > 0 {
		ev = a.log.Warn().Errs("errors", m.Errs)
	}
	ev.Str("pass", "image").Dur("duration", m.Duration).
		Int("containersRemoved", 0).Int("sandboxesRemoved", 0).
		Int("imagesRemoved", len(m.ImagesRemoved)).Uint64("bytesFreed", m.BytesFreed).
		Int("totalImagesRemoved", t.images).Uint64("totalBytesFreed", t.bytes).
		Msg("image gc done")
}

// health is always healthy (upstream does not fail /healthz on GC); the
// detail carries the counters for the dashboard.
func (a *Actor) health() *messages.HealthReport {
	t := a.totals
	detail := fmt.Sprintf("%d container passes, %d image passes; removed %d containers, %d sandboxes, %d images (%d bytes); rotated %d logs",
		t.containerPasses, t.imagePasses, t.containers, t.sandboxes, t.images, t.bytes, t.logsRotated)
	if a.lastErr != nil {
		detail += fmt.Sprintf("; last pass: %d errors, first: %v", a.lastErrCount, a.lastErr)
	}
	return &messages.HealthReport{Name: Kind, Healthy: true, Detail: detail, LastActivity: a.lastRun}
}

// detect lists what an image GC pass needs.
func detect(ctx context.Context, rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient) *messages.ImagesDetected {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	out := &messages.ImagesDetected{At: time.Now()}
	images, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		out.Err = fmt.Errorf("list images: %w", err)
		return out
	}
	out.Images = images.Images
	containers, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		out.Err = fmt.Errorf("list containers: %w", err)
		return out
	}
	out.Containers = containers.Containers
	if st, err := rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true}); err == nil {
		out.SandboxImage = sandboxImage(st.Info)
	}
	fs, err := img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		out.Err = fmt.Errorf("image fs info: %w", err)
		return out
	}
	for _, f := range fs.ImageFilesystems {
		mp := f.GetFsId().GetMountpoint()
		if mp == "" {
			continue
		}
		var s unix.Statfs_t
		if err := unix.Statfs(mp, &s); err != nil {
			out.Err = fmt.Errorf("statfs %s: %w", mp, err)
			return out
		}
		out.CapacityBytes = s.Blocks * uint64(s.Bsize)
		out.AvailableBytes = s.Bavail * uint64(s.Bsize)
		break
	}
	return out
}

// sandboxImage reads the pause image from a verbose CRI Status: containerd
// puts its CRI configuration, as JSON, under "config" (1.x: sandboxImage;
// 2.x: pinnedImages.sandbox).
func sandboxImage(info map[string]string) string {
	raw, ok := info["config"]
	if !ok {
		return ""
	}
	var cfg struct {
		SandboxImage string `json:"sandboxImage"`
		PinnedImages struct {
			Sandbox string `json:"sandbox"`
		} `json:"pinnedImages"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return ""
	}
	if cfg.SandboxImage != "" {
		return cfg.SandboxImage
	}
	return cfg.PinnedImages.Sandbox
}

var errNoRuntime = errors.New("no runtime")
