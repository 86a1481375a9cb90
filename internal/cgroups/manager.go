package cgroups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/metrics"
)

// Config configures a Manager.
type Config struct {
	// Root is where the cgroup filesystems are mounted (/sys/fs/cgroup):
	// one directory per v1 hierarchy, or the v2 unified one when Root
	// holds cgroup.controllers.
	Root string
	Layout
	// PodPidsLimit is podPidsLimit: pids.max of each pod cgroup when > 0.
	PodPidsLimit int64
	// EnforceCPULimits is cpuCFSQuota: false leaves pods' CFS quota
	// unlimited.
	EnforceCPULimits bool
	// PodExclusiveCPUs reports whether a pod holds exclusive CPUs (the CPU
	// manager's static policy); its pod cgroup's CFS quota is then
	// unlimited, as upstream's DisableCPUQuotaWithExclusiveCPUs. Nil: none.
	PodExclusiveCPUs func(podUID string) bool
	// QOSReservedMemory is qosReserved's memory percentage under the
	// QOSReserved gate (nil: no QoS memory limits); AllocatableMemory the
	// node allocatable memory it is taken from (QoSMemoryLimits).
	QOSReservedMemory *int64
	AllocatableMemory int64
	// CPUPeriod is cpuCFSQuotaPeriod in µs, the pod cgroups' CFS period
	// (0: QuotaPeriod).
	CPUPeriod uint64
	// NodeAllocatable bounds kubepods (enforceNodeAllocatable: pods; see
	// AllocatableAbsolute); nil leaves kubepods unbounded.
	NodeAllocatable v1.ResourceList
	Log             zerolog.Logger
	// HugePagesDir lists the machine's huge page sizes
	// (/sys/kernel/mm/hugepages when empty).
	HugePagesDir string
}

// Manager creates and updates the node's cgroups under Config.Root, as
// upstream's qosContainerManager and podContainerManager with the
// cgroupfs manager of runc's library. Its methods are safe for concurrent
// use: pod-workers call them from their own goroutines. It keeps the set
// of active pods (those EnsureExists saw and Forget did not drop), whose
// Burstable requests are the burstable cgroup's shares.
type Manager struct {
	cfg  Config
	pods string // kubepods (cgroupRoot without cgroupsPerQOS)
	v2   bool
	// hugePageSizes are the machine's huge page sizes, when hugetlb is
	// there to limit them.
	hugePageSizes []int64

	mu sync.Mutex
	// active are the pods' QoS class and CPU request, by UID.
	active map[types.UID]*v1.Pod
	// burstableShares is what the burstable cgroup was last given;
	// qosMemory the burstable and besteffort memory limits (qosReserved).
	burstableShares uint64
	qosMemory       [2]int64
	// write writes a cgroup file; writeFile but in tests that make a
	// write fail.
	write func(dir, file, value string) error
}

// New returns a Manager for cfg; nothing is created before Start.
func New(cfg Config) (*Manager, error) {
	pods, err := cfg.Layout.NodeAllocatable()
	if err != nil {
		return nil, err
	}
	if cfg.Root == "" {
		cfg.Root = "/sys/fs/cgroup"
	}
	m := &Manager{cfg: cfg, pods: pods, v2: IsV2(cfg.Root), active: map[types.UID]*v1.Pod{}, write: writeFile}
	if m.hasHugetlb() {
		if cfg.HugePagesDir == "" {
			cfg.HugePagesDir = "/sys/kernel/mm/hugepages"
		}
		m.hugePageSizes = HugePageSizes(cfg.HugePagesDir)
	}
	return m, nil
}

// IsV2 tells whether the cgroup filesystem mounted at root is the v2
// unified hierarchy (its root holds cgroup.controllers).
func IsV2(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// V2 tells whether the node's cgroups are v2.
func (m *Manager) V2() bool { return m.v2 }

// hasHugetlb tells whether the hugetlb controller is there: its v1
// hierarchy, or in the v2 root's controllers.
func (m *Manager) hasHugetlb() bool {
	if !m.v2 {
		_, err := os.Stat(filepath.Join(m.cfg.Root, "hugetlb"))
		return err == nil
	}
	b, _ := os.ReadFile(filepath.Join(m.cfg.Root, "cgroup.controllers"))
	return slices.Contains(strings.Fields(string(b)), "hugetlb")
}

// unboundedHugePages is upstream's setHugePagesUnbounded for the QoS
// cgroups: every page size at 1<<62.
func (m *Manager) unboundedHugePages() map[int64]int64 {
	out := map[int64]int64{}
	for _, s := range m.hugePageSizes {
		out[s] = 1 << 62
	}
	return out
}

// PodsCgroup is the cgroupfs path of kubepods (cgroupRoot without
// cgroupsPerQOS): the node-allocatable cgroup.
func (m *Manager) PodsCgroup() string { return m.pods }

// PodParents are the cgroupfs paths whose children are pod cgroups:
// kubepods, burstable and besteffort; none without cgroupsPerQOS.
func (m *Manager) PodParents() []string { return m.cfg.Layout.PodParents(m.pods) }

// Start creates the node-allocatable cgroup with its limits and, with
// cgroupsPerQOS, the burstable and besteffort cgroups, as upstream's
// createNodeAllocatableCgroups, enforceNodeAllocatableCgroups and
// qosContainerManager.Start. Without cgroupsPerQOS the node-allocatable
// cgroup is cgroupRoot, left as it is.
func (m *Manager) Start() error {
	if !m.cfg.PerQOS {
		return nil
	}
	if err := m.apply(m.pods, NodeAllocatableConfig(m.cfg.NodeAllocatable, false)); err != nil {
		return fmt.Errorf("node allocatable cgroup %s: %w", m.pods, err)
	}
	return m.UpdateQoS()
}

// CgroupParent is the pod's cgroup, in cgroupfs form: its sandbox's
// CgroupParent.
func (m *Manager) CgroupParent(pod *v1.Pod) string {
	return m.cfg.Layout.Pod(m.pods, pod.UID, QOSClass(pod))
}

// EnsureExists creates the pod's cgroup with its limits (ForPod, pids.max
// from podPidsLimit) if it does not exist, as upstream's
// podContainerManager.EnsureExists before the sandbox is run, and counts
// the pod as active: the QoS cgroups are updated first when that changes
// what they get, as upstream's SyncPod does before creating a pod cgroup.
// An existing cgroup is left as it is (Update changes it). Without
// cgroupsPerQOS there is no pod cgroup: nothing is made.
func (m *Manager) EnsureExists(pod *v1.Pod) error {
	if !m.cfg.PerQOS {
		return nil
	}
	m.track(pod)
	if err := m.UpdateQoS(); err != nil {
		m.cfg.Log.Warn().Err(err).Msg("QoS cgroups not updated")
	}
	name := m.CgroupParent(pod)
	if m.exists(name) {
		return nil
	}
	if err := m.applyAs(metrics.CgroupCreate, name, m.podConfig(pod)); err != nil {
		return fmt.Errorf("pod cgroup %s of pod %s/%s: %w", name, pod.Namespace, pod.Name, err)
	}
	return nil
}

// Update re-applies the pod's cgroup limits, computed from pod as given:
// after an in-place resize, the caller passes the pod whose container
// resources are the allocated ones. The cgroup is created if missing,
// the pod counted as active and the QoS cgroups updated, since the
// Burstable pods' requests may have changed. Without cgroupsPerQOS there
// is no pod cgroup: nothing is done.
func (m *Manager) Update(pod *v1.Pod) error {
	if !m.cfg.PerQOS {
		return nil
	}
	m.track(pod)
	if err := m.UpdateQoS(); err != nil {
		m.cfg.Log.Warn().Err(err).Msg("QoS cgroups not updated")
	}
	name := m.CgroupParent(pod)
	if err := m.apply(name, m.podConfig(pod)); err != nil {
		return fmt.Errorf("update pod cgroup %s of pod %s/%s: %w", name, pod.Namespace, pod.Name, err)
	}
	return nil
}

// Forget drops the pod from the active pods, once its containers are
// stopped, and updates the QoS cgroups. Its cgroup stays for the garbage
// collector (actors/gc), which removes it once the runtime holds nothing
// of the pod, as upstream's cleanupOrphanedPodCgroups.
func (m *Manager) Forget(uid types.UID) {
	if !m.cfg.PerQOS {
		return
	}
	m.mu.Lock()
	_, ok := m.active[uid]
	delete(m.active, uid)
	m.mu.Unlock()
	if ok {
		if err := m.UpdateQoS(); err != nil {
			m.cfg.Log.Warn().Err(err).Msg("QoS cgroups not updated")
		}
	}
}

func (m *Manager) track(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active[pod.UID] = pod
}

func (m *Manager) podConfig(pod *v1.Pod) ResourceConfig {
	enforce := m.cfg.EnforceCPULimits
	if enforce && m.cfg.PodExclusiveCPUs != nil && m.cfg.PodExclusiveCPUs(string(pod.UID)) {
		enforce = false
	}
	rc := ForPod(pod, enforce, m.cfg.CPUPeriod)
	if m.cfg.PodPidsLimit > 0 {
		p := m.cfg.PodPidsLimit
		rc.PidsLimit = &p
	}
	return rc
}

// UpdateQoS sets the QoS cgroups' shares for the active pods (QoSConfigs),
// creating the cgroups if missing. The burstable cgroup's files are only
// written when its shares change.
func (m *Manager) UpdateQoS() error {
	if !m.cfg.PerQOS {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(m.active))
	for _, p := range m.active {
		pods = append(pods, p)
	}
	burstable, bestEffort := QoSConfigs(pods)
	burstable.HugePageLimit, bestEffort.HugePageLimit = m.unboundedHugePages(), m.unboundedHugePages()
	var memory [2]int64
	if p := m.cfg.QOSReservedMemory; p != nil {
		if b, be, ok := QoSMemoryLimits(pods, *p, m.cfg.AllocatableMemory); ok {
			burstable.Memory, bestEffort.Memory = &b, &be
			memory = [2]int64{b, be}
		}
	}
	be := m.cfg.Layout.QoS(m.pods, v1.PodQOSBestEffort)
	b := m.cfg.Layout.QoS(m.pods, v1.PodQOSBurstable)
	if m.burstableShares == *burstable.CPUShares && m.qosMemory == memory && m.exists(b) && m.exists(be) {
		return nil
	}
	errBE, errB := m.apply(be, bestEffort), m.apply(b, burstable)
	if (errBE != nil || errB != nil) && burstable.Memory != nil {
		// The kernel refuses a memory limit below what the cgroup holds
		// and cannot reclaim: as upstream's retrySetMemoryReserve, the
		// limit is set at the usage instead, to stop its growth, and both
		// cgroups are written again.
		for name, limit := range map[string]*int64{be: bestEffort.Memory, b: burstable.Memory} {
			if usage, err := m.memoryUsage(name); err == nil {
				*limit = RaisedToUsage(*limit, usage)
			}
		}
		memory = [2]int64{*burstable.Memory, *bestEffort.Memory}
		errBE, errB = m.apply(be, bestEffort), m.apply(b, burstable)
	}
	if errBE != nil {
		return fmt.Errorf("besteffort cgroup %s: %w", be, errBE)
	}
	if errB != nil {
		return fmt.Errorf("burstable cgroup %s: %w", b, errB)
	}
	m.burstableShares, m.qosMemory = *burstable.CPUShares, memory
	return nil
}

// memoryUsage is the cgroup's memory usage: memory.usage_in_bytes on v1,
// memory.current on v2.
func (m *Manager) memoryUsage(name string) (int64, error) {
	file := "memory.usage_in_bytes"
	if m.v2 {
		file = "memory.current"
	}
	b, err := os.ReadFile(filepath.Join(m.dir(name, "memory"), file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// v1Subsystems are the cgroup v1 hierarchies a cgroup is created in, as
// runc's fs manager creates it in every mounted one it knows.
var v1Subsystems = []string{"cpuset", "cpu", "cpuacct", "memory", "pids", "hugetlb", "blkio",
	"devices", "freezer", "net_cls", "net_prio", "perf_event", "rdma", "systemd"}

// hierarchies are the directories of the cgroup name, one per mounted v1
// hierarchy (joined hierarchies such as cpu,cpuacct once) by subsystem,
// or the one v2 directory under "".
func (m *Manager) hierarchies(name string) map[string]string {
	if m.v2 {
		return map[string]string{"": filepath.Join(m.cfg.Root, name)}
	}
	out, seen := map[string]string{}, map[string]bool{}
	for _, s := range v1Subsystems {
		dir := filepath.Join(m.cfg.Root, s)
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		seen[real] = true
		out[s] = filepath.Join(real, name)
	}
	return out
}

// dir is the cgroup name's directory for controller's files.
func (m *Manager) dir(name, controller string) string {
	if m.v2 {
		return filepath.Join(m.cfg.Root, name)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(m.cfg.Root, controller))
	if err != nil {
		real = filepath.Join(m.cfg.Root, controller)
	}
	return filepath.Join(real, name)
}

// exists tells whether the cgroup has its cpu, memory and pids
// directories (v1: those mounted), as upstream's Exists checks the
// subsystems it manages.
func (m *Manager) exists(name string) bool {
	if m.v2 {
		fi, err := os.Stat(filepath.Join(m.cfg.Root, name))
		return err == nil && fi.IsDir()
	}
	h := m.hierarchies(name)
	for _, s := range []string{"cpu", "memory", "pids"} {
		if dir, ok := h[s]; ok {
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return false
			}
		}
	}
	return true
}

// apply creates the cgroup name if missing and writes rc's files to it.
// It is timed in kubelet_cgroup_manager_duration_seconds as upstream's
// cgroup manager's Create (a pod's new cgroup, EnsureExists) or Update
// (every other).
func (m *Manager) apply(name string, rc ResourceConfig) error {
	return m.applyAs(metrics.CgroupUpdate, name, rc)
}

func (m *Manager) applyAs(op, name string, rc ResourceConfig) error {
	defer func(start time.Time) {
		metrics.CgroupManagerDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	}(time.Now())
	if err := m.create(name); err != nil {
		return err
	}
	var errs []error
	var periodFailed *setting
	for _, s := range settings(rc, m.v2, m.hugePageSizes...) {
		err := m.write(m.dir(name, s.Controller), s.File, s.Value)
		switch {
		case err == nil:
		case s.File == "cpu.cfs_period_us" && errors.Is(err, syscall.EINVAL):
			// The kernel refuses a shorter period while the current quota
			// over it would exceed the parent's: runc retries it after
			// the quota.
			periodFailed = &s
		default:
			errs = append(errs, err)
		}
	}
	if periodFailed != nil {
		errs = append(errs, m.write(m.dir(name, "cpu"), periodFailed.File, periodFailed.Value))
	}
	return errors.Join(errs...)
}

// create makes the cgroup's directories, level by level: on v1 a new
// cpuset level gets its parent's cpus and mems (an empty cpuset takes no
// process), on v2 each parent delegates the controllers its children's
// files need, as runc does.
func (m *Manager) create(name string) error {
	parts := strings.Split(strings.Trim(filepath.Clean("/"+name), "/"), "/")
	for subsystem, dir := range m.hierarchies("/") {
		cur := dir
		for _, p := range parts {
			if p == "" {
				continue
			}
			parent := cur
			cur = filepath.Join(cur, p)
			if m.v2 {
				if err := delegate(parent); err != nil {
					return err
				}
			}
			if err := os.Mkdir(cur, 0o755); err != nil {
				if os.IsExist(err) {
					continue
				}
				return fmt.Errorf("create cgroup: %w", err)
			}
			if subsystem == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := copyIfEmpty(parent, cur, f); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// v2Controllers are the controllers a v2 cgroup's children need.
var v2Controllers = []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids"}

// delegate enables in dir's cgroup.subtree_control the controllers of
// v2Controllers that dir has (its cgroup.controllers) and not yet
// delegates.
func delegate(dir string) error {
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup controllers: %w", err)
	}
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	on := map[string]bool{}
	for _, c := range strings.Fields(string(enabled)) {
		on[c] = true
	}
	var add []string
	for _, c := range strings.Fields(string(have)) {
		for _, want := range v2Controllers {
			if c == want && !on[c] {
				add = append(add, "+"+c)
			}
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeFile(dir, "cgroup.subtree_control", strings.Join(add, " "))
}

func copyIfEmpty(parent, dir, file string) error {
	cur, err := os.ReadFile(filepath.Join(dir, file))
	if err == nil && strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	v, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return fmt.Errorf("cpuset of %s: %w", parent, err)
	}
	return writeFile(dir, file, strings.TrimSpace(string(v)))
}

// writeFile writes a cgroup file as runc does (truncating, no create on a
// real cgroupfs, where every file exists; tests' plain directories get it
// created).
func writeFile(dir, file, value string) error {
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return nil
}

// EnforceReserved sets the limits of the existing cgroup name (cgroupfs
// form; systemReservedCgroup or kubeReservedCgroup) from the reserved
// resources rl, as upstream's enforceExistingCgroup for the
// system-reserved and kube-reserved enforcements (compressibleOnly: the
// -compressible ones, CPU shares alone). The cgroup must exist: the
// system's daemons run in it, actorlet does not make it.
func (m *Manager) EnforceReserved(name string, rl v1.ResourceList, compressibleOnly bool) error {
	if !m.exists(name) {
		return fmt.Errorf("cgroup %q does not exist", name)
	}
	return m.apply(name, NodeAllocatableConfig(rl, compressibleOnly))
}

// PidMax is the machine's PID capacity, /proc/sys/kernel/pid_max (path),
// the pid resource of upstream's internal capacity that kubepods' pids.max
// comes from.
func PidMax(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
