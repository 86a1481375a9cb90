package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// containerPass is one container GC pass: what it needs, copied by value
// into the goroutine that runs it.
type containerPass struct {
	Runtime    runtimeapi.RuntimeServiceClient
	Policy     containerPolicy
	PodLogsDir string // "" : no log directory cleanup
	// ContainerLogsDir holds the containers' log links
	// (/var/log/containers); "" : no link cleanup.
	ContainerLogsDir string
	// Cgroups is where the pod cgroups are; its Root or Parent ""
	// turns pod cgroup cleanup off.
	Cgroups podCgroups
	// Selector, when set, restricts the pass to the containers and
	// sandboxes with these labels (tests: one pod on a shared runtime).
	Selector map[string]string
	Log      zerolog.Logger
}

// failure is an error that stopped a pass, or part of one (a listing it
// needs), as opposed to one removal failing. Upstream reports failures as
// events and only logs failed removals.
type failure struct{ err error }

func (f failure) Error() string { return f.err.Error() }
func (f failure) Unwrap() error { return f.err }

// Run lists the runtime, removes what selectContainers chooses and removes
// pod log directories. It carries on past failed removals and reports them.
func (p containerPass) Run(ctx context.Context, known knownPods) *messages.ContainerGCDone {
	start := time.Now()
	done := &messages.ContainerGCDone{Started: start}
	defer func() { done.Duration = time.Since(start) }()
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, callTimeout) }
	if p.Runtime == nil {
		done.Errs = append(done.Errs, failure{errNoRuntime})
		return done
	}

	c, cancel := call()
	cl, err := p.Runtime.ListContainers(c, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: p.Selector}})
	cancel()
	if err != nil {
		done.Errs = append(done.Errs, failure{fmt.Errorf("list containers: %w", err)})
		return done
	}
	c, cancel = call()
	sl, err := p.Runtime.ListPodSandbox(c, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: p.Selector}})
	cancel()
	if err != nil {
		done.Errs = append(done.Errs, failure{fmt.Errorf("list pod sandboxes: %w", err)})
		return done
	}
	containers, sandboxes := cl.Containers, sl.Items
	rmContainers, rmSandboxes := selectContainers(containers, sandboxes, known, start, p.Policy)

	gone := map[string]bool{}
	for _, id := range rmContainers {
		if err := p.removeContainer(ctx, id); err != nil {
			done.Errs = append(done.Errs, err)
			continue
		}
		gone[id] = true
		done.ContainersRemoved++
	}
	for _, id := range rmSandboxes {
		c, cancel := call()
		_, err := p.Runtime.RemovePodSandbox(c, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		cancel()
		if err != nil {
			done.Errs = append(done.Errs, fmt.Errorf("remove sandbox %s: %w", id, err))
			continue
		}
		p.Log.Debug().Str("sandbox", id).Msg("removed dead sandbox")
		gone[id] = true
		done.SandboxesRemoved++
	}

	p.removeDanglingLogLinks(ctx)

	// Pod log directories of pods with nothing left, once the pod-manager's
	// set is complete (upstream: only when all sources are ready).
	if p.PodLogsDir != "" && known.Complete {
		left := map[types.UID]bool{}
		for _, ct := range containers {
			if !gone[ct.Id] {
				left[types.UID(ct.GetLabels()[podruntime.LabelPodUID])] = true
			}
		}
		for _, s := range sandboxes {
			if !gone[s.Id] {
				left[types.UID(s.GetLabels()[podruntime.LabelPodUID])] = true
			}
		}
		n, errs := removeLogDirs(p.PodLogsDir, known, left)
		done.LogDirsRemoved += n
		done.Errs = append(done.Errs, errs...)
		if p.Cgroups.Root != "" && len(p.Cgroups.Parents) > 0 {
			n, errs := removePodCgroups(p.Cgroups, known, left)
			done.PodCgroupsRemoved += n
			// A cgroup that cannot go yet is routine (processes still
			// leaving); it is tried again next pass, not reported.
			for _, err := range errs {
				p.Log.Debug().Err(err).Msg("pod cgroup not removed yet")
			}
		}
	}
	return done
}

// removeContainer removes a container and then its log files, as upstream's
// removeContainer (the runtime keeps the log).
func (p containerPass) removeContainer(ctx context.Context, id string) error {
	c, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var logPath string
	var labels map[string]string
	if st, err := p.Runtime.ContainerStatus(c, &runtimeapi.ContainerStatusRequest{ContainerId: id}); err == nil {
		logPath, labels = st.GetStatus().GetLogPath(), st.GetStatus().GetLabels()
	}
	if _, err := p.Runtime.RemoveContainer(c, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	p.Log.Debug().Str("container", id).Msg("removed dead container")
	if p.ContainerLogsDir != "" && labels != nil {
		link := podruntime.LogSymlink(p.ContainerLogsDir, labels[podruntime.LabelPodName], labels[podruntime.LabelPodNamespace],
			labels[podruntime.LabelContainerName], id)
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			p.Log.Error().Err(err).Str("path", link).Msg("failed to remove the container's log symbolic link")
		}
	}
	if logPath != "" {
		_ = os.Remove(logPath)
		for _, r := range rotatedLogs(logPath) {
			_ = os.Remove(r)
		}
	}
	return nil
}

// removeDanglingLogLinks removes the log links whose log file is gone, as
// upstream's container GC does on every pass: unless their container is
// still there and has not exited, its log being rotated at that moment.
// A container the runtime does not know (removed, or a name too cut to
// find it) loses its link. Failures are logged, as upstream's.
func (p containerPass) removeDanglingLogLinks(ctx context.Context) {
	if p.ContainerLogsDir == "" {
		return
	}
	links, _ := filepath.Glob(filepath.Join(p.ContainerLogsDir, "*.log"))
	for _, link := range links {
		if _, err := os.Stat(link); !os.IsNotExist(err) {
			continue
		}
		if id, err := podruntime.ContainerIDFromLogSymlink(link); err == nil {
			c, cancel := context.WithTimeout(ctx, callTimeout)
			st, err := p.Runtime.ContainerStatus(c, &runtimeapi.ContainerStatusRequest{ContainerId: id})
			cancel()
			if err == nil && st.GetStatus() == nil {
				continue
			}
			if err == nil && st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
				continue
			}
		}
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			p.Log.Error().Err(err).Str("path", link).Msg("failed to remove a dead container log symbolic link")
			continue
		}
		p.Log.Debug().Str("path", link).Msg("removed dead container log symbolic link")
	}
}

// podUIDFromLogDir is the UID in a pod log directory's name,
// NAMESPACE_NAME_UID (upstream's parsePodUIDFromLogsDirectory).
func podUIDFromLogDir(name string) types.UID {
	parts := strings.Split(name, "_")
	return types.UID(parts[len(parts)-1])
}

// removeLogDirs removes the directories under root of pods that known does
// not hold and that have nothing left in the runtime, unless changed since
// known.At (a pod added since the pod-manager was asked).
func removeLogDirs(root string, known knownPods, left map[types.UID]bool) (int, []error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, []error{failure{fmt.Errorf("read pod log directories %s: %w", root, err)}}
	}
	var errs []error
	n := 0
	for _, e := range entries {
		if !e.IsDir() || strings.Count(e.Name(), "_") < 2 {
			continue
		}
		uid := podUIDFromLogDir(e.Name())
		if uid == "" || known.has(uid) || left[uid] {
			continue
		}
		if fi, err := e.Info(); err != nil || !fi.ModTime().Before(known.At) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove pod log directory: %w", err))
			continue
		}
		n++
	}
	return n, errs
}
