// Package gc holds the garbage-collection actor: every ContainerGCPeriod it
// removes dead containers and sandboxes (upstream's kuberuntime containerGC)
// and the log directories of pods that are gone; every
// containerLogMonitorInterval it rotates oversized container logs
// (upstream's container log manager); every ImageGCPeriod it removes unused
// images (upstream's image GC manager). It reports upstream's GC events on
// the node, the GC metrics, and its last passes on the dashboard.
//
// All CRI work runs outside the mailbox (supervision.Go); the actor holds the
// image records and the counters, and shares nothing, so that a panic
// restarts it alone. docs/gc.md describes the policies.
package gc

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "gc"

// Defaults (upstream's).
const (
	DefaultContainerGCPeriod  = time.Minute
	DefaultImageGCPeriod      = 5 * time.Minute
	DefaultPodLogsDir         = "/var/log/pods"
	defaultLogMonitorInterval = 10 * time.Second
	defaultLogMaxSize         = "10Mi"
	defaultLogMaxFiles        = 5
	// podListTimeout bounds the wait for the pod-manager's pods.
	podListTimeout = 5 * time.Second
	// callTimeout bounds one CRI call.
	callTimeout = 2 * time.Minute
	// firstReadyRetry is the wait before asking the pod-manager again while
	// its sources are not all ready; it doubles up to ContainerGCPeriod.
	// Sources report within seconds of a start: the removal of pods that
	// went while actorlet was down should not wait a whole period.
	firstReadyRetry = time.Second
)

// Params configure the gc actor.
type Params struct {
	Runtime    runtimeapi.RuntimeServiceClient
	Images     runtimeapi.ImageServiceClient
	PodManager *actor.PID
	// Config supplies imageGCHighThresholdPercent, imageGCLowThresholdPercent,
	// imageMinimumGCAge, imageMaximumGCAge, containerLogMaxSize,
	// containerLogMaxFiles, containerLogMaxWorkers and
	// containerLogMonitorInterval.
	Config *kubeletconfigv1beta1.KubeletConfiguration
	// ContainerGCPeriod and ImageGCPeriod are fixed upstream (1 min, 5 min);
	// tests shorten them.
	ContainerGCPeriod  time.Duration
	ImageGCPeriod      time.Duration
	MinContainerAge    time.Duration // upstream --minimum-container-ttl-duration: 0
	MaxPerPodContainer int           // upstream --maximum-dead-containers-per-container: 1
	MaxContainers      int           // upstream --maximum-dead-containers: -1 (no limit)
	PodLogsDir         string        // default /var/log/pods
	// ContainerLogsDir holds the containers' log links that container GC
	// removes with their containers and when dangling
	// (podruntime.DefaultContainerLogsDir); "" : none (tests).
	ContainerLogsDir string
	// CgroupRoot (/sys/fs/cgroup) and PodCgroupParents (the cgroups pod
	// cgroups are children of: podcgroups.Manager.PodParents): pod cgroups
	// of pods that are gone are removed; either empty turns that off
	// (tests, cgroupsPerQOS: false). CgroupDriver names them (podruntime's
	// CgroupDriver); with systemd, StopSlice stops a removed pod's slice
	// unit (cgroups.StopSystemdUnit).
	CgroupRoot, CgroupDriver string
	PodCgroupParents         []string
	StopSlice                func(unit string) error
	RootDir                  string // not used yet
	// PulledImages, when set, forgets the credentials of the images
	// removed after each image pass (imagepull.Manager).
	PulledImages PulledImages
	// Events receives upstream's GC events about the node NodeName
	// (ContainerGCFailed, ImageGCFailed, FreeDiskSpaceFailed,
	// InvalidDiskCapacity); they are logged in any case.
	Events   record.EventRecorder
	NodeName string
	// Registry, when set, shows the last passes on the dashboard as the
	// actor's state.
	Registry *supervision.Registry
	Log      zerolog.Logger
}

// PulledImages keeps the records of pulled images (imagepull.Manager):
// Prune drops those of images not in remaining, the image IDs on the node
// after a pass, last updated before until, the pass's start.
type PulledImages interface {
	Prune(remaining []string, until time.Time)
}

// Actor is the gc actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p     Params
	log   zerolog.Logger
	began time.Time

	containerPass containerPass
	rotation      logRotation
	rotateEvery   time.Duration
	imagePolicy   imagePolicy
	images        map[string]*imageRecord

	// awaitingPods is true between asking the pod-manager and getting its
	// answer; collecting is true until the container pass is done.
	awaitingPods bool
	collecting   bool
	knownAt      time.Time
	// incomplete: the pass under way had not every source's pods;
	// readyRetry is the wait before the next one then.
	incomplete bool
	readyRetry time.Duration

	imaging bool
	// The image pass under way: what it chose to remove, what the threshold
	// asked it to free, and the image filesystem as detected.
	imageChoices            map[string]imageChoice
	imageNeed               uint64
	imageCapacity           uint64
	imageUsage              int
	previousImagePassFailed bool

	rotating bool

	// reclaimers asked for disk space (ReclaimDiskSpace) and wait for the
	// container pass (reclaimContainers) and the image pass
	// (reclaimImages) under way; imageFreeAll: the image pass under way
	// removes every unused image, whatever the thresholds.
	reclaimers                       []*actor.PID
	reclaimContainers, reclaimImages bool
	imageFreeAll                     bool
	reclaimFreed                     messages.DiskSpaceReclaimed

	cancelContainer, cancelImage, cancelRotate func() bool

	totals totals
	// last holds one line per kind of pass about its latest run, for the
	// dashboard and the health detail.
	last         map[string]string
	lastRun      time.Time
	lastErr      error
	lastErrCount int
}

type totals struct {
	containerPasses, imagePasses, rotationPasses int
	containers, sandboxes                        int
	logsRotated, logFiles, logDirs               int
	images                                       int
	bytes                                        uint64
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
		a := &Actor{p: p, log: log, images: map[string]*imageRecord{}, last: map[string]string{}}
		a.containerPass = containerPass{
			Runtime: p.Runtime, PodLogsDir: p.PodLogsDir, ContainerLogsDir: p.ContainerLogsDir, Log: log,
			Cgroups: podCgroups{Root: p.CgroupRoot, Parents: p.PodCgroupParents, Driver: p.CgroupDriver, StopSlice: p.StopSlice},
			Policy:  containerPolicy{MinAge: p.MinContainerAge, MaxPerPodContainer: p.MaxPerPodContainer, MaxContainers: p.MaxContainers},
		}
		a.imagePolicy = imagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
		a.rotation = logRotation{Runtime: p.Runtime, MaxFiles: defaultLogMaxFiles, Workers: 1, Log: log}
		a.rotateEvery = defaultLogMonitorInterval
		size := defaultLogMaxSize
		if c := p.Config; c != nil {
			if c.ImageGCHighThresholdPercent != nil {
				a.imagePolicy.HighThresholdPercent = int(*c.ImageGCHighThresholdPercent)
			}
			if c.ImageGCLowThresholdPercent != nil {
				a.imagePolicy.LowThresholdPercent = int(*c.ImageGCLowThresholdPercent)
			}
			a.imagePolicy.MinAge = c.ImageMinimumGCAge.Duration
			a.imagePolicy.MaxAge = c.ImageMaximumGCAge.Duration
			if c.ContainerLogMaxFiles != nil {
				a.rotation.MaxFiles = int(*c.ContainerLogMaxFiles)
			}
			if c.ContainerLogMaxWorkers != nil {
				a.rotation.Workers = int(*c.ContainerLogMaxWorkers)
			}
			if c.ContainerLogMonitorInterval != nil && c.ContainerLogMonitorInterval.Duration > 0 {
				a.rotateEvery = c.ContainerLogMonitorInterval.Duration
			}
			if c.ContainerLogMaxSize != "" {
				size = c.ContainerLogMaxSize
			}
		}
		if q, err := resource.ParseQuantity(size); err == nil {
			a.rotation.MaxSize = q.Value()
		} else {
			log.Warn().Err(err).Str("containerLogMaxSize", size).Msg("log rotation disabled")
		}
		return a
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// Every pass runs at once, as upstream's wait.Until: the container
		// pass leaves unknown pods alone until every source has reported.
		a.began = time.Now()
		a.readyRetry = firstReadyRetry
		a.containerGC(ctx)
		a.imageGC(ctx)
		a.rotateLogs(ctx)
	case *actor.Restarting, *actor.Stopping:
		for _, cancel := range []func() bool{a.cancelContainer, a.cancelImage, a.cancelRotate} {
			if cancel != nil {
				cancel()
			}
		}
	case *messages.ContainerGC:
		a.containerGC(ctx)
	case *messages.PodList:
		a.podList(ctx, m)
	case *actor.DeadLetterResponse, error:
		// The pod-manager did not answer (PipeTo delivers the failure).
		if !a.awaitingPods {
			return
		}
		a.awaitingPods, a.collecting = false, false
		a.reclaimContainers = false
		a.reclaimAnswer(ctx)
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
	case *messages.RotateLogs:
		a.rotateLogs(ctx)
	case *messages.LogsRotated:
		a.rotated(ctx, m)
	case *messages.ReclaimDiskSpace:
		a.reclaim(ctx)
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

// podList runs the container pass on the pod-manager's answer.
func (a *Actor) podList(ctx actor.Context, m *messages.PodList) {
	if !a.awaitingPods {
		return
	}
	a.awaitingPods = false
	known := knownPods{UIDs: make(map[types.UID]bool, len(m.Pods)+len(m.Active)), At: a.knownAt, Complete: m.SourcesReady}
	for _, p := range m.Pods {
		known.UIDs[p.UID] = true
	}
	for _, uid := range m.Active {
		known.UIDs[uid] = true
	}
	a.incomplete = !m.SourcesReady
	pass := a.containerPass
	supervision.Go(ctx, func(life context.Context) messages.Message { return pass.Run(life, known) })
}

func (a *Actor) containerDone(ctx actor.Context, m *messages.ContainerGCDone) {
	// A pass started before a restart still counts, but its timer chain
	// ended with the restart: only the current chain reschedules.
	if a.collecting {
		a.collecting = false
		next := a.p.ContainerGCPeriod
		if a.incomplete {
			next = min(a.readyRetry, next)
			a.readyRetry *= 2
		} else {
			a.readyRetry = firstReadyRetry
		}
		a.cancelContainer = supervision.After(ctx, next, &messages.ContainerGC{})
	}
	if a.reclaimContainers {
		a.reclaimContainers = false
		a.reclaimAnswer(ctx)
	}
	t := &a.totals
	t.containerPasses++
	t.containers += m.ContainersRemoved
	t.sandboxes += m.SandboxesRemoved
	t.logDirs += m.LogDirsRemoved
	a.noteErrs(m.Started, m.Errs)
	for _, err := range m.Errs {
		var f failure
		if errors.As(err, &f) {
			// Upstream: every failed container GC is an event.
			a.nodeEvent(events.ContainerGCFailed, err.Error())
		}
	}
	recordPass(metrics.GCKindContainer, m.Duration, len(m.Errs) == 0)
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectContainer).Add(float64(m.ContainersRemoved))
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectSandbox).Add(float64(m.SandboxesRemoved))
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectPodLogDir).Add(float64(m.LogDirsRemoved))
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectPodCgroup).Add(float64(m.PodCgroupsRemoved))
	a.setLast(ctx, metrics.GCKindContainer, m.Started, m.Duration, len(m.Errs),
		"%d containers, %d sandboxes, %d pod log dirs removed", m.ContainersRemoved, m.SandboxesRemoved, m.LogDirsRemoved)
	ev := a.log.Info()
	if len(m.Errs) > 0 {
		ev = a.log.Warn().Errs("errors", m.Errs)
	}
	ev.Str("pass", "container").Bool("sourcesReady", !a.incomplete).Dur("duration", m.Duration).
		Int("containersRemoved", m.ContainersRemoved).Int("sandboxesRemoved", m.SandboxesRemoved).
		Int("logDirsRemoved", m.LogDirsRemoved).Int("podCgroupsRemoved", m.PodCgroupsRemoved).
		Int("totalContainersRemoved", t.containers).Int("totalSandboxesRemoved", t.sandboxes).
		Msg("container gc done")
}

func (a *Actor) rotateLogs(ctx actor.Context) {
	if a.rotating || !a.rotation.enabled() {
		return
	}
	a.rotating = true
	r := a.rotation
	supervision.Go(ctx, func(life context.Context) messages.Message { return r.Run(life) })
}

func (a *Actor) rotated(ctx actor.Context, m *messages.LogsRotated) {
	if a.rotating {
		a.rotating = false
		a.cancelRotate = supervision.After(ctx, a.rotateEvery, &messages.RotateLogs{})
	}
	t := &a.totals
	t.rotationPasses++
	t.logsRotated += m.Rotated
	t.logFiles += m.FilesRemoved
	recordPass(metrics.GCKindLogRotation, m.Duration, len(m.Errs) == 0)
	metrics.GCLogsRotated.Add(float64(m.Rotated))
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectLogFile).Add(float64(m.FilesRemoved))
	if m.Rotated == 0 && m.FilesRemoved == 0 && len(m.Errs) == 0 {
		// Nothing to say every few seconds; the dashboard keeps the last
		// rotation that did something.
		return
	}
	a.noteErrs(m.Started, m.Errs)
	a.setLast(ctx, metrics.GCKindLogRotation, m.Started, m.Duration, len(m.Errs),
		"%d logs rotated, %d rotated files removed", m.Rotated, m.FilesRemoved)
	ev := a.log.Info()
	if len(m.Errs) > 0 {
		ev = a.log.Warn().Errs("errors", m.Errs)
	}
	ev.Str("pass", "log-rotation").Dur("duration", m.Duration).Int("logsRotated", m.Rotated).
		Int("rotatedFilesRemoved", m.FilesRemoved).Int("totalLogsRotated", t.logsRotated).
		Msg("log rotation done")
}

func (a *Actor) noteErrs(at time.Time, errs []error) {
	a.lastRun = at
	if len(errs) > 0 {
		a.lastErr, a.lastErrCount = errs[0], len(errs)
	} else {
		a.lastErr, a.lastErrCount = nil, 0
	}
}

var errNoRuntime = errors.New("no runtime")
