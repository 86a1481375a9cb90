package bootstrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/actorlet/actorlet/actors/statusreporter"
	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/hostsetup"
	"github.com/actorlet/actorlet/internal/nodecapacity"
	"github.com/actorlet/actorlet/internal/podruntime"
)

// checkHost is what upstream's container manager checks and changes on
// the host before the node's cgroups are set up: swap under failSwapOn
// (NewContainerManager), then the kernel tunables (setupNode), either of
// which fails the start.
//
// It returns the Node's Warning events its checks call for, as upstream's
// container manager and kubelet emit them at start-up.
func (a *Actor) checkHost() ([]statusreporter.StartWarning, error) {
	c := a.cfg
	swapOn, err := hostsetup.ReadSwapOn("/proc/swaps")
	if err != nil {
		return nil, err
	}
	if err := hostsetup.CheckSwap(c.FailSwapOn == nil || *c.FailSwapOn, swapOn); err != nil {
		return nil, err
	}
	if swapOn {
		a.log.Info().Msg("swap is on: containers get none (NoSwap) unless memorySwap.swapBehavior is LimitedSwap on cgroup v2")
	}
	uidMap, _ := os.ReadFile("/proc/self/uid_map")
	userns := hostsetup.InUserNamespace(uidMap)
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	facts := hostFacts{
		memoryMaySwap: hostsetup.MemoryBackedVolumesMaySwap(swapOn, hostsetup.TmpfsNoswapSupported(string(release), userns)),
		cgroupV1:      !cgroups.IsV2("/sys/fs/cgroup"),
		resolvConf:    podruntime.ResolvConfLimits(deref(c.ResolverConfig), c.ClusterDomain),
	}
	ignore := userns && a.gates.Enabled("KubeletInUserNamespace")
	return startWarnings(facts), hostsetup.SetupKernelTunables("/proc/sys", c.ProtectKernelDefaults, ignore, func(name string, from, to int, err error) {
		a.log.Info().Err(err).Str("flag", name).Int("actualValue", from).Int("expectedValue", to).Msg("updating kernel flag")
	})
}

// hostFacts are what the start-up checks found on the host.
type hostFacts struct {
	// memoryMaySwap: swap is on and tmpfs cannot be told not to swap.
	memoryMaySwap bool
	cgroupV1      bool
	// resolvConf is the problem of the host's resolv.conf, if any.
	resolvConf string
}

// cgroupV1Warning is upstream's CgroupV1DeprecatedWarning.
const cgroupV1Warning = "cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1"

// startWarnings are the Node's Warning events upstream emits for what its
// start-up found: in its container manager's construction, then its Run's
// cgroup version check, then its sync loop's start.
func startWarnings(f hostFacts) []statusreporter.StartWarning {
	var out []statusreporter.StartWarning
	if f.memoryMaySwap {
		out = append(out, statusreporter.StartWarning{Reason: events.PossibleMemoryBackedVolumesOnDisk,
			Message: "The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be swapped to disk and should no longer be considered secure."})
	}
	if f.cgroupV1 {
		out = append(out, statusreporter.StartWarning{Reason: events.CgroupV1, Message: cgroupV1Warning})
	}
	if f.resolvConf != "" {
		out = append(out, statusreporter.StartWarning{Reason: events.CheckLimitsForResolvConf, Message: f.resolvConf})
	}
	return out
}

// systemCgroups moves the agent into kubeletCgroups and the host's other
// processes (but init and kernel threads) into systemCgroups, as
// upstream's system containers: at start, then every minute, a failure
// logged. Both are cgroupfs names, as upstream's.
func (a *Actor) systemCgroups(m *cgroups.Manager) error {
	c := a.cfg
	if c.SystemCgroups == "/" {
		return errors.New(`system container cannot be root ("/")`)
	}
	if c.SystemCgroups == "" && c.KubeletCgroups == "" {
		return nil
	}
	ensure := func() {
		if c.SystemCgroups != "" {
			if err := ensureSystemCgroups(m, c.SystemCgroups); err != nil {
				a.log.Warn().Err(err).Str("containerName", c.SystemCgroups).Msg("failed to ensure state")
			}
		}
		if c.KubeletCgroups != "" {
			if err := m.Join(c.KubeletCgroups, os.Getpid()); err != nil {
				a.log.Warn().Err(err).Str("containerName", c.KubeletCgroups).Msg("failed to ensure state")
			}
		}
	}
	ensure()
	ctx := a.Context()
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ensure()
			}
		}
	}()
	return nil
}

// ensureSystemCgroups is upstream's: up to eleven passes over the root
// cgroup's processes, each moving those still there, keeping the last
// pass's error.
func ensureSystemCgroups(m *cgroups.Manager, name string) error {
	var last error
	for range 11 {
		all, err := m.Procs("/")
		if err != nil {
			last = fmt.Errorf("failed to list PIDs for root: %w", err)
			continue
		}
		pids := cgroups.SystemPids(all, cgroups.IsKernelPid)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			if err := m.Join(name, pid); err != nil {
				last = fmt.Errorf("failed to move PID %d into the system container %q: %w", pid, name, err)
			}
		}
	}
	return last
}

// singleProcessOOMKill is upstream's: unset, true on cgroup v1 (where the
// kernel has no group kill) and false on v2.
func singleProcessOOMKill(set *bool, v2 bool) bool {
	if set != nil {
		return *set
	}
	return !v2
}

// swap is what containers get of the node's swap: upstream's check for the
// swap controller (memory.memsw.limit_in_bytes on v1; on v2
// memory.swap.max in the agent's own cgroup, the root having none), the
// swap behaviour and the machine's swap.
func (a *Actor) swap(v2 bool, memory int64) podruntime.Swap {
	s := podruntime.Swap{Behavior: a.cfg.MemorySwap.SwapBehavior, MemoryCapacity: memory}
	p := "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"
	if v2 {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return s
		}
		p = filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(strings.TrimSpace(string(b)), "0::"), "memory.swap.max")
	}
	if _, err := os.Stat(p); err != nil {
		return s
	}
	s.Controller = true
	if n, err := nodecapacity.SwapTotal("/proc/meminfo"); err == nil {
		s.Capacity = n
	}
	return s
}
