// Package hostsetup is what upstream's container manager checks and
// changes on the host as the kubelet starts: swap (failSwapOn), the kernel
// tunables the kubelet relies on (protectKernelDefaults), the agent's own
// cgroup (kubeletCgroups), the system's processes' cgroup (systemCgroups),
// and the open files limit (maxOpenFiles). The decisions are pure
// functions; the I/O functions beside them read and write /proc and the
// cgroup filesystem.
package hostsetup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// ErrSwapOn is upstream's refusal to run with swap on under failSwapOn.
var ErrSwapOn = errors.New("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false")

// SwapOn is upstream's isSwapOnAccordingToProcSwaps: /proc/swaps lists a
// swap area below its header line.
func SwapOn(procSwaps []byte) bool {
	s := strings.TrimSpace(string(procSwaps))
	return len(strings.Split(s, "\n")) > 1
}

// CheckSwap is upstream's NewContainerManager's swap check: swap on fails
// the start under failSwapOn.
func CheckSwap(failSwapOn, swapOn bool) error {
	if swapOn && failSwapOn {
		return ErrSwapOn
	}
	return nil
}

// ReadSwapOn reads /proc/swaps (procSwaps) as upstream's IsSwapOn: a
// missing file (a kernel without swap) is swap off.
func ReadSwapOn(procSwaps string) (bool, error) {
	b, err := os.ReadFile(procSwaps)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to determine if swap is on: %w", err)
	}
	return SwapOn(b), nil
}

// Tunables are upstream's setupKernelTunables' desired kernel settings,
// by their path under /proc/sys, as upstream names them.
var Tunables = map[string]int{
	"vm/overcommit_memory":      1,
	"vm/panic_on_oom":           0,
	"kernel/panic":              10,
	"kernel/panic_on_oops":      1,
	"kernel/keys/root_maxkeys":  1000000,
	"kernel/keys/root_maxbytes": 25000000,
}

// TunablePlan is upstream's setupKernelTunables' decision: with
// protectKernelDefaults each differing setting is an error, upstream's
// "invalid kernel flag"; without it, the settings to write. A setting that
// could not be read is an error either way. Sorted by name.
func TunablePlan(current map[string]int, readErrs map[string]error, protect bool) (set []string, errs []error) {
	names := make([]string, 0, len(Tunables))
	for name := range Tunables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := Tunables[name]
		if err, ok := readErrs[name]; ok {
			errs = append(errs, err)
			continue
		}
		got := current[name]
		if got == want {
			continue
		}
		if protect {
			errs = append(errs, fmt.Errorf("invalid kernel flag: %v, expected value: %v, actual value: %v", name, want, got))
			continue
		}
		set = append(set, name)
	}
	return set, errs
}

// SetupKernelTunables reads the Tunables under procSys (/proc/sys) and
// checks or writes them (TunablePlan). A write the kernel refuses is an
// error, as upstream's, unless ignoreWriteErrors (upstream's
// KubeletInUserNamespace in a user namespace, where they cannot be
// written); each write is logged through logf.
func SetupKernelTunables(procSys string, protect, ignoreWriteErrors bool, logf func(name string, from, to int, err error)) error {
	current, readErrs := map[string]int{}, map[string]error{}
	for name := range Tunables {
		b, err := os.ReadFile(filepath.Join(procSys, name))
		if err == nil {
			var n int
			n, err = strconv.Atoi(strings.TrimSpace(string(b)))
			current[name] = n
		}
		if err != nil {
			readErrs[name] = err
		}
	}
	set, errs := TunablePlan(current, readErrs, protect)
	for _, name := range set {
		err := os.WriteFile(filepath.Join(procSys, name), []byte(strconv.Itoa(Tunables[name])), 0o644)
		logf(name, current[name], Tunables[name], err)
		if err != nil && !ignoreWriteErrors {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// InUserNamespace tells whether the process runs in a user namespace
// other than the initial one, from its uid_map (upstream's
// RunningInUserNS).
func InUserNamespace(uidMap []byte) bool {
	f := strings.Fields(string(uidMap))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// SetNumFiles is upstream's rlimit.SetNumFiles for maxOpenFiles: the open
// files limit, soft and hard, of the agent.
func SetNumFiles(n uint64) error {
	return unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n})
}

// TmpfsNoswapSupported is upstream's IsTmpfsNoswapOptionSupported from
// the kernel's release (/proc/sys/kernel/osrelease): not in a user
// namespace, where an unprivileged tmpfs cannot turn swap off, and from
// Linux 6.4 on. Upstream also tries a tmpfs mount with noswap on older
// kernels (a distribution's backport); that mount is not tried here, so
// such a kernel counts as without it.
func TmpfsNoswapSupported(kernelRelease string, inUserNamespace bool) bool {
	if inUserNamespace {
		return false
	}
	v, err := utilversion.ParseGeneric(strings.TrimSpace(kernelRelease))
	return err == nil && v.AtLeast(utilversion.MajorMinor(6, 4))
}

// MemoryBackedVolumesMaySwap is upstream's condition of its
// PossibleMemoryBackedVolumesOnDisk event at start-up: swap is on and
// tmpfs cannot be told not to swap.
func MemoryBackedVolumesMaySwap(swapOn, tmpfsNoswap bool) bool {
	return swapOn && !tmpfsNoswap
}
