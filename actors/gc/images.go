package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

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
	supervision.Go(ctx, func(life context.Context) messages.Message { return detect(life, rt, img) })
}

func (a *Actor) imagesDetected(ctx actor.Context, m *messages.ImagesDetected) {
	if !a.imaging {
		return // from before a restart: this instance runs its own pass
	}
	if m.Err != nil {
		a.imageDone(ctx, &messages.ImageGCDone{Started: m.At, Duration: time.Since(m.At), Errs: []error{m.Err}})
		return
	}
	inUse := imagesInUse(m.Containers, m.MountedImages)
	detectImages(a.images, m.Images, inUse, m.At)
	// An image's age is counted up to now, when the choice is made: one
	// detected by this very listing is a little older than nothing.
	policy := a.imagePolicy
	if a.imageFreeAll {
		// Every unused image old enough goes: no threshold.
		policy.HighThresholdPercent, policy.LowThresholdPercent = 0, 0
	}
	choices, need := selectImages(m.Images, inUse, m.SandboxImage, m.CapacityBytes, m.AvailableBytes, policy, time.Now(), a.began, a.images)
	a.imageChoices, a.imageNeed, a.imageCapacity = map[string]imageChoice{}, need, m.CapacityBytes
	for _, c := range choices {
		a.imageChoices[c.id] = c
	}
	if m.CapacityBytes > 0 {
		a.imageUsage = 100 - int(m.AvailableBytes*100/m.CapacityBytes)
	}
	pulled, listed := a.p.PulledImages, m.Images
	// prune forgets the credentials of the images that are gone, as
	// upstream's post-GC hook PruneUnknownRecords, except that remaining
	// is every image still on the node.
	prune := func(removed []string) {
		if pulled == nil {
			return
		}
		gone := map[string]bool{}
		for _, id := range removed {
			gone[id] = true
		}
		var remaining []string
		for _, img := range listed {
			if !gone[img.Id] {
				remaining = append(remaining, img.Id)
			}
		}
		pulled.Prune(remaining, m.At)
	}
	if len(choices) == 0 {
		prune(nil)
		a.imageDone(ctx, &messages.ImageGCDone{Started: m.At, Duration: time.Since(m.At)})
		return
	}
	a.log.Info().Int("usagePercent", a.imageUsage).Int("highThresholdPercent", a.imagePolicy.HighThresholdPercent).
		Uint64("bytesToFree", need).Int("candidates", len(choices)).Msg("removing unused images")
	img, log := a.p.Images, a.log
	supervision.Go(ctx, func(life context.Context) messages.Message {
		done := &messages.ImageGCDone{Started: m.At}
		for _, c := range choices {
			cctx, cancel := context.WithTimeout(life, callTimeout)
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
		prune(done.ImagesRemoved)
		done.Duration = time.Since(m.At)
		return done
	})
}

func (a *Actor) imageDone(ctx actor.Context, m *messages.ImageGCDone) {
	current := a.imaging
	if a.imaging {
		a.imaging = false
		a.cancelImage = supervision.After(ctx, a.p.ImageGCPeriod, &messages.ImageGC{})
	}
	var spaceFreed uint64
	for _, id := range m.ImagesRemoved {
		delete(a.images, id)
		if c, ok := a.imageChoices[id]; ok {
			metrics.ImageGarbageCollectedTotal.WithLabelValues(c.reason).Inc()
			if c.reason == reasonSpace {
				spaceFreed += c.size
			}
		}
	}
	errs := m.Errs
	if current && !a.imageFreeAll {
		// A pass freeing every unused image for the eviction manager
		// asks for all the filesystem: freeing less is no failure.
		errs = append(errs, a.imageFailures(spaceFreed, m.Errs)...)
	}
	if current {
		a.imageFreeAll = false
	}
	if current && a.reclaimImages {
		a.reclaimImages = false
		a.reclaimFreed.ImagesRemoved += len(m.ImagesRemoved)
		a.reclaimFreed.BytesFreed += m.BytesFreed
		defer a.reclaimAnswer(ctx)
	}
	t := &a.totals
	t.imagePasses++
	t.images += len(m.ImagesRemoved)
	t.bytes += m.BytesFreed
	a.noteErrs(m.Started, errs)
	recordPass(metrics.GCKindImage, m.Duration, len(errs) == 0)
	metrics.GCRemoved.WithLabelValues(metrics.GCObjectImage).Add(float64(len(m.ImagesRemoved)))
	metrics.GCImageBytesFreed.Add(float64(m.BytesFreed))
	a.setLast(ctx, metrics.GCKindImage, m.Started, m.Duration, len(errs),
		"%d images removed, %s freed", len(m.ImagesRemoved), formatSize(m.BytesFreed))
	ev := a.log.Info()
	if len(errs) > 0 {
		ev = a.log.Warn().Errs("errors", errs)
	}
	ev.Str("pass", "image").Dur("duration", m.Duration).
		Int("imagesRemoved", len(m.ImagesRemoved)).Uint64("bytesFreed", m.BytesFreed).
		Int("totalImagesRemoved", t.images).Uint64("totalBytesFreed", t.bytes).
		Msg("image gc done")
}

// imageFailures adds to a pass's errors what upstream's image GC counts as
// failing, with its events: no capacity to compute the usage from
// (InvalidDiskCapacity), freeing less than the threshold asked for
// (FreeDiskSpaceFailed); and a second failed pass in a row is
// ImageGCFailed (a first one may be statistics not ready yet).
func (a *Actor) imageFailures(spaceFreed uint64, errs []error) []error {
	var more []error
	if len(errs) == 0 && a.imageCapacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		a.nodeEvent(events.InvalidDiskCapacity, err.Error())
		more = append(more, err)
	}
	if a.imageNeed > 0 && spaceFreed < a.imageNeed {
		msg := fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			a.imageUsage, formatSize(a.imageCapacity), spaceFreed)
		a.nodeEvent(events.FreeDiskSpaceFailed, msg)
		more = append(more, errors.New(msg))
	}
	failed := append(errs[:len(errs):len(errs)], more...)
	if len(failed) > 0 {
		if a.previousImagePassFailed {
			a.nodeEvent(events.ImageGCFailed, errors.Join(failed...).Error())
		}
		a.previousImagePassFailed = true
	} else {
		a.previousImagePassFailed = false
	}
	a.imageChoices, a.imageNeed = nil, 0
	return more
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
	if out.MountedImages, err = mountedImages(ctx, rt, containers.Containers); err != nil {
		out.Err = err
		return out
	}
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

// mountedImages are the images that containers mount as image volumes,
// as upstream's handleImageVolumes finds them: in each container's status,
// since a listing does not show its mounts. A container gone meanwhile
// mounts nothing; any other failure fails the pass, which then cannot
// tell which images are in use.
func mountedImages(ctx context.Context, rt runtimeapi.RuntimeServiceClient, containers []*runtimeapi.Container) ([]string, error) {
	var out []string
	for _, c := range containers {
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		for _, m := range st.GetStatus().GetMounts() {
			if ref := m.GetImage().GetImage(); ref != "" {
				out = append(out, ref)
			}
		}
	}
	return out, nil
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

// formatSize is upstream's image GC formatSize: binary units, one decimal.
func formatSize(n uint64) string {
	const (
		kib = 1 << 10
		mib = 1 << 20
		gib = 1 << 30
		tib = 1 << 40
	)
	size := float64(n)
	switch {
	case n < kib:
		return fmt.Sprintf("%d B", n)
	case n < mib:
		return fmt.Sprintf("%.1f KiB", size/kib)
	case n < gib:
		return fmt.Sprintf("%.1f MiB", size/mib)
	case n < tib:
		return fmt.Sprintf("%.1f GiB", size/gib)
	}
	return fmt.Sprintf("%.1f TiB", size/tib)
}
