package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// podNetwork reads the pod's interfaces in its network namespace, through
// /proc/<pid>/net/dev of the sandbox's process, as cAdvisor reads the
// sandbox container's. nil, logged, when the sandbox is not ready or its
// process cannot be found: the rest of the pod's figures still count.
func (p *Provider) podNetwork(ctx context.Context, sb *runtimeapi.PodSandbox, now time.Time) *statsapi.NetworkStats {
	devs, err := p.sandboxNetDevices(ctx, sb)
	if err != nil {
		p.Log.Debug().Str("sandbox", sb.GetId()).Err(err).Msg("pod network statistics left out")
		return nil
	}
	if devs == nil {
		return nil
	}
	var ifaces []statsapi.InterfaceStats
	for _, d := range devs {
		ifaces = append(ifaces, statsapi.InterfaceStats{
			Name: d.name, RxBytes: ptrTo(d.rxBytes), RxErrors: ptrTo(d.rxErrors), TxBytes: ptrTo(d.txBytes), TxErrors: ptrTo(d.txErrors),
		})
	}
	return networkStats(now, ifaces)
}

// sandboxNetDevices reads the counters of the interfaces in the sandbox's
// network namespace; nil without error when the sandbox is not ready.
func (p *Provider) sandboxNetDevices(ctx context.Context, sb *runtimeapi.PodSandbox) ([]netDevice, error) {
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, nil
	}
	pid, err := p.sandboxPID(ctx, sb.GetId())
	if err != nil {
		return nil, err
	}
	path := p.hostPath("proc", strconv.Itoa(pid), "net", "dev")
	data, err := os.ReadFile(path)
	if err != nil {
		// The process is gone: the sandbox is stopping, or was
		// restarted; the next request asks again.
		p.pidsMu.Lock()
		delete(p.sandboxPIDs, sb.GetId())
		delete(p.sandboxImages, sb.GetId())
		p.pidsMu.Unlock()
		return nil, err
	}
	devs, err := parseNetDevices(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if devs == nil {
		devs = []netDevice{}
	}
	return devs, nil
}

// sandboxPID is the pid of the sandbox's process, from the runtime's
// verbose status (containerd's info.pid), remembered for the sandbox's
// life.
func (p *Provider) sandboxPID(ctx context.Context, id string) (int, error) {
	p.pidsMu.Lock()
	pid, ok := p.sandboxPIDs[id]
	p.pidsMu.Unlock()
	if ok {
		return pid, nil
	}
	resp, err := p.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("CRI PodSandboxStatus: %w", err)
	}
	var info struct {
		Pid   int    `json:"pid"`
		Image string `json:"image"`
	}
	raw, ok := resp.GetInfo()["info"]
	if !ok {
		return 0, fmt.Errorf("CRI PodSandboxStatus: no info in the verbose status")
	}
	if err := json.Unmarshal([]byte(raw), &info); err != nil {
		return 0, fmt.Errorf("CRI PodSandboxStatus: verbose info: %w", err)
	}
	if info.Pid <= 0 {
		return 0, fmt.Errorf("CRI PodSandboxStatus: no pid in the verbose info")
	}
	p.pidsMu.Lock()
	p.sandboxPIDs[id] = info.Pid
	p.sandboxImages[id] = info.Image
	p.pidsMu.Unlock()
	return info.Pid, nil
}

// sandboxImage is the sandbox's (pause) image as the runtime's verbose
// status names it (containerd's info.image), "" when unknown.
func (p *Provider) sandboxImage(ctx context.Context, id string) string {
	if _, err := p.sandboxPID(ctx, id); err != nil {
		return ""
	}
	p.pidsMu.Lock()
	defer p.pidsMu.Unlock()
	return p.sandboxImages[id]
}

// forgetSandboxPIDs drops the pids and images of sandboxes no longer
// listed. Both maps are walked: an image may outlive its pid.
func (p *Provider) forgetSandboxPIDs(listed map[string]*runtimeapi.PodSandbox) {
	p.pidsMu.Lock()
	defer p.pidsMu.Unlock()
	for id := range p.sandboxPIDs {
		if _, ok := listed[id]; !ok {
			delete(p.sandboxPIDs, id)
		}
	}
	for id := range p.sandboxImages {
		if _, ok := listed[id]; !ok {
			delete(p.sandboxImages, id)
		}
	}
}
