package volume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/volume/ownership"
)

// CSITimeout bounds each call to a CSI driver, as upstream's csiTimeout:
// a hung driver stalls the one pod's set-up or teardown that called it.
const CSITimeout = 2 * time.Minute

// csiState is what the node's CSI volumes share across the goroutines
// that set them up and tear them down: one operation per volume at a time
// (upstream's nested pending operations, keyed by the unique volume
// name), so that a teardown deciding to unstage never races a set-up
// publishing the same volume; and which volumes this process staged.
type csiState struct {
	mu     sync.Mutex
	busy   map[string]chan struct{}
	staged map[string]bool
	// owned are the publish targets whose fsGroup this process applied:
	// a walk that failed after the publish is tried again at the next
	// set-up, which finds the target mounted already.
	owned map[string]bool
	// done are the publish targets whose set-up succeeded: a node
	// expansion there is online (the volume in use).
	done map[string]bool
	// inUseExpandFailed are the volumes whose driver refused to grow them
	// while in use (FailedPrecondition): not tried again online until
	// they are published anew, as upstream's MarkForInUseExpansionError.
	inUseExpandFailed map[string]bool
}

// lock waits until no other operation holds the volume key, or ctx ends.
func (s *csiState) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		s.mu.Lock()
		if s.busy == nil {
			s.busy, s.staged, s.owned = map[string]chan struct{}{}, map[string]bool{}, map[string]bool{}
			s.done, s.inUseExpandFailed = map[string]bool{}, map[string]bool{}
		}
		ch, held := s.busy[key]
		if !held {
			done := make(chan struct{})
			s.busy[key] = done
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				delete(s.busy, key)
				s.mu.Unlock()
				close(done)
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("another operation on volume %s is in progress: %w", key, ctx.Err())
		}
	}
}

// mark adds key to the set m of s, or removes it.
func (s *csiState) mark(m map[string]bool, key string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		m[key] = true
	} else {
		delete(m, key)
	}
}

// marked reports whether the set m of s holds key.
func (s *csiState) marked(m map[string]bool, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m[key]
}

// csiDriver is the registered driver's endpoint, or upstream's error for
// a driver that is not (yet) registered: the pod waits and retries.
func (h *Host) csiDriver(name string) (registry.Driver, error) {
	if h.CSIDrivers != nil {
		if d, ok := h.CSIDrivers.Driver(name); ok {
			return d, nil
		}
	}
	return registry.Driver{}, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", name)
}

// setUpCSI mounts a CSI volume for pod as upstream's csi plugin does:
// the driver registered, the CSIDriver object's policy, the
// VolumeAttachment attached (when attach is required), NodeStageVolume
// once per node (when the driver stages), NodePublishVolume into the
// pod's directory, then the fsGroup.
func (h *Host) setUpCSI(ctx context.Context, pod *v1.Pod, v csiVolume) (Mounted, error) {
	if h.Sources == nil {
		return Mounted{}, errors.New("CSI volumes need an API server: this node has none")
	}
	drv, err := h.csiDriver(v.driver)
	if err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: %w", err)
	}
	obj, err := h.Sources.CSIDriver(ctx, v.driver)
	if apierrors.IsNotFound(err) {
		obj, err = nil, nil
	}
	if err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: reading CSIDriver %s: %w", v.driver, err)
	}
	policy, err := driverPolicy(obj)
	if err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetupAt failed to check fsGroup policy: %w", err)
	}
	if err := policy.supportsMode(v.driver, v.mode); err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: %w", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, CSITimeout)
	defer cancel()

	var publishContext map[string]string
	if v.needsAttach(policy) && h.KubeletAttaches {
		// Upstream's kubelet refuses alike: its CSI attacher says
		// "attaching volumes from the kubelet is not supported".
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: volume %s of driver %s needs an attach: attaching volumes from the kubelet is not supported (enableControllerAttachDetach is false)", v.handle, v.driver)
	}
	if v.needsAttach(policy) {
		if err := wantInUse(ctx, CSIUniqueVolumeName(v.driver, v.handle)); err != nil {
			return Mounted{}, err
		}
		name := csiAttachmentName(v.handle, v.driver, h.NodeName)
		va, err := h.Sources.VolumeAttachment(ctx, name)
		if apierrors.IsNotFound(err) {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: volume %s is not attached to node %s yet: waiting for VolumeAttachment %s", v.handle, h.NodeName, name)
		}
		if err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: reading VolumeAttachment %s: %w", name, err)
		}
		pc, attached, err := attachment(va)
		if err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: %w", err)
		}
		if !attached {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: volume %s is not attached to node %s yet: waiting for VolumeAttachment %s", v.handle, h.NodeName, name)
		}
		publishContext = pc
	}

	caps, err := csi.NodeGetCapabilities(callCtx, drv.Endpoint)
	if err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get node capabilities: %w", err)
	}
	if v.block {
		return h.mapCSIBlock(ctx, callCtx, pod, v, csiCall{drv: drv, policy: policy, caps: caps, publishContext: publishContext})
	}
	fsg := v.planFSGroup(policy, caps, fsGroupOf(pod))
	key := CSIUniqueVolumeName(v.driver, v.handle)
	unlock, err := h.csi.lock(ctx, key)
	if err != nil {
		return Mounted{}, err
	}
	defer unlock()

	stagingPath := ""
	if v.needsStage(caps) {
		global := csiGlobalDir(h.RootDir, v.driver, v.handle)
		stagingPath = filepath.Join(global, csiGlobalMountDir)
		if !h.csi.marked(h.csi.staged, key) {
			// A restarted node stages again: the driver's NodeStageVolume
			// is idempotent, and it is how upstream's reconstruction
			// makes sure a volume is staged.
			secrets, err := h.csiSecrets(ctx, v.stageSecretRef)
			if err != nil {
				return Mounted{}, fmt.Errorf("fetching NodeStageSecretRef %s/%s failed: %w", v.stageSecretRef.Namespace, v.stageSecretRef.Name, err)
			}
			if err := os.MkdirAll(stagingPath, 0o750); err != nil {
				return Mounted{}, err
			}
			// Written first: whatever the stage did, teardown finds it.
			if err := saveVolData(global, v.globalVolData()); err != nil {
				return Mounted{}, err
			}
			req := v.stageRequest(caps, stagingPath, publishContext, secrets, fsg.mountGroup)
			if err := csi.NodeStageVolume(callCtx, drv.Endpoint, req); err != nil {
				return Mounted{}, fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed: %w", err)
			}
			h.csi.mark(h.csi.staged, key, true)
		}
	}

	dir := csiPodDir(h.RootDir, pod.UID, v.specName)
	target := filepath.Join(dir, csiPodMountDir)
	m := Mounted{Path: target, ReadOnly: v.readOnly, SELinuxRelabel: true, CSIRepublish: policy.requiresRepublish,
		CSIExpandable: v.pv != nil && !v.readOnly && caps.ExpandVolume}
	if v.needsAttach(policy) {
		m.UniqueName = key
	}
	mounted, err := h.Mounter.IsMountPoint(target)
	if err != nil && !os.IsNotExist(err) {
		return Mounted{}, fmt.Errorf("checking mount point %s: %w", target, err)
	}
	if mounted && !policy.requiresRepublish {
		// Published already: a refresh of the pod's volumes (which
		// grows the volume if its claim asks), or a retry of an fsGroup
		// walk or an expansion that failed.
		if err := h.csiOwnership(pod, v, fsg, target); err != nil {
			return Mounted{}, err
		}
		if err := h.expandCSI(ctx, pod, v, drv, caps, target, h.csi.marked(h.csi.done, target)); err != nil {
			return Mounted{}, err
		}
		h.csi.mark(h.csi.done, target, true)
		return m, nil
	}
	secrets, err := h.csiSecrets(ctx, v.publishSecretRef)
	if err != nil {
		return Mounted{}, fmt.Errorf("fetching NodePublishSecretRef %s/%s failed: %w", v.publishSecretRef.Namespace, v.publishSecretRef.Name, err)
	}
	tokens, err := h.csiTokens(ctx, pod, policy)
	if err != nil {
		// Upstream's wording, its typo included.
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: %w", err)
	}
	var tokenContext map[string]string
	if len(tokens) > 0 {
		if tokenContext, err = tokenAttrs(tokens); err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to create dir %q: %w", dir, err)
	}
	if err := saveVolData(dir, v.podVolData(h.NodeName)); err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to save volume info data: %w", err)
	}
	req := v.publishRequest(policy, caps, pod, stagingPath, target, publishContext, secrets, tokenContext, fsg.mountGroup)
	if err := csi.NodePublishVolume(callCtx, drv.Endpoint, req); err != nil {
		// vol_data.json stays: the publish may have happened, and the
		// pod's teardown unpublishes (idempotent) what it names.
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed: %w", redactTokens(err, tokens))
	}
	h.csi.mark(h.csi.owned, target, false)
	h.csi.mark(h.csi.done, target, false)
	h.csi.mark(h.csi.inUseExpandFailed, key, false)
	if err := h.csiOwnership(pod, v, fsg, target); err != nil {
		return Mounted{}, err
	}
	// A claim grown while no pod used it grows on the node at its mount.
	if err := h.expandCSI(ctx, pod, v, drv, caps, target, false); err != nil {
		return Mounted{}, err
	}
	h.csi.mark(h.csi.done, target, true)
	return m, nil
}

// csiOwnership applies the pod's fsGroup to a published target when the
// kubelet is the one to (fsg.walk), once per publish.
func (h *Host) csiOwnership(pod *v1.Pod, v csiVolume, fsg fsGroupPlan, target string) error {
	if !fsg.walk || h.csi.marked(h.csi.owned, target) {
		return nil
	}
	if err := ownership.Set(target, fsGroupOf(pod), fsGroupChangePolicyOf(pod), false); err != nil {
		return fmt.Errorf("applyFSGroup failed for vol %s: %w", v.handle, err)
	}
	h.csi.mark(h.csi.owned, target, true)
	return nil
}

// csiTokens are the tokens the driver asks for (tokenRequests), by
// audience: of the pod's service account, bound to the pod, from the
// token cache that projected volumes use, as upstream's kubelet takes
// them from its one token manager. None when the driver asks for none.
func (h *Host) csiTokens(ctx context.Context, pod *v1.Pod, policy csiDriverPolicy) (map[string]authenticationv1.TokenRequestStatus, error) {
	if len(policy.tokenRequests) == 0 {
		return nil, nil
	}
	out := make(map[string]authenticationv1.TokenRequestStatus, len(policy.tokenRequests))
	for _, tr := range policy.tokenRequests {
		st, err := h.Sources.ServiceAccountToken(ctx, pod, &v1.ServiceAccountTokenProjection{Audience: tr.Audience, ExpirationSeconds: tr.ExpirationSeconds})
		if err != nil {
			return nil, err
		}
		out[tr.Audience] = st
	}
	return out, nil
}

// csiSecrets reads a secret's data as strings, as upstream's
// getCredentialsFromSecret; none when ref is nil.
func (h *Host) csiSecrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	out := map[string]string{}
	if ref == nil {
		return out, nil
	}
	s, err := h.Sources.Secret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

// tearDownCSI unpublishes every CSI volume of the pod that its directory
// holds, as vol_data.json names it (so after a restart as well), and
// unstages each that no other pod on the node uses any more. A volume it
// cannot tear down (its driver gone, a failed call, a target still
// mounted) stays, with its directory, and is reported.
func (h *Host) tearDownCSI(uid types.UID) error {
	plugin := filepath.Join(PodVolumesDir(h.RootDir, uid), PluginCSI)
	return eachEntry(plugin, func(name string) error {
		return h.tearDownCSIVolume(uid, filepath.Join(plugin, name))
	})
}

// eachEntry calls f for each entry of dir (none if dir does not exist),
// going on past a failure, and reports them all.
func eachEntry(dir string, f func(name string) error) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, f(e.Name()))
	}
	return errors.Join(errs...)
}

func (h *Host) tearDownCSIVolume(uid types.UID, dir string) error {
	target := filepath.Join(dir, csiPodMountDir)
	data, err := loadVolData(dir)
	if os.IsNotExist(err) {
		// Nothing was published here; the generic teardown removes
		// what is left and refuses a mount point.
		return nil
	}
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: unmounter failed to load volume data file [%s]: %w", dir, err)
	}
	driver, handle := data[volDataDriverName], data[volDataVolHandle]
	key := CSIUniqueVolumeName(driver, handle)
	ctx, cancel := context.WithTimeout(context.Background(), CSITimeout)
	defer cancel()
	unlock, err := h.csi.lock(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	drv, err := h.csiDriver(driver)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to get CSI client: %w", err)
	}
	if err := csi.NodeUnpublishVolume(ctx, drv.Endpoint, handle, target); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed: %w", err)
	}
	h.csi.mark(h.csi.owned, target, false)
	h.csi.mark(h.csi.done, target, false)
	// The driver removes the target, as the CSI spec says; a buggy one
	// may leave it, empty and unmounted, which is removed here. Never a
	// mount point.
	if err := h.removeUnmounted(target); err != nil {
		return fmt.Errorf("kubernetes.io/csi: Unmounter.TearDownAt failed to clean mount dir [%s]: %w", target, err)
	}
	if err := os.Remove(filepath.Join(dir, volDataFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return err
	}
	if storagev1.VolumeLifecycleMode(data[volDataLifecycleMode]) == storagev1.VolumeLifecycleEphemeral {
		return nil
	}
	return h.unstageIfUnused(ctx, uid, drv, driver, handle)
}

// unstageIfUnused unstages the volume once no pod on the node has it
// published (no other pod directory names it), as upstream's
// UnmountDevice after the last unmount.
func (h *Host) unstageIfUnused(ctx context.Context, uid types.UID, drv registry.Driver, driver, handle string) error {
	global := csiGlobalDir(h.RootDir, driver, handle)
	if _, err := os.Stat(filepath.Join(global, volDataFile)); os.IsNotExist(err) {
		return nil // never staged (the driver does not stage)
	}
	others, err := h.csiVolDatas()
	if err != nil {
		return err
	}
	if !lastUser(uid, driver, handle, others) {
		return nil
	}
	staging := filepath.Join(global, csiGlobalMountDir)
	if err := csi.NodeUnstageVolume(ctx, drv.Endpoint, handle, staging); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.UnmountDevice failed: %w", err)
	}
	h.csi.mark(h.csi.staged, CSIUniqueVolumeName(driver, handle), false)
	if err := h.removeUnmounted(staging); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.UnmountDevice failed to clean %s: %w", staging, err)
	}
	if err := os.Remove(filepath.Join(global, volDataFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Remove(global); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// csiVolDatas reads the vol_data.json of every pod's CSI volumes.
func (h *Host) csiVolDatas() (map[types.UID][]map[string]string, error) {
	uids, err := h.PodDirs()
	if err != nil {
		return nil, err
	}
	out := map[types.UID][]map[string]string{}
	for _, uid := range uids {
		plugin := filepath.Join(PodVolumesDir(h.RootDir, uid), PluginCSI)
		entries, err := os.ReadDir(plugin)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if d, err := loadVolData(filepath.Join(plugin, e.Name())); err == nil {
				out[uid] = append(out[uid], d)
			}
		}
	}
	return out, nil
}

// removeUnmounted removes dir (it must be empty) unless it is a mount
// point, which is an error.
func (h *Host) removeUnmounted(dir string) error {
	isMnt, err := h.Mounter.IsMountPoint(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if isMnt {
		return fmt.Errorf("%s is still a mount point", dir)
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func saveVolData(dir string, data map[string]string) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, volDataFile), b, 0o640)
}

func loadVolData(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, volDataFile))
	if err != nil {
		return nil, err
	}
	var data map[string]string
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, err
	}
	return data, nil
}
