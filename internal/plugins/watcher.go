package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// Events receive what the watcher sees. They are called from the
// watcher's goroutine, one at a time, in the order seen.
type Events struct {
	// Added is a socket that appeared, or was there at the start.
	Added func(path string)
	// Removed is a path that went: a socket, or anything else (a removal
	// cannot tell what it was, and the receiver knows its sockets).
	Removed func(path string)
}

// Watch creates dir (as upstream's setupDataDirs, mode 0750) and watches
// it and every directory below it, as upstream's pluginwatcher: each Unix
// socket already there and each created later is Added, each path removed
// or renamed away is Removed. Names starting with "." are ignored, as
// upstream's. It returns once the watch is set up and the sockets present
// reported; the watch ends with ctx.
func Watch(ctx context.Context, dir string, ev Events, log zerolog.Logger) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("plugin registration directory: %w", err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("plugin watcher: %w", err)
	}
	w := &watcher{fw: fw, ev: ev, log: log}
	if err := w.addTree(dir); err != nil {
		_ = fw.Close()
		return err
	}
	go w.run(ctx)
	return nil
}

type watcher struct {
	fw  *fsnotify.Watcher
	ev  Events
	log zerolog.Logger
}

func (w *watcher) run(ctx context.Context) {
	defer w.fw.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.fw.Events:
			if !ok {
				return
			}
			switch {
			case e.Has(fsnotify.Create):
				w.created(e.Name)
			case e.Has(fsnotify.Remove), e.Has(fsnotify.Rename):
				w.ev.Removed(e.Name)
			}
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.log.Error().Err(err).Msg("plugin watcher")
		}
	}
}

// created handles a new path: a socket is Added, a directory watched with
// what it holds already.
func (w *watcher) created(path string) {
	if strings.HasPrefix(filepath.Base(path), ".") {
		return
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn().Err(err).Str("path", path).Msg("plugin watcher: stat")
		}
		return
	}
	switch {
	case fi.IsDir():
		if err := w.addTree(path); err != nil {
			w.log.Warn().Err(err).Str("path", path).Msg("plugin watcher")
		}
	case fi.Mode()&fs.ModeSocket != 0:
		w.ev.Added(path)
	default:
		w.log.Debug().Str("path", path).Msg("plugin watcher: not a socket, ignored")
	}
}

// addTree watches dir and the directories below it, and reports the
// sockets there. The watch comes first, so that nothing created meanwhile
// is missed (a socket may then be reported twice, which re-registers it).
func (w *watcher) addTree(dir string) error {
	if err := w.fw.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return fmt.Errorf("walk %s: %w", dir, err)
			}
			w.log.Warn().Err(err).Str("path", path).Msg("plugin watcher: walk")
			return nil
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err := w.fw.Add(path); err != nil {
				return fmt.Errorf("watch %s: %w", path, err)
			}
			return nil
		}
		if d.Type()&fs.ModeSocket != 0 {
			w.ev.Added(path)
		}
		return nil
	})
}
