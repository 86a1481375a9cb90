// Package fakelogind is a stand-in for systemd-logind (and the part of
// systemd's manager that reloads it) on a private dbus-daemon, for tests:
// it exports org.freedesktop.login1's InhibitDelayMaxUSec, Inhibit and
// PrepareForShutdown, and org.freedesktop.systemd1's KillUnit, which makes
// it read the logind drop-in of its ConfDir as logind reads its
// configuration on SIGHUP. Upstream's unit tests fake the bus the same way.
package fakelogind

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/actorlet/actorlet/internal/logind"
)

// Logind is the stand-in, with the bus it is on.
type Logind struct {
	// Address is the private bus's address: what DBUS_SYSTEM_BUS_ADDRESS
	// must say for a client to find the stand-in.
	Address string
	// ConfDir is the directory whose logind drop-in a reload reads.
	ConfDir string

	bus    *dbus.Conn
	mu     sync.Mutex
	delay  time.Duration
	locks  []*lock
	reload int
}

// lock is one inhibitor lock handed out: logind keeps the read end of a
// pipe whose write end the client holds; the client released the lock once
// every copy of the write end is closed.
type lock struct {
	who, why, what, mode string
	r, w                 *os.File
	at                   time.Time
}

// Lock describes an inhibitor lock taken.
type Lock struct {
	Who, Why, What, Mode string
	Released             bool
}

// Start runs a dbus-daemon of its own (stopped at the test's end) and
// exports the stand-in on it with InhibitDelayMaxUSec delay.
func Start(t testing.TB, delay time.Duration) *Logind {
	t.Helper()
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon's address: %v", err)
	}
	l := &Logind{Address: strings.TrimSpace(addr), ConfDir: t.TempDir(), delay: delay}
	if l.bus, err = dbus.Connect(l.Address); err != nil {
		t.Fatalf("connecting to the private bus: %v", err)
	}
	t.Cleanup(func() {
		_ = l.bus.Close()
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, k := range l.locks {
			_ = k.r.Close()
			_ = k.w.Close()
		}
	})
	if err := l.bus.Export(manager{l}, logind.Path, logind.Interface); err != nil {
		t.Fatal(err)
	}
	if err := l.bus.Export(properties{l}, logind.Path, "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	if err := l.bus.Export(systemd{l}, logind.SystemdPath, logind.SystemdInterface); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{logind.Service, logind.SystemdService} {
		if reply, err := l.bus.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("taking the name %s: %v (%v)", name, reply, err)
		}
	}
	return l
}

// PrepareForShutdown emits the signal, as logind at the start of a
// shutdown (true) or when it was cancelled (false).
func (l *Logind) PrepareForShutdown(active bool) error {
	return l.bus.Emit(logind.Path, logind.Interface+".PrepareForShutdown", active)
}

// InhibitDelay is InhibitDelayMaxUSec now.
func (l *Logind) InhibitDelay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay
}

// Reloads counts the reloads asked of systemd.
func (l *Logind) Reloads() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reload
}

// Locks are the inhibitor locks taken, in order, each released or not.
func (l *Logind) Locks() []Lock {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Lock, len(l.locks))
	for i, k := range l.locks {
		out[i] = Lock{Who: k.who, Why: k.why, What: k.what, Mode: k.mode, Released: k.released()}
	}
	return out
}

// handedOver is how long after Inhibit returned the stand-in drops its own
// copy of the write end: godbus writes the reply, with the descriptor,
// after the method returns, and offers no hook to tell when.
const handedOver = 500 * time.Millisecond

// released tells whether the client closed its end: the read end then
// meets end of file.
func (k *lock) released() bool {
	if wait := handedOver - time.Since(k.at); wait > 0 {
		time.Sleep(wait)
	}
	_ = k.w.Close()
	if err := k.r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		return false
	}
	var b [1]byte
	_, err := k.r.Read(b[:])
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

type manager struct{ l *Logind }

// Inhibit is logind's: the lock is the write end of a pipe.
func (m manager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	m.l.locks = append(m.l.locks, &lock{who: who, why: why, what: what, mode: mode, r: r, w: w, at: time.Now()})
	return dbus.UnixFD(w.Fd()), nil
}

type properties struct{ l *Logind }

// Get is org.freedesktop.DBus.Properties.Get for the one property read.
func (p properties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	if iface != logind.Interface || name != "InhibitDelayMaxUSec" {
		return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{iface + "." + name})
	}
	return dbus.MakeVariant(uint64(p.l.InhibitDelay() / time.Microsecond)), nil
}

type systemd struct{ l *Logind }

// KillUnit with SIGHUP to systemd-logind.service reloads the stand-in's
// configuration: InhibitDelayMaxSec of the drop-in, when there is one.
func (s systemd) KillUnit(unit, who string, signal int32) *dbus.Error {
	if unit != "systemd-logind.service" || syscall.Signal(signal) != syscall.SIGHUP {
		return dbus.MakeFailedError(fmt.Errorf("unexpected KillUnit(%s, %s, %d)", unit, who, signal))
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.reload++
	b, err := os.ReadFile(filepath.Join(s.l.ConfDir, logind.DropIn))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return dbus.MakeFailedError(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "InhibitDelayMaxSec="); ok {
			sec, err := strconv.Atoi(v)
			if err != nil {
				return dbus.MakeFailedError(err)
			}
			s.l.delay = time.Duration(sec) * time.Second
		}
	}
	return nil
}
