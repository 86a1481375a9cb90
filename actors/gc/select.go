package gc

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

// containerPolicy is upstream's GCPolicy for containers.
type containerPolicy struct {
	// MinAge: a dead container younger than this is never removed.
	MinAge time.Duration
	// MaxPerPodContainer dead instances are kept per (pod, container name);
	// < 0: no limit.
	MaxPerPodContainer int
	// MaxContainers dead containers are kept on the node; < 0: no limit.
	MaxContainers int
}

// evictUnit is what upstream groups dead containers by.
type evictUnit struct {
	uid  types.UID
	name string
}

type deadContainer struct {
	id      string
	created time.Time
}

func created(ns int64) time.Time { return time.Unix(0, ns) }

// knownPods is the pod-manager's answer to a container pass: the UIDs of
// its pods (with a worker or wanted by a source), asked for At. Until
// Complete (every pod source has sent its pods), a pod it does not hold may
// still be wanted, so every pod counts as known, as upstream's
// allSourcesReady guard.
type knownPods struct {
	UIDs     map[types.UID]bool
	At       time.Time
	Complete bool
}

func (k knownPods) has(uid types.UID) bool { return !k.Complete || k.UIDs[uid] }

// selectContainers chooses the containers and sandboxes a container GC pass
// removes, oldest first, as upstream's containerGC.evictContainers and
// evictSandboxes do:
//
//   - objects without the pod UID label are not the kubelet's: never touched;
//   - a running container or a ready sandbox is never removed;
//   - of a known pod, only exited containers older than MinAge are
//     candidates; the newest MaxPerPodContainer of each (pod, container name)
//     are kept, then MaxContainers (if >= 0) bounds the node's total;
//   - of a pod that is not known, every container that is not running and
//     is older than MinAge, and every sandbox that is not ready and keeps no
//     container, is removed, as long as it was created before known.At
//     (when the pod-manager was asked): a pod added since may be unknown to
//     the answer yet be real;
//   - a sandbox that is not ready and keeps no container (once the selected
//     containers are gone) is removed unless it is the newest of a known pod.
func selectContainers(containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox, known knownPods, now time.Time, policy containerPolicy) (removeContainers, removeSandboxes []string) {
	minBirth := now.Add(-policy.MinAge)
	var remove []deadContainer
	units := map[evictUnit][]deadContainer{}
	removed := map[string]bool{}
	for _, c := range containers {
		uid := types.UID(c.GetLabels()[podruntime.LabelPodUID])
		if uid == "" || c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		birth := created(c.CreatedAt)
		if birth.After(minBirth) {
			continue
		}
		if !known.has(uid) {
			if birth.Before(known.At) {
				remove = append(remove, deadContainer{c.Id, birth})
			}
			continue
		}
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		u := evictUnit{uid, c.GetLabels()[podruntime.LabelContainerName]}
		units[u] = append(units[u], deadContainer{c.Id, birth})
	}
	newestFirst := func(a, b deadContainer) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	total := 0
	for u, cs := range units {
		slices.SortFunc(cs, newestFirst)
		units[u] = cs
		total += len(cs)
	}
	enforce := func(keep int) {
		for u, cs := range units {
			if len(cs) > keep {
				remove = append(remove, cs[keep:]...)
				total -= len(cs) - keep
				units[u] = cs[:keep]
			}
		}
	}
	if policy.MaxPerPodContainer >= 0 {
		enforce(policy.MaxPerPodContainer)
	}
	if policy.MaxContainers >= 0 && total > policy.MaxContainers {
		// Upstream: first an even share per unit (at least 1), then the
		// oldest of what is left.
		enforce(max(policy.MaxContainers/max(len(units), 1), 1))
		if total > policy.MaxContainers {
			var all []deadContainer
			for _, cs := range units {
				all = append(all, cs...)
			}
			slices.SortFunc(all, newestFirst)
			remove = append(remove, all[policy.MaxContainers:]...)
		}
	}
	slices.SortFunc(remove, func(a, b deadContainer) int { return newestFirst(b, a) })
	for _, c := range remove {
		removeContainers = append(removeContainers, c.id)
		removed[c.id] = true
	}

	// Sandboxes that still hold a container once those are gone.
	holds := map[string]bool{}
	for _, c := range containers {
		if !removed[c.Id] {
			holds[c.PodSandboxId] = true
		}
	}
	byPod := map[types.UID][]*runtimeapi.PodSandbox{}
	for _, s := range sandboxes {
		uid := types.UID(s.GetLabels()[podruntime.LabelPodUID])
		if uid == "" {
			continue
		}
		byPod[uid] = append(byPod[uid], s)
	}
	var dead []*runtimeapi.PodSandbox
	for uid, ss := range byPod {
		slices.SortFunc(ss, func(a, b *runtimeapi.PodSandbox) int {
			if c := cmp.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.Id, b.Id)
		})
		for i, s := range ss {
			if s.State == runtimeapi.PodSandboxState_SANDBOX_READY || holds[s.Id] {
				continue
			}
			if known.has(uid) && i == 0 {
				continue // the newest sandbox of a known pod
			}
			if !known.has(uid) && !created(s.CreatedAt).Before(known.At) {
				continue
			}
			dead = append(dead, s)
		}
	}
	slices.SortFunc(dead, func(a, b *runtimeapi.PodSandbox) int {
		if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Id, b.Id)
	})
	for _, s := range dead {
		removeSandboxes = append(removeSandboxes, s.Id)
	}
	return removeContainers, removeSandboxes
}

// imagePolicy is upstream's ImageGCPolicy.
type imagePolicy struct {
	HighThresholdPercent, LowThresholdPercent int
	// MinAge: an image first seen, or last used, less than this ago is
	// never removed by the threshold.
	MinAge time.Duration
	// MaxAge > 0: an image unused for longer is removed whatever the
	// usage, once the actor has run for longer than MaxAge.
	MaxAge time.Duration
}

// imageRecord is what the actor remembers of an image between passes.
type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time // zero: never seen in use
	size          uint64
	pinned        bool
}

// imagesInUse returns the references of the images that containers use,
// running or not: their image spec, image ref and image ID, and the images
// they mount as image volumes (mounted, as the runtime names them).
func imagesInUse(containers []*runtimeapi.Container, mounted []string) map[string]bool {
	in := map[string]bool{}
	for _, c := range containers {
		for _, ref := range []string{c.GetImage().GetImage(), c.ImageRef, c.ImageId} {
			if ref != "" {
				in[ref] = true
			}
		}
	}
	for _, ref := range mounted {
		in[ref] = true
	}
	return in
}

// imageNamed reports whether any of the image's ID, tags or digests is in refs.
func imageNamed(img *runtimeapi.Image, refs map[string]bool) bool {
	if refs[img.Id] {
		return true
	}
	for _, r := range img.RepoTags {
		if refs[r] {
			return true
		}
	}
	for _, r := range img.RepoDigests {
		if refs[r] {
			return true
		}
	}
	return false
}

// detectImages updates records from one listing, as upstream's detectImages:
// a new image is first detected now, an image in use was last used now,
// images gone from the runtime are forgotten.
func detectImages(records map[string]*imageRecord, images []*runtimeapi.Image, inUse map[string]bool, now time.Time) {
	present := map[string]bool{}
	for _, img := range images {
		present[img.Id] = true
		r := records[img.Id]
		if r == nil {
			r = &imageRecord{firstDetected: now}
			records[img.Id] = r
		}
		if imageNamed(img, inUse) {
			r.lastUsed = now
		}
		r.size, r.pinned = img.Size, img.Pinned
	}
	for id := range records {
		if !present[id] {
			delete(records, id)
		}
	}
}

// imageChoice is one image an image GC pass removes.
type imageChoice struct {
	id     string
	size   uint64
	reason string // reasonAge or reasonSpace
}

// Why an image was removed: the values of upstream's
// kubelet_image_garbage_collected_total reason label.
const (
	reasonAge   = "age"
	reasonSpace = "space"
)

// selectImages chooses the images to remove, as upstream's
// realImageGCManager: never an image in use, a pinned image or the sandbox
// image; first (MaxAge > 0, once began is more than MaxAge ago) every image
// unused for longer than MaxAge; then, when the image filesystem is at least
// HighThresholdPercent full, the least recently used images at least MinAge
// old until usage would be under LowThresholdPercent. need is what the
// threshold asks to free beyond the images removed for their age (0 when
// under the threshold): freeing less is upstream's FreeDiskSpaceFailed.
func selectImages(images []*runtimeapi.Image, inUse map[string]bool, sandboxImage string, capacity, available uint64, policy imagePolicy, now, began time.Time, records map[string]*imageRecord) (choices []imageChoice, need uint64) {
	sandbox := map[string]bool{}
	if sandboxImage != "" {
		sandbox[sandboxImage] = true
	}
	type candidate struct {
		img *runtimeapi.Image
		rec imageRecord
	}
	var candidates []candidate
	for _, img := range images {
		if img.Pinned || imageNamed(img, inUse) || imageNamed(img, sandbox) {
			continue
		}
		var rec imageRecord
		if r := records[img.Id]; r != nil {
			rec = *r
		} else {
			rec = imageRecord{firstDetected: now}
		}
		if rec.pinned {
			continue
		}
		candidates = append(candidates, candidate{img, rec})
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		if c := a.rec.lastUsed.Compare(b.rec.lastUsed); c != 0 {
			return c
		}
		if c := a.rec.firstDetected.Compare(b.rec.firstDetected); c != 0 {
			return c
		}
		return cmp.Compare(a.img.Id, b.img.Id)
	})
	var freed uint64
	left := candidates[:0:0]
	for _, c := range candidates {
		last := c.rec.lastUsed
		if last.IsZero() {
			last = c.rec.firstDetected
		}
		if policy.MaxAge > 0 && now.Sub(began) > policy.MaxAge && now.Sub(last) > policy.MaxAge {
			choices = append(choices, imageChoice{c.img.Id, c.img.Size, reasonAge})
			freed += c.img.Size
			continue
		}
		left = append(left, c)
	}
	if capacity == 0 || policy.HighThresholdPercent >= 100 {
		return choices, 0
	}
	usage := 100 - int(available*100/capacity)
	if usage < policy.HighThresholdPercent {
		return choices, 0
	}
	target := capacity * uint64(100-policy.LowThresholdPercent) / 100
	if available+freed >= target {
		return choices, 0
	}
	need = target - available - freed
	var got uint64
	for _, c := range left {
		if got >= need {
			break
		}
		if now.Sub(c.rec.firstDetected) < policy.MinAge {
			continue
		}
		if !c.rec.lastUsed.IsZero() && now.Sub(c.rec.lastUsed) < policy.MinAge {
			continue
		}
		choices = append(choices, imageChoice{c.img.Id, c.img.Size, reasonSpace})
		got += c.img.Size
	}
	return choices, need
}
