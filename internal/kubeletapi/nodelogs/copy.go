package nodelogs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"time"
)

// Timeout bounds a service query, journalctl's runs and the files' copies
// together, as upstream.
const Timeout = 30 * time.Second

// Source runs service queries on one node.
type Source struct {
	// Dir is the log directory, upstream's /var/log.
	Dir string
	// Journalctl is the command run; empty means journalctl from PATH.
	Journalctl string
}

// Stat is Validate's stat for a file query: the path is looked up under
// the directory through an os.Root, so that neither ".." nor a symbolic
// link leads out of it, as upstream. Its errors are os.Root's, which
// upstream's answers quote.
func (s Source) Stat(name string) error {
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = root.Stat(name)
	return err
}

// Copy writes the logs of q's services to w, as upstream: the journal of
// those the journal knows, then, only when q has no options, the log file
// of each of the others under the directory. What goes wrong is written
// to w as a line of its own: the status line has gone out already.
func (s Source) Copy(ctx context.Context, w io.Writer, q *Query) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if ctx.Err() != nil {
		return
	}
	var journal, files []string
	units, listed := s.units(ctx)
	for _, svc := range q.Services {
		if listed && InJournal(units, svc) {
			journal = append(journal, svc)
		} else {
			files = append(files, svc)
		}
	}
	if len(journal) > 0 {
		s.copyJournal(ctx, w, q, journal)
	}
	if len(files) == 0 {
		return
	}
	if q.set() {
		fmt.Fprintf(w, "\noptions present and query resolved to log files for %v\ntry without specifying options\n", files)
		return
	}
	if ctx.Err() != nil {
		fmt.Fprintf(w, "\ncontext error: %v\n", ctx.Err())
		return
	}
	for _, svc := range files {
		s.copyFile(ctx, w, svc)
	}
}

func (s Source) command() string {
	if s.Journalctl == "" {
		return "journalctl"
	}
	return s.Journalctl
}

// units lists the journal's units; false when journalctl fails, the
// services then being looked for as files.
func (s Source) units(ctx context.Context) (string, bool) {
	out, err := exec.CommandContext(ctx, s.command(), UnitsArgs...).CombinedOutput()
	return string(out), err == nil
}

// copyJournal streams journalctl's output, its errors included. A
// journalctl that ran and failed has said why; one that did not run gets
// upstream's line, but for an earlier boot.
func (s Source) copyJournal(ctx context.Context, w io.Writer, q *Query, services []string) {
	cmd := exec.CommandContext(ctx, s.command(), JournalArgs(q, services)...)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) {
		return
	}
	if q.Boot == nil || *q.Boot == 0 {
		fmt.Fprintf(w, "\nerror: journal output not available\n")
	}
}

// copyFile copies the first of the service's FileCandidates that is a
// file, opened through an os.Root of the directory.
func (s Source) copyFile(ctx context.Context, w io.Writer, service string) {
	var err error
	for _, name := range FileCandidates(service) {
		if err = s.copyOne(ctx, w, name); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "\nlog not found for %s\n", service)
	case err != nil:
		fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
	}
}

func (s Source) copyOne(ctx context.Context, w io.Writer, name string) error {
	f, err := os.OpenInRoot(s.Dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.IsDir() {
		// /var/log/foo is a directory: foo's log may be foo/foo.log.
		return fs.ErrNotExist
	}
	_, err = io.Copy(w, ctxReader{ctx, f})
	return err
}

// ctxReader stops a copy when the request or the timeout ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
