package devicemanager

import (
	"sync"

	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/internal/deviceplugin/checkpoint"
)

// checkpointWriter writes the checkpoint off the actor's mailbox, in the
// order of the saves, the latest only when saves come faster than writes.
type checkpointWriter struct {
	dir  string
	log  zerolog.Logger
	mu   sync.Mutex
	next *snapshot
	wake chan struct{}
	done chan struct{}
}

type snapshot struct {
	entries    []checkpoint.PodDevicesEntry
	registered map[string][]string
}

func newCheckpointWriter(dir string, log zerolog.Logger) *checkpointWriter {
	w := &checkpointWriter{dir: dir, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *checkpointWriter) save(entries []checkpoint.PodDevicesEntry, registered map[string][]string) {
	w.mu.Lock()
	w.next = &snapshot{entries, registered}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *checkpointWriter) run() {
	for {
		select {
		case <-w.wake:
		case <-w.done:
			w.flush()
			return
		}
		w.flush()
	}
}

func (w *checkpointWriter) flush() {
	w.mu.Lock()
	s := w.next
	w.next = nil
	w.mu.Unlock()
	if s == nil {
		return
	}
	if err := checkpoint.Write(w.dir, s.entries, s.registered); err != nil {
		w.log.Error().Err(err).Msg("failed to write the device manager checkpoint")
	}
}

// close writes what was saved last and stops.
func (w *checkpointWriter) close() { close(w.done) }
