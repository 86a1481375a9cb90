package certificates

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// FileRefreshPeriod is how often FileServing reads its files again whatever
// the watch says: upstream's dynamiccertificates.FileRefreshDuration. A
// change the watch sees (a write, a rename over the file) is loaded at once.
const FileRefreshPeriod = time.Minute

// FileServing keeps the kubelet API's serving certificate read from a
// certificate file and a key file (tlsCertFile/tlsPrivateKeyFile, or the
// self-signed kubelet.crt/kubelet.key), reloaded when they change on disk:
// upstream's ReloadKubeletServerCertificateFile, on by default. A pair
// that does not load (half written, key not matching) is not served: the
// last good one stays until the files are whole again.
type FileServing struct {
	certFile, keyFile string
	log               zerolog.Logger
	// period is FileRefreshPeriod, shorter in tests.
	period time.Duration

	current atomic.Pointer[tls.Certificate]
	// The loaded files' bytes and the last failure, to log each change and
	// each new failure once. Touched by the watching goroutine only.
	certPEM, keyPEM []byte
	lastErr         string

	startOnce, stopOnce sync.Once
	stop, done          chan struct{}
}

// NewFileServing loads the pair once; an error names the files. Start
// begins watching them.
func NewFileServing(certFile, keyFile string, log zerolog.Logger) (*FileServing, error) {
	f := &FileServing{certFile: filepath.Clean(certFile), keyFile: filepath.Clean(keyFile), log: log,
		period: FileRefreshPeriod, stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := f.reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// GetCertificate is the kubelet API's tls.Config.GetCertificate: each
// handshake gets the pair last loaded.
func (f *FileServing) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return currentOrError(f.current.Load())
}

// Start watches the files' directories (a rename over a file, as an
// atomic replacement does, changes the directory, not the old file) and
// reads the files again on every change there and every period. Only the
// first call counts.
func (f *FileServing) Start() {
	f.startOnce.Do(func() { go f.run() })
}

// Stop ends the watch and waits for it to end; a FileServing never
// started stops at once.
func (f *FileServing) Stop() {
	f.stopOnce.Do(func() {
		close(f.stop)
		started := true
		f.startOnce.Do(func() { started = false })
		if started {
			<-f.done
		}
	})
}

func (f *FileServing) run() {
	defer close(f.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err != nil {
		f.log.Warn().Err(err).Dur("period", f.period).Msg("cannot watch the serving certificate's files: they are read again every period")
	} else {
		defer w.Close()
		for _, dir := range uniqueDirs(f.certFile, f.keyFile) {
			if err := w.Add(dir); err != nil {
				f.log.Warn().Err(err).Str("dir", dir).Dur("period", f.period).Msg("cannot watch the serving certificate's directory: its files are read again every period")
			}
		}
		events, errs = w.Events, w.Errors
	}
	tick := time.NewTicker(f.period)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-events:
		case err := <-errs:
			f.log.Debug().Err(err).Msg("watching the serving certificate's files")
			continue
		case <-tick.C:
		}
		f.reloadAndLog()
	}
}

// reloadAndLog reloads the pair, logging a new certificate and each new
// failure once.
func (f *FileServing) reloadAndLog() {
	changed, err := f.reload()
	switch {
	case err != nil:
		if err.Error() != f.lastErr {
			f.lastErr = err.Error()
			f.log.Warn().Err(err).Msg("the serving certificate's files do not load: the last good certificate is still served")
		}
	case changed:
		f.lastErr = ""
		ev := f.log.Info().Str("certFile", f.certFile).Str("keyFile", f.keyFile)
		if leaf := f.current.Load().Leaf; leaf != nil {
			ev = ev.Str("subject", leaf.Subject.String()).Time("notAfter", leaf.NotAfter)
		}
		ev.Msg("serving certificate reloaded from its files")
	default:
		f.lastErr = ""
	}
}

// reload reads both files and serves their pair when it loads and differs
// from the one served; it says whether it changed.
func (f *FileServing) reload() (bool, error) {
	certPEM, err := os.ReadFile(f.certFile)
	if err != nil {
		return false, fmt.Errorf("serving certificate %s: %w", f.certFile, err)
	}
	keyPEM, err := os.ReadFile(f.keyFile)
	if err != nil {
		return false, fmt.Errorf("serving certificate key %s: %w", f.keyFile, err)
	}
	if bytes.Equal(certPEM, f.certPEM) && bytes.Equal(keyPEM, f.keyPEM) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("serving certificate %s with key %s: %w", f.certFile, f.keyFile, err)
	}
	f.certPEM, f.keyPEM = certPEM, keyPEM
	f.current.Store(&cert)
	return true, nil
}

func uniqueDirs(paths ...string) []string {
	var out []string
	for _, p := range paths {
		d := filepath.Dir(p)
		if len(out) == 0 || out[len(out)-1] != d {
			out = append(out, d)
		}
	}
	return out
}
