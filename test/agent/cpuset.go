package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerCPUSet reads, on the host, the CPUs a running container may run
// on: its cgroup's cpuset (cpuset.cpus under cgroup v1,
// cpuset.cpus.effective under v2), found from its process's
// /proc/PID/cgroup; id is the CRI container ID.
func ContainerCPUSet(rt runtimeapi.RuntimeServiceClient, id string) (string, error) {
	return containerCpusetFile(rt, id, "cpuset.cpus", "cpuset.cpus.effective")
}

// ContainerCPUSetMems reads, on the host, the memory nodes a running
// container's cgroup was given: cpuset.mems under either hierarchy (under
// v2 empty when none was set, the parent's then in effect).
func ContainerCPUSetMems(rt runtimeapi.RuntimeServiceClient, id string) (string, error) {
	return containerCpusetFile(rt, id, "cpuset.mems", "cpuset.mems")
}

func containerCpusetFile(rt runtimeapi.RuntimeServiceClient, id, v1File, v2File string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return "", err
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.Pid == 0 {
		return "", fmt.Errorf("container %s: no pid in its verbose status (%v)", id, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", info.Pid))
	if err != nil {
		return "", err
	}
	// A cgroup v1 cpuset line first; the unified hierarchy's otherwise.
	var file string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) != 3:
		case strings.Contains(","+parts[1]+",", ",cpuset,"):
			file = filepath.Join("/sys/fs/cgroup/cpuset", parts[2], v1File)
		case parts[0] == "0" && parts[1] == "" && file == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], v2File)
		default:
			continue
		}
		if strings.HasPrefix(file, "/sys/fs/cgroup/cpuset/") {
			break
		}
	}
	if file != "" {
		out, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(out)), nil
	}
	return "", fmt.Errorf("container %s: no cpuset cgroup in /proc/%d/cgroup", id, info.Pid)
}

// ContainerSpecCPUSetMems reads the memory nodes the runtime was asked to
// give a container, from its OCI spec in its verbose status
// (linux.resources.cpu.mems): "" when none was asked, which the cgroup
// cannot tell on a one-node machine (cgroup v1 copies the parent's).
func ContainerSpecCPUSetMems(rt runtimeapi.RuntimeServiceClient, id string) (string, error) {
	cpu, err := ContainerSpecCPU(rt, id)
	return cpu.Mems, err
}

// SpecCPU is the CPU part of a container's OCI spec
// (linux.resources.cpu): what the runtime was asked for.
type SpecCPU struct {
	Mems   string  `json:"mems"`
	Quota  *int64  `json:"quota"`
	Period *uint64 `json:"period"`
}

// ContainerSpecCPU reads the CPU resources of a container's OCI spec from
// its verbose status; zero when the spec has none.
func ContainerSpecCPU(rt runtimeapi.RuntimeServiceClient, id string) (SpecCPU, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return SpecCPU{}, err
	}
	var info struct {
		RuntimeSpec *struct {
			Linux *struct {
				Resources *struct {
					CPU *SpecCPU `json:"cpu"`
				} `json:"resources"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.RuntimeSpec == nil {
		return SpecCPU{}, fmt.Errorf("container %s: no runtime spec in its verbose status (%v)", id, err)
	}
	if l := info.RuntimeSpec.Linux; l != nil && l.Resources != nil && l.Resources.CPU != nil {
		return *l.Resources.CPU, nil
	}
	return SpecCPU{}, nil
}
