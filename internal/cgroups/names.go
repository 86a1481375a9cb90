package cgroups

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The cgroup drivers of KubeletConfiguration.cgroupDriver.
const (
	CgroupDriverCgroupfs = "cgroupfs"
	CgroupDriverSystemd  = "systemd"
)

// systemdSliceSuffix ends the name of every systemd slice.
const systemdSliceSuffix = ".slice"

// podsCgroupName is the pods' parent below cgroupRoot, as upstream's
// defaultNodeAllocatableCgroupName.
const podsCgroupName = "kubepods"

// PodsCgroupParent is the cgroupfs path of the pods' parent cgroup for
// cgroupRoot under driver. Names are kept as upstream's cm.CgroupName: a
// list of components from the root (cgroupRoot's, then "kubepods"), which
// the cgroupfs driver joins with "/" (/kubepods) and the systemd driver
// turns into nested slices (/kubepods.slice), as CgroupName.ToSystemd.
func PodsCgroupParent(cgroupRoot, driver string) (string, error) {
	return cgroupPath(append(parseCgroupfs(cgroupRoot), podsCgroupName), cgroupRoot, driver)
}

// RootCgroup is the cgroupfs path of cgroupRoot itself for driver, where
// pods go without cgroupsPerQOS: "/" for "", and with systemd its slice.
func RootCgroup(cgroupRoot, driver string) (string, error) {
	return cgroupPath(parseCgroupfs(cgroupRoot), cgroupRoot, driver)
}

// cgroupPath is the cgroupfs path of the cgroup name (components from
// the root) for driver; cgroupRoot names it in errors.
func cgroupPath(name []string, cgroupRoot, driver string) (string, error) {
	if driver != CgroupDriverSystemd {
		return "/" + path.Join(name...), nil
	}
	for _, c := range name {
		// The systemd form maps "-" to "_" and back (upstream's
		// NewCgroupName refuses "_" for that reason), and "-" separates
		// the components of a slice's name.
		if strings.Contains(c, "_") || strings.HasSuffix(c, systemdSliceSuffix) {
			return "", fmt.Errorf("cgroupRoot %q: component %q cannot be a systemd slice name (with cgroupDriver: systemd, cgroupRoot is given in cgroupfs form without \"_\" and \".slice\", e.g. /, or /custom for custom.slice)", cgroupRoot, c)
		}
	}
	return toSystemd(name)
}

// ChildCgroup is the cgroupfs path of the cgroup named child below parent
// (a path PodsCgroupParent or ChildCgroup gave for driver): parent/child
// with cgroupfs, and with systemd the slice that extends parent's name,
// as upstream's ToSystemd of the parent's components plus child:
// /kubepods.slice and pod1234-ab give /kubepods.slice/kubepods-pod1234_ab.slice.
func ChildCgroup(parent, driver, child string) string {
	if driver != CgroupDriverSystemd {
		return path.Join(parent, child)
	}
	prefix := strings.TrimSuffix(path.Base(parent), systemdSliceSuffix)
	if prefix == "" || prefix == "/" || prefix == "-" {
		prefix = ""
	} else {
		prefix += "-"
	}
	return path.Join(parent, prefix+escapeSystemd(child)+systemdSliceSuffix)
}

// PodCgroupUID is the UID of the pod whose cgroup is named name (a base
// name) directly below parent, as ChildCgroup names it; ok is false for
// any other cgroup.
func PodCgroupUID(parent, driver, name string) (uid types.UID, ok bool) {
	if driver != CgroupDriverSystemd {
		rest, ok := strings.CutPrefix(name, podCgroupPrefix)
		return types.UID(rest), ok && rest != ""
	}
	prefix := path.Base(ChildCgroup(parent, driver, podCgroupPrefix))
	prefix = strings.TrimSuffix(prefix, systemdSliceSuffix)
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, systemdSliceSuffix)
	if !ok || rest == "" || strings.Contains(rest, "-") {
		return "", false // another slice below it, e.g. kubepods-burstable.slice
	}
	return types.UID(unescapeSystemd(rest)), true
}

// podCgroupPrefix starts the name of a pod's cgroup, before its UID.
const podCgroupPrefix = "pod"

// PodCgroupName is the cgroupfs path of the cgroup of the pod uid below
// the pods' parent.
func PodCgroupName(parent, driver string, uid types.UID) string {
	return ChildCgroup(parent, driver, podCgroupPrefix+string(uid))
}

// parseCgroupfs splits a cgroupfs path into its components, as upstream's
// ParseCgroupfsToCgroupName: "" and "/" are the root, no component.
func parseCgroupfs(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// toSystemd is upstream's CgroupName.ToSystemd: each component's "-"
// becomes "_", the components are joined by "-" into one slice name, and
// the slice is expanded into its cgroupfs path as systemd (and runc's
// ExpandSlice) nest slices: a-b.slice lives in a.slice.
func toSystemd(name []string) (string, error) {
	if len(name) == 0 {
		return "/", nil
	}
	var p, prefix string
	for _, c := range name {
		c = escapeSystemd(c)
		if c == "" {
			return "", fmt.Errorf("empty component in cgroup name %q", name)
		}
		p += "/" + prefix + c + systemdSliceSuffix
		prefix += c + "-"
	}
	return p, nil
}

func escapeSystemd(part string) string   { return strings.ReplaceAll(part, "-", "_") }
func unescapeSystemd(part string) string { return strings.ReplaceAll(part, "_", "-") }

// RuntimeCgroupDriver asks the container runtime for its cgroup driver
// (CRI RuntimeConfig), as upstream's getCgroupDriverFromCRI under the
// KubeletCgroupDriverFromCRI gate (GA, locked on): the runtime's answer
// wins over cgroupDriver, so that the pods' cgroup names are the ones the
// runtime's runc accepts. ok is false, and err nil, when the runtime does
// not say: it does not implement RuntimeConfig (containerd before 2.0),
// or gives no Linux configuration; the configuration then decides. Other
// errors are retried twice, 2 s apart, as upstream, and then returned.
func RuntimeCgroupDriver(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (driver string, ok bool, err error) {
	var resp *runtimeapi.RuntimeConfigResponse
	for i := 0; i < 3; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return "", false, ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
		call, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err = rt.RuntimeConfig(call, &runtimeapi.RuntimeConfigRequest{})
		cancel()
		if status.Code(err) == codes.Unimplemented {
			return "", false, nil
		}
		if err == nil {
			break
		}
	}
	if err != nil {
		return "", false, fmt.Errorf("container runtime configuration (its cgroup driver): %w", err)
	}
	linux := resp.GetLinux()
	if linux == nil {
		return "", false, nil
	}
	switch d := linux.GetCgroupDriver(); d {
	case runtimeapi.CgroupDriver_SYSTEMD:
		return CgroupDriverSystemd, true, nil
	case runtimeapi.CgroupDriver_CGROUPFS:
		return CgroupDriverCgroupfs, true, nil
	default:
		return "", false, fmt.Errorf("the container runtime returned an unknown cgroup driver %d", d)
	}
}

// SystemdRunDir exists when systemd is the init system of the machine, as
// sd_booted(3) and runc's IsRunningSystemd check.
const SystemdRunDir = "/run/systemd/system"

// CheckCgroupDriver fails when driver is systemd and systemd is not the
// init system, told by runDir (SystemdRunDir) being a directory: neither
// the runtime nor actorlet could then create or remove the pods' slices,
// and every pod would fail in the runtime. fromRuntime says the runtime
// chose the driver (RuntimeCgroupDriver), not cgroupDriver: the error then
// says to change the runtime's.
func CheckCgroupDriver(driver, runDir string, fromRuntime bool) error {
	if driver != CgroupDriverSystemd {
		return nil
	}
	if fi, err := os.Lstat(runDir); err == nil && fi.IsDir() {
		return nil
	}
	if fromRuntime {
		return fmt.Errorf("the container runtime's cgroup driver is systemd, but systemd is not the init system of this machine (no %s): configure the runtime for cgroupfs (containerd: SystemdCgroup = false)", runDir)
	}
	return fmt.Errorf("cgroupDriver is systemd, but systemd is not the init system of this machine (no %s): use cgroupDriver: cgroupfs", runDir)
}

// StopSystemdUnit stops the systemd unit named unit (a pod's slice, once
// empty) through systemctl, which every machine systemd runs has: systemd
// otherwise keeps a slice loaded after its last process left. It waits
// for the stop job, at most a minute.
func StopSystemdUnit(unit string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "stop", "--", unit).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl stop %s: %w: %s", unit, err, strings.TrimSpace(string(out)))
	}
	return nil
}
