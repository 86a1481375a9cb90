package logs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// follow reads the log as it grows until ctx ends or the container stops.
// Between reads it waits for inotify events on the log's directory: a quiet
// log costs one check whether the container runs per period.
func (r *reader) follow(ctx context.Context, watcher *fsnotify.Watcher, running func(context.Context) (bool, error), period time.Duration) error {
	quiet := time.NewTimer(period)
	defer quiet.Stop()
	checked := false
	for {
		read, done, err := r.drain()
		if done || err != nil {
			return err
		}
		if read {
			quiet.Reset(period)
		}
		r.out.flush()
		replaced, done, err := r.replaced(false)
		if done || err != nil {
			return err
		}
		if replaced {
			continue
		}
		if !checked {
			// A container that already stopped: no need to wait for its
			// log to go quiet.
			checked = true
			if stop, err := r.stopped(ctx, running); stop || err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-watcher.Events:
		case err := <-watcher.Errors:
			// An overflow or a lost watch: reading again finds what the
			// lost events told of.
			zerolog.Ctx(ctx).Debug().Err(err).Str("path", r.path).Msg("container log watch")
		case <-quiet.C:
			if stop, err := r.stopped(ctx, running); stop || err != nil {
				return err
			}
			quiet.Reset(period)
		}
	}
}

// stopped asks running and, when the container stopped, reads what is
// left of the log: stop is then true.
func (r *reader) stopped(ctx context.Context, running func(context.Context) (bool, error)) (stop bool, err error) {
	ok, err := running(ctx)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return true, ctxErr
	}
	if err != nil {
		return true, fmt.Errorf("check whether the container of %s runs: %w", r.path, err)
	}
	if ok {
		return false, nil
	}
	for {
		if _, done, err := r.drain(); done || err != nil {
			return true, err
		}
		replaced, done, err := r.replaced(true)
		if done || err != nil {
			return true, err
		}
		if !replaced {
			break
		}
	}
	_, err = r.endPending()
	return true, err
}

// replaced moves to the file path names now when the runtime rotated the
// log, after the last lines of the old file. Until the new file has data the
// runtime may still be writing to the old one (it switches files after
// creating the new one), so the move waits for it, unless final (the
// container stopped).
func (r *reader) replaced(final bool) (replaced, done bool, err error) {
	info, err := os.Stat(r.path)
	if err != nil || os.SameFile(info, r.info) || (info.Size() == 0 && !final) {
		// Gone (the container was removed) or not replaced: keep reading
		// the file held open.
		return false, false, nil
	}
	if _, done, err := r.drain(); done || err != nil {
		return false, done, err
	}
	if done, err := r.endPending(); done || err != nil {
		return false, done, err
	}
	old := r.f
	if err := r.open(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, false, nil // rotated again meanwhile: found next time
		}
		return false, false, err
	}
	old.Close()
	return true, false, nil
}
