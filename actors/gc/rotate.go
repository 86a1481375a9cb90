package gc

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/parallel"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// Upstream's names of rotated logs: <path>.<timestamp>, gzip'd as
// <path>.<timestamp>.gz once a newer rotation exists; .tmp while being
// written.
const (
	rotatedTimestamp = "20060102-150405"
	compressedSuffix = ".gz"
	tmpSuffix        = ".tmp"
)

// logRotation is upstream's container log manager (without its per-call
// rate limits): every running container's log that reached MaxSize is
// renamed, the runtime reopens it, and at most MaxFiles files are kept per
// container, all rotated ones but the newest gzip'd. Copied by value into
// the goroutine that runs a pass.
type logRotation struct {
	Runtime runtimeapi.RuntimeServiceClient
	// MaxSize (bytes) <= 0 or MaxFiles < 2 turns rotation off.
	MaxSize  int64
	MaxFiles int
	// Workers rotate that many containers' logs at a time (at least 1).
	Workers int
	Log     zerolog.Logger
}

func (p logRotation) enabled() bool { return p.Runtime != nil && p.MaxSize > 0 && p.MaxFiles >= 2 }

// Run rotates the logs of the running containers that need it.
func (p logRotation) Run(ctx context.Context) *messages.LogsRotated {
	start := time.Now()
	done := &messages.LogsRotated{Started: start}
	defer func() { done.Duration = time.Since(start) }()
	c, cancel := context.WithTimeout(ctx, callTimeout)
	cl, err := p.Runtime.ListContainers(c, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	cancel()
	if err != nil {
		done.Errs = append(done.Errs, failure{fmt.Errorf("list running containers: %w", err)})
		return done
	}
	var (
		mu    sync.Mutex
		parts parallel.Group
		sem   = make(chan struct{}, max(p.Workers, 1))
	)
	for _, ct := range cl.Containers {
		// Only the kubelet's: other clients of the runtime manage their own.
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING || ct.GetLabels()[podruntime.LabelPodUID] == "" {
			continue
		}
		sem <- struct{}{}
		parts.Go(func() {
			defer func() { <-sem }()
			rotated, removed, err := p.rotate(ctx, ct.Id, time.Now())
			mu.Lock()
			defer mu.Unlock()
			done.FilesRemoved += removed
			if err != nil {
				done.Errs = append(done.Errs, err)
			}
			if rotated {
				done.Rotated++
			}
		})
	}
	parts.Wait()
	return done
}

// rotate rotates the log of a running container when it reached MaxSize,
// as upstream's containerLogManager.rotateLog: drop leftovers of an
// interrupted rotation, keep the newest MaxFiles-2 rotated files, gzip them,
// rename the log to <path>.<timestamp> and have the runtime reopen it
// (undoing the rename if it cannot).
func (p logRotation) rotate(ctx context.Context, id string, now time.Time) (rotated bool, removed int, err error) {
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
	if os.IsNotExist(err) {
		// A rotation whose reopen failed after the rename may have lost
		// the log: the runtime recreates it (upstream does the same).
		if _, err := p.Runtime.ReopenContainerLog(c, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
			return false, 0, fmt.Errorf("reopen missing log %s of %s: %w", path, id, err)
		}
		fi, err = os.Stat(path)
	}
	if err != nil {
		return false, 0, fmt.Errorf("log of %s: %w", id, err)
	}
	if fi.Size() < p.MaxSize {
		return false, 0, nil
	}
	old := cleanupUnusedLogs(rotatedLogs(path))
	if excess := len(old) - (p.MaxFiles - 2); excess > 0 {
		for _, r := range old[:excess] {
			if err := os.Remove(r); err == nil || os.IsNotExist(err) {
				removed++
			}
		}
		old = old[excess:]
	}
	for _, r := range old {
		if !strings.HasSuffix(r, compressedSuffix) {
			if err := compress(r); err != nil {
				return false, removed, fmt.Errorf("compress rotated log of %s: %w", id, err)
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

// rotatedLogs are path's rotated files, oldest first (the timestamp sorts;
// a compressed file sorts where its uncompressed name would).
func rotatedLogs(path string) []string {
	matches, _ := filepath.Glob(globEscape(path) + ".*")
	slices.SortFunc(matches, func(a, b string) int {
		return strings.Compare(strings.TrimSuffix(a, compressedSuffix), strings.TrimSuffix(b, compressedSuffix))
	})
	return matches
}

// cleanupUnusedLogs removes what an interrupted rotation left, as
// upstream's: .tmp files, and uncompressed files whose compressed copy
// exists. It returns the rotated files that remain.
func cleanupUnusedLogs(logs []string) []string {
	var out []string
	for _, l := range logs {
		if strings.HasSuffix(l, tmpSuffix) {
			_ = os.Remove(l)
			continue
		}
		if !strings.HasSuffix(l, compressedSuffix) && slices.Contains(logs, l+compressedSuffix) {
			_ = os.Remove(l)
			continue
		}
		out = append(out, l)
	}
	return out
}

// compress gzips path into path.gz, through a .tmp file so that a crash
// never leaves a truncated .gz, and removes path.
func compress(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + compressedSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path+compressedSuffix)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("gzip %s: %w", path, err)
	}
	return os.Remove(path)
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}
