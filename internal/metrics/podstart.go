package metrics

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// imagePulls is the time each pod's image pulls took until it started,
// for kubelet_pod_start_sli_duration_seconds, which leaves it out as
// upstream's pod startup latency tracker does. Pulls run in the
// pod-workers' sync work and the start is seen by the pod's worker, so it
// is shared, under its own lock, held for a map access only.
var imagePulls = struct {
	sync.Mutex
	byPod map[types.UID]time.Duration
}{byPod: map[types.UID]time.Duration{}}

// RecordPodImagePull adds a pull that took d to the pod's pulling time.
func RecordPodImagePull(uid types.UID, d time.Duration) {
	imagePulls.Lock()
	imagePulls.byPod[uid] += d
	imagePulls.Unlock()
}

// TakePodImagePulls returns the pod's pulling time and forgets it: at its
// start, or when its worker stops.
func TakePodImagePulls(uid types.UID) time.Duration {
	imagePulls.Lock()
	defer imagePulls.Unlock()
	d := imagePulls.byPod[uid]
	delete(imagePulls.byPod, uid)
	return d
}
