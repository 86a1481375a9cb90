package configsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// Debouncing of inotify events: a scan follows once events stop for
// settleDelay, or maxDelay after the first, so that a burst of files written
// at once (a tool laying out all the manifests) gives one update, and a file
// written in several pieces is read once it is whole.
const (
	settleDelay = 100 * time.Millisecond
	maxDelay    = time.Second
)

// fileSource reads the static pod path. It is used by one goroutine only.
type fileSource struct {
	path   string
	node   string
	period time.Duration
	send   func(*messages.SourceScanned)
	log    zerolog.Logger
	// usernsHostNetwork is Params.UserNamespacesHostNetwork.
	usernsHostNetwork bool
	// target is the directory watched (see watch).
	target string
	// cache keeps, per file, the result for its content, so that an
	// unchanged file keeps its pod (and seen time) and is not re-parsed.
	cache map[string]parsed
	// declaredBy is, per pod full name (namespace/name), the file whose pod
	// was kept at the last scan: a file declaring a pod already declared
	// by another is left out (see dedupe).
	declaredBy map[string]string
}

type parsed struct {
	version string
	pod     *v1.Pod
	err     error
}

func newFileSource(path, node string, period time.Duration, send func(*messages.SourceScanned), log zerolog.Logger) *fileSource {
	return &fileSource{
		path:   strings.TrimRight(path, string(os.PathSeparator)),
		node:   node,
		period: period,
		send:   send,
		log:    log,
		cache:  map[string]parsed{},
	}
}

// manifestPod is one manifest decoded by a scan.
type manifestPod struct {
	path    string
	version string
	pod     *v1.Pod
}

// duplicate is a manifest left out for declaring the same pod (namespace
// and name) as the manifest kept, first.
type duplicate struct {
	manifestPod
	first string
}

// dedupe keeps one manifest per pod full name (namespace/name), as
// upstream's pod config keeps one pod per name and source. Upstream keeps
// the first in the directory's order; here the manifest kept at the last
// scan (declaredBy) stays kept while it declares the pod, so that a file
// added later never replaces a running pod, and otherwise the first in
// order is. It returns the manifests kept, in order, those left out, and
// the new declaredBy.
func dedupe(pods []manifestPod, declaredBy map[string]string) (kept []manifestPod, dups []duplicate, next map[string]string) {
	candidates := map[string][]string{}
	for _, m := range pods {
		name := m.pod.Namespace + "/" + m.pod.Name
		candidates[name] = append(candidates[name], m.path)
	}
	next = make(map[string]string, len(candidates))
	for name, paths := range candidates {
		next[name] = paths[0]
		if prev, ok := declaredBy[name]; ok && slices.Contains(paths, prev) {
			next[name] = prev
		}
	}
	for _, m := range pods {
		first := next[m.pod.Namespace+"/"+m.pod.Name]
		if first == m.path {
			kept = append(kept, m)
		} else {
			dups = append(dups, duplicate{manifestPod: m, first: first})
		}
	}
	return kept, dups, next
}

// Error of a duplicate, for the log: it names both files.
func (d duplicate) Error() string {
	return fmt.Sprintf("duplicate pod name %q in namespace %q: %s declares it already; this manifest is ignored",
		d.pod.Name, d.pod.Namespace, d.first)
}

// run scans at once, then every period and after inotify events, until ctx
// is cancelled.
func (s *fileSource) run(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		// Periodic rescans still find every change, only later.
		s.log.Warn().Err(err).Str("path", s.path).Msg("cannot watch the static pod path; rescanning periodically only")
	} else {
		defer w.Close()
	}
	watching := s.watch(w)
	s.send(s.scan())

	ticker := time.NewTicker(s.period)
	defer ticker.Stop()
	// Stopped until the first event; Reset arms it (no stale tick since Go 1.23).
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	defer settle.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	var first time.Time // of the events not yet scanned; zero when none
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if !watching {
				watching = s.watch(w)
			}
			first = time.Time{}
			s.send(s.scan())
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Name == s.target && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				// The watched directory went away, and its watch with it.
				watching = false
			}
			if !s.relevant(ev.Name) {
				continue
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			settle.Reset(min(settleDelay, first.Add(maxDelay).Sub(now)))
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			s.log.Warn().Err(err).Str("path", s.path).Msg("watching the static pod path")
		case <-settle.C:
			first = time.Time{}
			s.send(s.scan())
		}
	}
}

// watch adds the inotify watch: on the path itself, or on the directory of
// a single manifest file, so that an editor's replace-by-rename of the file
// is seen too. A missing directory is retried on the next periodic scan, as
// upstream waits for the path to appear.
func (s *fileSource) watch(w *fsnotify.Watcher) bool {
	if w == nil {
		return false
	}
	s.target = s.path
	if info, err := os.Stat(s.path); err == nil && !info.IsDir() {
		s.target = filepath.Dir(s.path)
	}
	return w.Add(s.target) == nil
}

// relevant tells whether an event's file can change the set of pods.
func (s *fileSource) relevant(name string) bool {
	if name == s.path {
		return true
	}
	if filepath.Dir(name) != s.path {
		// An event beside a single manifest file.
		return false
	}
	return isManifestName(filepath.Base(name))
}

// isManifestName tells the names read in a manifest directory: every name
// that does not start with a dot, whatever its extension, as upstream's
// file source reads them (pkg/kubelet/config/file.go globs "[^.]*"). Dot-files
// are editors' swap files and atomic-rename temporaries.
func isManifestName(base string) bool {
	return !strings.HasPrefix(base, ".")
}

// scan reads the whole path: every manifest is read again (they are small),
// but parsed only when its content changed.
func (s *fileSource) scan() *messages.SourceScanned {
	out := &messages.SourceScanned{Source: messages.SourceFile, Pods: []*v1.Pod{}}
	info, err := os.Stat(s.path)
	if err != nil {
		s.cache = map[string]parsed{}
		reason := err.Error()
		if errors.Is(err, os.ErrNotExist) {
			reason = "does not exist (yet): no static pods from it until it does"
		}
		out.Invalid = append(out.Invalid, messages.ManifestError{Location: s.path, Reason: reason})
		return out
	}
	files := []string{s.path}
	if info.IsDir() {
		entries, err := os.ReadDir(s.path)
		if err != nil {
			out.Invalid = append(out.Invalid, messages.ManifestError{Location: s.path, Reason: err.Error()})
			return out
		}
		files = files[:0]
		for _, e := range entries { // sorted by name
			if isManifestName(e.Name()) {
				files = append(files, filepath.Join(s.path, e.Name()))
			}
		}
	}
	seen := map[string]parsed{}
	var decoded []manifestPod
	for _, f := range files {
		r := s.read(f)
		if info.IsDir() && errors.Is(r.err, os.ErrNotExist) {
			// Removed since the directory was listed, as upstream skips it.
			continue
		}
		seen[f] = r
		if r.err != nil {
			out.Invalid = append(out.Invalid, messages.ManifestError{Location: f, Reason: r.err.Error(), Version: r.version})
			continue
		}
		decoded = append(decoded, manifestPod{path: f, version: r.version, pod: r.pod})
	}
	s.cache = seen
	kept, dups, declaredBy := dedupe(decoded, s.declaredBy)
	s.declaredBy = declaredBy
	for _, m := range kept {
		// The cache keeps its pod: the message gets a copy it may own.
		out.Pods = append(out.Pods, m.pod.DeepCopy())
	}
	for _, d := range dups {
		// Logged (and its event recorded) again when either file changes.
		out.Invalid = append(out.Invalid, messages.ManifestError{Location: d.path, Reason: d.Error(),
			Version: d.version + "/" + d.first, Pod: d.pod.DeepCopy(), DuplicateOf: d.first})
	}
	return out
}

// read parses one manifest file, reusing the last result when its content
// is unchanged.
func (s *fileSource) read(path string) parsed {
	info, err := os.Stat(path)
	if err != nil {
		return parsed{err: err}
	}
	if info.IsDir() {
		return parsed{err: fmt.Errorf("is a directory: manifests in subdirectories are not read")}
	}
	if !info.Mode().IsRegular() {
		// A FIFO or device would block or never end; upstream skips them too.
		return parsed{err: fmt.Errorf("is not a regular file (mode %s)", info.Mode())}
	}
	data, err := readAtMost(path, manifest.MaxSize)
	if err != nil {
		return parsed{err: err}
	}
	version := manifest.Version(data)
	if c, ok := s.cache[path]; ok && c.version == version {
		return c
	}
	pod, err := manifest.FromFile(data, manifest.Origin{Source: manifest.SourceFile, Location: path, NodeName: s.node, UserNamespacesHostNetwork: s.usernsHostNetwork}, time.Now())
	return parsed{version: version, pod: pod, err: err}
}

// readAtMost reads a file of at most limit bytes; a larger one is an error
// rather than a truncated manifest.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than the %d bytes allowed", path, limit)
	}
	return data, nil
}
