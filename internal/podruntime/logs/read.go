package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
)

// checkPeriod is how long a followed log may stay quiet before Read asks
// whether the container still runs (upstream's logForceCheckPeriod).
const checkPeriod = time.Second

// readBuffer is the size of the forward reads.
const readBuffer = 64 << 10

// Read writes the container log at path to stdout and stderr as opts asks;
// the two may be the same writer (they are for the HTTP response, as
// upstream), and a nil one drops its stream. When a writer is an
// http.Flusher it is flushed each time Read has caught up with the log.
//
// With opts.Follow, Read keeps reading as the log grows and across its
// rotations (the runtime renaming it to path.<timestamp> and reopening
// path), until ctx ends (it returns ctx.Err()) or until running, asked at
// the first end of the log and then after each second without new lines,
// says the container stopped and the log is drained (it returns nil).
// running must then be non-nil; like upstream, it should report a runtime
// that is briefly unavailable as running.
//
// Lines that are in neither format are skipped, as upstream, and counted in
// one warning on the logger of ctx (zerolog.Ctx).
func Read(ctx context.Context, path string, opts Options, stdout, stderr io.Writer, running func(context.Context) (bool, error)) error {
	return read(ctx, path, opts, stdout, stderr, running, checkPeriod)
}

func read(ctx context.Context, path string, opts Options, stdout, stderr io.Writer, running func(context.Context) (bool, error), period time.Duration) error {
	switch opts.Stream {
	case v1.LogStreamStdout:
		stderr = nil
	case v1.LogStreamStderr:
		stdout = nil
	}
	// The path the runtime gives may be a symbolic link; its target is the
	// file that is rotated, in the directory that is watched.
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolve container log %s: %w", path, err)
	}
	var watcher *fsnotify.Watcher
	if opts.Follow {
		// Watched before the file is read, so no write is missed between.
		if watcher, err = fsnotify.NewWatcher(); err != nil {
			return fmt.Errorf("watch container log %s: %w", resolved, err)
		}
		defer watcher.Close()
		if err := watcher.Add(filepath.Dir(resolved)); err != nil {
			return fmt.Errorf("watch container log directory %s: %w", filepath.Dir(resolved), err)
		}
	}
	r := &reader{path: resolved, out: newOutput(stdout, stderr, opts), lines: -1}
	if err := r.open(); err != nil {
		return err
	}
	defer func() { r.f.Close() }()
	defer r.out.flush()
	defer r.reportMalformed(zerolog.Ctx(ctx))

	if opts.TailLines != nil {
		start, err := tailStart(r.f, r.info.Size(), *opts.TailLines)
		if err != nil {
			return fmt.Errorf("tail %d lines of %s: %w", *opts.TailLines, resolved, err)
		}
		if _, err := r.f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("seek to %d in %s: %w", start, resolved, err)
		}
		if !opts.Follow {
			// Lines appended meanwhile are not part of the tail.
			r.lines = *opts.TailLines
			if r.lines == 0 {
				return nil
			}
		}
	}
	if !opts.Follow {
		if _, done, err := r.drain(); done || err != nil {
			return err
		}
		_, err := r.endPending()
		return err
	}
	return r.follow(ctx, watcher, running, period)
}

// reader reads one container log forward, from one file and then from the
// files that replace it.
type reader struct {
	path string
	f    *os.File
	info os.FileInfo // of f, to tell when path names another file
	br   *bufio.Reader
	// pending is a physical line read up to the end of the file but not its
	// newline yet: the runtime is writing it.
	pending []byte
	out     *output
	// lines is how many more lines to write; negative: no limit.
	lines     int64
	malformed int
	firstBad  error
}

func (r *reader) open() error {
	f, err := os.Open(r.path)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat container log: %w", err)
	}
	r.f, r.info = f, info
	if r.br == nil {
		r.br = bufio.NewReaderSize(f, readBuffer)
	} else {
		r.br.Reset(f)
	}
	return nil
}

// drain handles the complete lines up to the end of the file. It reports
// whether it read anything, and done when no more output is wanted.
func (r *reader) drain() (read, done bool, err error) {
	for {
		s, err := r.br.ReadSlice('\n')
		read = read || len(s) > 0
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.pending = append(r.pending, s...)
			continue
		case errors.Is(err, io.EOF):
			r.pending = append(r.pending, s...)
			return read, false, nil
		case err != nil:
			return read, false, fmt.Errorf("read %s: %w", r.path, err)
		}
		line := s
		if len(r.pending) > 0 {
			r.pending = append(r.pending, s...)
			line = r.pending
		}
		done, err := r.handle(line)
		r.pending = r.pending[:0]
		if done || err != nil {
			return read, done, err
		}
	}
}

// endPending handles an incomplete last line when nothing will complete it
// any more (the read does not follow, the file was replaced, the container
// stopped), as upstream does.
func (r *reader) endPending() (done bool, err error) {
	if len(r.pending) == 0 {
		return false, nil
	}
	done, err = r.handle(r.pending)
	r.pending = r.pending[:0]
	return done, err
}

func (r *reader) handle(line []byte) (done bool, err error) {
	e, err := parseLine(line)
	if err != nil {
		if r.malformed == 0 {
			r.firstBad = fmt.Errorf("%w: %q", err, line)
		}
		r.malformed++
		return false, nil
	}
	if done, err = r.out.write(e); done || err != nil {
		return done, err
	}
	if r.lines > 0 && e.last {
		r.lines--
		return r.lines == 0, nil
	}
	return false, nil
}

func (r *reader) reportMalformed(log *zerolog.Logger) {
	if r.malformed > 0 {
		log.Warn().Str("path", r.path).Int("lines", r.malformed).AnErr("first", r.firstBad).
			Msg("skipped container log lines in neither the CRI nor the docker JSON format")
	}
}
