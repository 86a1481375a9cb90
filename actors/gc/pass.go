package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/podruntime"
)

// rotatedTimestamp is upstream's suffix of a rotated log: <path>.<timestamp>.
const rotatedTimestamp = "20060102-150405"

// containerPass is one container GC pass: what it needs, copied by value
// into the goroutine that runs it.
type containerPass struct {
	Runtime    runtimeapi.RuntimeServiceClient
	Policy     containerPolicy
	PodLogsDir string // "" : no log directory cleanup
	// LogMaxSize (bytes) and LogMaxFiles: rotation of running containers'
	// logs; LogMaxSize <= 0 or LogMaxFiles < 2 turns it off.
	LogMaxSize  int64
	LogMaxFiles int
	// Selector, when set, restricts the pass to the containers and
	// sandboxes with these labels (tests: one pod on a shared runtime).
	Selector map[string]string
	Log      zerolog.Logger
}

// Run lists the runtime, removes what selectContainers chooses, rotates
// logs and removes pod log directories. known is the pod-manager's pods,
// asked for at knownAt. It carries on past failures and reports them.
func (p containerPass) Run(ctx context.Context, known map[types.UID]bool, knownAt time.Time) *messages.ContainerGCDone {
	start := time.Now()
	done := &messages.ContainerGCDone{Started: start}
	defer func() { done.Duration = time.Since(start) }()
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, callTimeout) }
	if p.Runtime == nil {
		done.Errs = append(done.Errs, errNoRuntime)
		return done
	}

	c, cancel := call()
	cl, err := p.Runtime.ListContainers(c, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: p.Selector}})
	cancel()
	if err != nil {
		done.Errs = append(done.Errs, fmt.Errorf("list containers: %w", err))
		return done
	}
	c, cancel = call()
	sl, err := p.Runtime.ListPodSandbox(c, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: p.Selector}})
	cancel()
	if err != nil {
		done.Errs = append(done.Errs, fmt.Errorf("list pod sandboxes: %w", err))
		return done
	}
	containers, sandboxes := cl.Containers, sl.Items
	rmContainers, rmSandboxes := selectContainers(containers, sandboxes, known, knownAt, start, p.Policy)

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

	// Log rotation of running containers.
	if p.LogMaxSize > 0 && p.LogMaxFiles >= 2 {
		for _, ct := range containers {
			if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING || ct.GetLabels()[podruntime.LabelPodUID] == "" {
				continue
			}
			rotated, removed, err := p.rotate(ctx, ct.Id, time.Now())
			done.RotatedLogsRemoved += removed
			if err != nil {
				done.Errs = append(done.Errs, err)
			}
			if rotated {
				done.LogsRotated++
			}
		}
	}

	// Pod log directories of pods with nothing left.
	if p.PodLogsDir != "" {
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
		n, errs := removeLogDirs(p.PodLogsDir, known, left, knownAt)
		done.LogDirsRemoved += n
		done.Errs = append(done.Errs, errs...)
	}
	return done
}

// removeContainer removes a container and then its log files, as upstream's
// removeContainer (the runtime keeps the log).
func (p containerPass) removeContainer(ctx context.Context, id string) error {
	c, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var logPath string
	if st, err := p.Runtime.ContainerStatus(c, &runtimeapi.ContainerStatusRequest{ContainerId: id}); err == nil {
		logPath = st.GetStatus().GetLogPath()
	}
	if _, err := p.Runtime.RemoveContainer(c, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	p.Log.Debug().Str("container", id).Msg("removed dead container")
	if logPath != "" {
		_ = os.Remove(logPath)
		for _, r := range rotatedLogs(logPath) {
			_ = os.Remove(r)
		}
	}
	return nil
}

// rotatedLogs are path's rotated files, oldest first (the timestamp sorts).
func rotatedLogs(path string) []string {
	matches, _ := filepath.Glob(globEscape(path) + ".*")
	var out []string
	for _, m := range matches {
		if !strings.HasSuffix(m, ".tmp") {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// rotate rotates the log of a running container when it exceeds LogMaxSize,
// as upstream's containerLogManager.rotateLog without compression: keep at
// most LogMaxFiles-2 rotated files, rename the log to <path>.<timestamp>,
// and have the runtime reopen it (undoing the rename if it cannot).
func (p containerPass) rotate(ctx context.Context, id string, now time.Time) (rotated bool, removed int, err error) {
	c, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := p.Runtime.ContainerStatus(c, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return false, 0, fmt.Errorf("container status %s: %w", id, err)
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		return false, 0, nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < p.LogMaxSize {
		return false, 0, nil
	}
	old := rotatedLogs(path)
	if excess := len(old) - (p.LogMaxFiles - 2); excess > 0 {
		for _, r := range old[:excess] {
			if err := os.Remove(r); err == nil || os.IsNotExist(err) {
				removed++
			}
		}
	}
	target := path + "." + now.Format(rotatedTimestamp)
	if _, err := os.Stat(target); err == nil {
		return false, removed, nil // rotated this second already
	}
	if err := os.Rename(path, target); err != nil {
		return false, removed, fmt.Errorf("rotate log of %s: %w", id, err)
	}
	if _, err := p.Runtime.ReopenContainerLog(c, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		if rerr := os.Rename(target, path); rerr != nil {
			p.Log.Warn().Err(rerr).Str("log", path).Msg("could not undo log rotation")
		}
		return false, removed, fmt.Errorf("reopen log of %s: %w", id, err)
	}
	p.Log.Debug().Str("container", id).Str("rotated", target).Int64("size", fi.Size()).Msg("rotated container log")
	return true, removed, nil
}

// podUIDFromLogDir is the UID in a pod log directory's name,
// NAMESPACE_NAME_UID (upstream's parsePodUIDFromLogsDirectory).
func podUIDFromLogDir(name string) types.UID {
	parts := strings.Split(name, "_")
	return types.UID(parts[len(parts)-1])
}

// removeLogDirs removes the directories under root of pods that known does
// not hold and that have nothing left in the runtime, unless changed since
// knownAt (a pod added since the pod-manager was asked).
func removeLogDirs(root string, known, left map[types.UID]bool, knownAt time.Time) (int, []error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, []error{fmt.Errorf("read %s: %w", root, err)}
	}
	var errs []error
	n := 0
	for _, e := range entries {
		if !e.IsDir() || strings.Count(e.Name(), "_") < 2 {
			continue
		}
		uid := podUIDFromLogDir(e.Name())
		if uid == "" || known[uid] || left[uid] {
			continue
		}
		if fi, err := e.Info(); err != nil || !fi.ModTime().Before(knownAt) {
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
