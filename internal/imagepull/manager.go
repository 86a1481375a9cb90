package imagepull

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Manager is upstream's PullManager: it records each pull of an image
// (an intent before, the credentials after) and tells whether a pod may
// use an image on the node without pulling it. The records are kept in
// memory and each change is written to its file before the call returns.
// It is safe for concurrent use: the pods' workers pull in parallel.
type Manager struct {
	policy *Policy
	store  *store // nil: in memory only (tests)
	log    zerolog.Logger
	now    func() time.Time

	mu sync.Mutex
	// pulled holds the records by image ID. A record file that does
	// not decode is not held: each MustPull of its image reads it again
	// and fails safe (the pod pulls), as upstream.
	pulled map[string]*Record
	// pulling counts the pulls of each image under way, whose intent
	// file exists; leftover holds the intents of an earlier run for
	// images that are not on the node (their pulls did not finish).
	pulling  map[string]int
	leftover map[string]bool
}

// ImageLister lists the runtime's images: upstream turns the intents of
// an earlier run into records for the images that it finds on the node.
type ImageLister interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
}

// New loads the records under rootDir ("": none, kept in memory only)
// and, as upstream's initialize, turns each intent left by an earlier run
// into a record without credentials when its image is on the node (the
// pull finished, with credentials unknown: every pod verifies its own).
// Files that cannot be read are logged and skipped; each such image is
// then verified as one pulled with credentials unknown only if its record
// is found later, else it is taken for preloaded, as upstream.
func New(ctx context.Context, rootDir string, policy *Policy, images ImageLister, log zerolog.Logger) (*Manager, error) {
	m := &Manager{policy: policy, log: log, now: time.Now,
		pulled: map[string]*Record{}, pulling: map[string]int{}, leftover: map[string]bool{}}
	if rootDir == "" {
		return m, nil
	}
	s, err := openStore(rootDir)
	if err != nil {
		return nil, err
	}
	m.store = s
	records, err := s.listPulled()
	if err != nil {
		log.Warn().Err(err).Msg("some image pulled records could not be read")
	}
	for _, r := range records {
		m.pulled[r.ImageRef] = r
	}
	intents, err := s.listIntents()
	if err != nil {
		log.Warn().Err(err).Msg("some image pull intents could not be read")
	}
	if len(intents) == 0 {
		return m, nil
	}
	for _, image := range intents {
		m.leftover[image] = true
	}
	if images == nil {
		return m, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	resp, err := images.ListImages(lctx, &runtimeapi.ListImagesRequest{})
	cancel()
	if err != nil {
		log.Warn().Err(err).Msg("list images: the pull intents of the last run are kept")
		return m, nil
	}
	for _, img := range resp.GetImages() {
		for _, name := range append(append([]string(nil), img.RepoDigests...), img.RepoTags...) {
			if !m.leftover[name] {
				continue
			}
			if err := m.writePulled(name, img.Id, nil); err != nil {
				log.Warn().Err(err).Str("image", name).Msg("record an image pulled by the last run")
				continue
			}
			if err := s.deleteIntent(name); err != nil {
				log.Warn().Err(err).Str("image", name).Msg("remove an image pull intent")
				continue
			}
			delete(m.leftover, name)
		}
	}
	return m, nil
}

// MustPull is upstream's MustAttemptImagePull: whether a pod must pull
// image (its container's image field), on the node as imageRef, before
// it may use it. podCreds returns the pod's credentials that apply to the
// image, called only when the answer depends on them; its error is
// returned with true.
func (m *Manager) MustPull(image, imageRef string, podCreds func() (PodCredentials, error)) (bool, error) {
	if imageRef == "" {
		return true, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	record, found := m.pulled[imageRef]
	if !found && m.store != nil {
		// Written by another kubelet since the start (or never): the
		// file is the truth.
		r, err := m.store.readPulled(imageRef)
		if err != nil {
			m.log.Warn().Err(err).Str("image", image).Msg("image pulled record unreadable: the pod must pull")
			return true, nil
		}
		if r != nil {
			m.pulled[imageRef], record, found = r, r, true
		}
	}
	pulledByKubelet := found || m.pulling[image] > 0 || m.leftover[image]
	v, err := decide(m.policy, image, record, pulledByKubelet, podCreds)
	if err != nil {
		return true, err
	}
	if v.remember != nil {
		if err := m.writePulled(image, imageRef, &Credentials{KubernetesSecrets: []Secret{*v.remember}}); err != nil {
			m.log.Warn().Err(err).Str("image", image).Msg("record a pull secret that matched")
		}
	}
	return v.mustPull, nil
}

// PullIntent records that image is about to be pulled: should the
// kubelet stop before the pull ends, the image is then known as pulled
// by it. Each call is followed by one of Pulled or PullFailed.
func (m *Manager) PullIntent(image string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.store != nil {
		if err := m.store.writeIntent(image); err != nil {
			return fmt.Errorf("record image pull intent: %w", err)
		}
	}
	m.pulling[image]++
	return nil
}

// Pulled records that image was pulled as imageRef with creds. When the
// record cannot be written, the intent is kept, as upstream: the image
// stays known as pulled by the kubelet, and is verified.
func (m *Manager) Pulled(image, imageRef string, creds *Credentials) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.writePulled(image, imageRef, creds); err != nil {
		m.log.Error().Err(err).Str("image", image).Str("imageRef", imageRef).Msg("record image pulled")
		return
	}
	m.endIntent(image)
}

// PullFailed ends the intent of a pull that failed.
func (m *Manager) PullFailed(image string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endIntent(image)
}

// endIntent counts a pull of image as over, and removes its intent file
// when it was the last one under way; the caller holds the lock.
func (m *Manager) endIntent(image string) {
	if m.pulling[image] > 1 {
		m.pulling[image]--
		return
	}
	if m.store != nil {
		if err := m.store.deleteIntent(image); err != nil {
			m.log.Error().Err(err).Str("image", image).Msg("remove image pull intent")
			return
		}
	}
	delete(m.pulling, image)
	delete(m.leftover, image)
}

// writePulled merges creds into imageRef's record and writes it when it
// changed; the caller holds the lock.
func (m *Manager) writePulled(image, imageRef string, creds *Credentials) error {
	r, changed, err := merge(m.pulled[imageRef], imageRef, image, creds, m.now())
	if err != nil {
		return fmt.Errorf("invalid image name %q: %w", image, err)
	}
	if !changed {
		return nil
	}
	if m.store != nil {
		if err := m.store.writePulled(r); err != nil {
			return err
		}
	}
	m.pulled[imageRef] = r
	return nil
}

// Prune is upstream's PruneUnknownRecords, run after each image GC pass:
// the records of images that are no longer on the node (not in
// remaining, the image IDs listed after the pass) go, unless they were
// updated since until (the pass's start).
func (m *Manager) Prune(remaining []string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := map[string]bool{}
	for _, id := range remaining {
		keep[id] = true
	}
	var errs []error
	for ref, r := range m.pulled {
		if keep[ref] || (r != nil && !r.LastUpdatedTime.Time.Before(until)) {
			continue
		}
		if m.store != nil {
			if err := m.store.deletePulled(ref); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		delete(m.pulled, ref)
	}
	if err := errors.Join(errs...); err != nil {
		m.log.Warn().Err(err).Msg("remove the records of removed images")
	}
}
