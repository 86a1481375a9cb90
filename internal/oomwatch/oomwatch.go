// Package oomwatch finds the kernel's OOM kills in its log (/dev/kmsg), as
// upstream's OOM watcher does through cadvisor's oomparser: the parser is
// pure, Watch is the reader at the edge.
package oomwatch

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// OOM is one kill of the kernel's OOM killer.
type OOM struct {
	// Process and PID are the process killed.
	Process string
	PID     int
	// Container is the cgroup of the process killed; VictimContainer the
	// cgroup whose limit was met, "/" for the whole system's memory.
	Container, VictimContainer string
}

// System says whether the kill was for the whole system's memory rather
// than a cgroup's limit: upstream's SystemOOM event.
func (o OOM) System() bool { return o.VictimContainer == "/" }

// The kernel's lines of an OOM kill, as cadvisor's oomparser reads them.
var (
	firstLine       = regexp.MustCompile(`invoked oom-killer:`)
	containerLine   = regexp.MustCompile(`oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),oom_memcg=(.*),task_memcg=(.*),task=(.*),pid=(.*),uid=(.*)`)
	legacyContainer = regexp.MustCompile(`Task in (.*) killed as a result of limit of (.*)`)
	killedProcessRe = regexp.MustCompile(`Killed process ([0-9]+) \((.+)\)`)
)

// Parser follows the kernel's messages through one OOM kill at a time.
type Parser struct {
	cur *OOM
}

// Feed takes the next message of the kernel's log and returns the OOM
// kill it completes, if any.
func (p *Parser) Feed(msg string) *OOM {
	if firstLine.MatchString(msg) {
		// A global OOM names no cgroup whose limit was met (the kernel
		// writes global_oom): it stays the root's, as oomparser's.
		p.cur = &OOM{Container: "/", VictimContainer: "/"}
		return nil
	}
	if p.cur == nil {
		return nil
	}
	if m := containerLine.FindStringSubmatch(msg); m != nil {
		pid, err := strconv.Atoi(m[8])
		if err != nil {
			return nil
		}
		o := *p.cur
		o.VictimContainer, o.Container, o.Process, o.PID = m[5], m[6], m[7], pid
		p.cur = nil
		return &o
	}
	if m := legacyContainer.FindStringSubmatch(msg); m != nil {
		p.cur.Container, p.cur.VictimContainer = m[1], m[2]
		return nil
	}
	if m := killedProcessRe.FindStringSubmatch(msg); m != nil {
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			return nil
		}
		o := *p.cur
		o.PID, o.Process = pid, m[2]
		p.cur = nil
		return &o
	}
	return nil
}

// Message is the text of one /dev/kmsg record ("prio,seq,usec,flags;text"
// then continuation lines of key=value, which are dropped).
func Message(record string) (string, bool) {
	_, text, ok := strings.Cut(record, ";")
	if !ok {
		return "", false
	}
	text, _, _ = strings.Cut(text, "\n")
	return text, true
}

// Watch reads the kernel's log at path from its end until ctx is done,
// telling found every OOM kill. It returns an error when path cannot be
// read (not there, not allowed); ctx's end returns nil.
func Watch(ctx context.Context, path string, found func(OOM)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	// Only the kills from now on: those before are of an earlier run.
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return err
	}
	return read(ctx, f, found)
}

// read parses the records read from f until ctx is done, and closes f.
// /dev/kmsg is pollable: closing it ends a read that waits.
func read(ctx context.Context, f *os.File, found func(OOM)) error {
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer func() {
		if stop() {
			f.Close()
		}
	}()
	var p Parser
	buf := make([]byte, 8192)
	for {
		n, err := f.Read(buf)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, syscall.EPIPE):
			// Records were overwritten before they were read: go on
			// with the next.
			continue
		case err != nil:
			return err
		}
		if msg, ok := Message(string(buf[:n])); ok {
			if o := p.Feed(msg); o != nil {
				found(*o)
			}
		}
	}
}
